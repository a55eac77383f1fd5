package redlock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// Control e (row 20): the semaphore DESIGN §6 warns against. Each node
// counts the holders of a name and grants while it has fewer than limit;
// a permit is granted when a majority of the nodes did. Under the cuts of
// the counterexample it gives out three permits of two, and the history
// checker must say so.

// naiveCount grants one permit on one node if the node counts fewer than
// limit live holders of the name.
// KEYS[1] the name's holders (a sorted set: token -> expiry, ms);
// ARGV[1] the token, ARGV[2] the TTL in ms, ARGV[3] the limit.
// Returns 1 when granted, 0 when the node counts limit holders.
var naiveCount = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// naiveKey is the per-node count of name.
func naiveKey(name string) string { return "naive:{" + name + "}" }

// onNodes runs f on every node of s's Net at once, each bounded by the
// node timeout, and returns each node's error.
func (s *sim) onNodes(f func(ctx context.Context, nd redis.UniversalClient) error) []error {
	nodes := s.net.Clients()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.e.opts.NodeTimeout)
			defer cancel()
			errs[i] = f(ctx, nd)
		})
	}
	wg.Wait()
	return errs
}

// naiveAcquire takes a permit of the naive semaphore name for ttl and
// records it as a permit of limit (its token, start, end and deadline, no
// fence); a refused one is recorded as failed, and undone on the nodes.
func (s *sim) naiveAcquire(name string, limit int, ttl time.Duration) (string, error) {
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	start := time.Now()
	granted := 0
	var mu sync.Mutex // protects granted
	errs := s.onNodes(func(ctx context.Context, nd redis.UniversalClient) error {
		n, err := naiveCount.Run(ctx, nd, []string{naiveKey(name)}, token, ttl.Milliseconds(), limit).Int()
		if err == nil && n == 1 {
			mu.Lock()
			granted++
			mu.Unlock()
		}
		return err
	})
	end := time.Now()
	validity := ttl - end.Sub(start) - ttl/100 - 2*time.Millisecond
	ev := redlock.Event{Kind: redlock.EventAcquire, Name: name, Token: token, Start: start, End: end,
		Until: start.Add(validity), Limit: limit}
	if quorum := len(errs)/2 + 1; granted < quorum || validity <= 0 {
		s.naiveRelease(name, token)
		ev.Token, ev.Until = "", time.Time{}
		ev.Err = fmt.Errorf("naive permit: %d of %d nodes granted, %d needed: %w", granted, len(errs), quorum, redlock.ErrNotAcquired)
		s.rc.Observe(context.Background(), ev)
		return "", ev.Err
	}
	s.rc.Observe(context.Background(), ev)
	return token, nil
}

// naiveRelease gives the permit token back on every node it reaches, and
// records the release.
func (s *sim) naiveRelease(name, token string) {
	now := time.Now()
	s.onNodes(func(ctx context.Context, nd redis.UniversalClient) error {
		return nd.ZRem(ctx, naiveKey(name), token).Err()
	})
	s.rc.Observe(context.Background(), redlock.Event{Kind: redlock.EventRelease, Name: name, Token: token, Start: now, End: now})
}

// Control e (row 20): the cuts of row 20's first phase, with permits of
// the naive semaphore. Each of c1, c2, c3 reaches a majority on which no
// node counts more than two holders, so all three get a permit of two: the
// checker must report it in Report.Permits.
func controlSemaphoreNaive(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name, limit = "c20", 2
	const ttl = 2 * time.Second
	cs := e.clients(3)
	heal := counterexampleCuts(e, cs)
	tokens := make(map[*sim]string)
	for _, c := range cs {
		token, err := c.naiveAcquire(name, limit, ttl)
		if err != nil {
			t.Errorf("row %q: naive permit of %s = %v; want granted (the cuts leave each client a majority)", row, c.name, err)
			continue
		}
		tokens[c] = token
	}
	time.Sleep(200 * time.Millisecond) // all believed together
	for c, token := range tokens {
		c.naiveRelease(name, token)
	}
	heal()
	rep := e.check()
	caught := len(rep.Permits) > 0
	if !caught {
		t.Errorf("row %q: Permits = %d with %d naive permits of %d held at once; want > 0 (the checker must catch a per-node count):\n%s",
			row, len(rep.Permits), len(tokens), limit, rep)
	}
	e.finish(row, rep, &caught)
}
