package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// TestElectionTurns: three candidates campaign in a loop, each leading in
// turn as the previous one resigns. Never two believed leaders at once
// (the history checker, and a count of the leaders inside), terms strictly
// increase in the order of the leaderships, Leader reads each leader with
// its term, and Observe sees every term, in order.
func TestElectionTurns(t *testing.T) {
	e := newEnv(t, 5, memFenced, nil)
	cs := e.clients(3)
	const name = "elect-turns"
	const ttl = time.Second
	watch := observer(t, e.directClient(), name)
	reader := e.directClient()
	var (
		inside atomic.Int32
		mu     sync.Mutex // protects terms
		terms  []uint64   // in the order the leaderships began
		wg     sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ld, err := c.campaign(ctx, name, ttl)
				if err != nil {
					continue
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%s leads with %d believed leaders; want 1", c.name, n)
				}
				mu.Lock()
				terms = append(terms, ld.Term())
				mu.Unlock()
				c.increment(ld.Lock(), name)
				info, err := reader.Leader(context.Background(), name)
				if err != nil || !info.Held || info.Term != ld.Term() || info.Value != c.name {
					t.Errorf("Leader while %s leads at term %d = %+v, %v; want it", c.name, ld.Term(), info, err)
				}
				time.Sleep(150 * time.Millisecond) // long enough for Observe's read
				inside.Add(-1)
				if err := ld.Resign(context.Background()); err != nil {
					t.Errorf("Resign of %s = %v; want nil", c.name, err)
				}
			}
		}()
	}
	wg.Wait()
	if len(terms) < 6 {
		t.Errorf("%d leaderships in 4s; want at least 6", len(terms))
	}
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Errorf("terms %v: term %d after %d; want strictly increasing", terms, terms[i], terms[i-1])
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	wantTermsSeen(t, "turns", watch(), terms...)
	rep := e.check()
	assertClean(t, "turns", rep)
	wantAcquisitions(t, "turns", rep, len(terms))
	e.finish(t.Name(), rep, nil)
}

// TestElectionLeader: Leader and Remaining of one leader, then none after
// Resign; Done at the local deadline when the extends stop.
func TestElectionLeader(t *testing.T) {
	e := newEnv(t, 3, memFenced, nil)
	c1 := e.client("c1")
	lc := e.directClient()
	const name = "elect-leader"
	const ttl = 2 * time.Second
	ld := mustCampaign(t, c1, name, ttl, 5*time.Second, "healthy cluster")
	info, err := lc.Leader(within(t, 5*time.Second), name)
	if err != nil || !info.Held || info.Value != "c1" || info.Term != ld.Term() || info.Name != name {
		t.Fatalf("Leader = %+v, %v; want c1 at term %d", info, err, ld.Term())
	}
	if info.Remaining <= 0 || info.Remaining > ttl {
		t.Errorf("Leader().Remaining = %v; want in (0, %v]", info.Remaining, ttl)
	}
	if err := ld.Resign(within(t, 5*time.Second)); err != nil {
		t.Fatalf("Resign = %v; want nil", err)
	}
	if !errors.Is(ld.Err(), redlock.ErrReleased) {
		t.Errorf("Err() after Resign = %v; want ErrReleased", ld.Err())
	}
	info, err = lc.Leader(within(t, 5*time.Second), name)
	if err != nil || info.Held {
		t.Errorf("Leader after Resign = %+v, %v; want Held false", info, err)
	}

	// Cut off from every node: the watchdog's extends fail, Done closes at
	// the deadline.
	ld = mustCampaign(t, c1, name, ttl, 5*time.Second, "healthy cluster")
	e.down(c1, 0, 1, 2)
	e.majorityGone(name)
	deadline := ld.ValidUntil()
	select {
	case <-ld.Done():
		if late := time.Since(deadline); late > chaosTolerance {
			t.Errorf("Done closed %v after the deadline; want by it", late)
		}
	case <-time.After(time.Until(deadline) + 5*time.Second):
		t.Fatalf("Done not closed 5s after the deadline")
	}
	if !errors.Is(ld.Err(), redlock.ErrLost) {
		t.Errorf("Err() after the deadline = %v; want ErrLost", ld.Err())
	}
	// A quorum unreachable: the leader is unknown.
	_, err = c1.lc.Leader(within(t, 5*time.Second), name)
	if !errors.Is(err, redlock.ErrLeaderUnknown) {
		t.Errorf("Leader with every node down = %v; want ErrLeaderUnknown", err)
	}
	rep := e.check()
	assertClean(t, "leader", rep)
	e.finish(t.Name(), rep, nil)
}

// TestElectionBadInput: what Campaign and Observe refuse before sending
// anything (no Docker: the node is never dialled).
func TestElectionBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	c, err := redlock.New([]redis.UniversalClient{rdb}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, v := range []string{"", "a\nb", strings.Repeat("x", redlock.MaxMetadataLen+1), "\xff"} {
		if _, err := c.Campaign(ctx, "e", time.Second, v); err == nil {
			t.Errorf("Campaign(value %q) = nil error; want it refused", v)
		}
	}
	if _, err := c.Campaign(ctx, "{e}", time.Second, "v"); err == nil {
		t.Errorf("Campaign(name \"{e}\") = nil error; want it refused")
	}
	if _, err := c.Observe(ctx, "e", &redlock.ObserveOptions{Interval: -1}); err == nil {
		t.Errorf("Observe(Interval -1) = nil error; want it refused")
	}
	c.Close()
	if _, err := c.Observe(ctx, "e", nil); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Observe after Close = %v; want ErrClosed", err)
	}
	if _, err := c.Campaign(ctx, "e", time.Second, "v"); !errors.Is(err, redlock.ErrClosed) {
		t.Errorf("Campaign after Close = %v; want ErrClosed", err)
	}
	var zero redlock.Client
	if _, err := zero.Leader(ctx, "e"); !errors.Is(err, redlock.ErrNotNew) {
		t.Errorf("Leader on a zero Client = %v; want ErrNotNew", err)
	}
}
