package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
)

// ttl is every lock's TTL. Long next to every scenario's operations, so no
// lock expires while held.
const ttl = 10 * time.Second

// nodeTimeout is the per-node timeout given to every library: this
// library's default NodeTimeout; for the others, the ReadTimeout and
// WriteTimeout of their go-redis clients (and redsync's timeout factor).
const nodeTimeout = redlock.DefaultNodeTimeout

// held is an acquired lock.
type held interface {
	release(ctx context.Context) error
}

// locker is one contender's client over the nodes, with its own go-redis
// clients (so its own connections).
type locker interface {
	// tryLock makes one attempt to take key.
	tryLock(ctx context.Context, key string) (held, error)
	// lock takes key, waiting with the library's own retry policy until
	// ctx ends.
	lock(ctx context.Context, key string) (held, error)
	close()
}

// contender is one library (or the floor) in one configuration.
type contender struct {
	name string
	// open creates a locker over the nodes at addrs.
	open func(addrs []string) (locker, error)
	// nodes: how many of the nodes it uses (redislock: 1).
	nodes int
	// floor: only the round-trip scenarios apply.
	floor bool
}

func contenders() []contender {
	return []contender{
		{name: "floor", open: openFloor, nodes: 5, floor: true},
		{name: "redlock (fenced)", open: openRedlock(false), nodes: 5},
		{name: "redlock (unfenced)", open: openRedlock(true), nodes: 5},
		{name: "redsync", open: openRedsync(false), nodes: 5},
		{name: "redsync (FailFast)", open: openRedsync(true), nodes: 5},
		{name: "redislock (1 node)", open: openRedislock, nodes: 1},
	}
}

// defaultClients: go-redis defaults, one client per address.
func defaultClients(addrs []string) []*redis.Client {
	cs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		cs[i] = redis.NewClient(&redis.Options{Addr: a})
	}
	return cs
}

// timeoutClients: go-redis defaults but for ReadTimeout and WriteTimeout,
// set to nodeTimeout: the per-node timeout of the libraries that have none
// of their own.
func timeoutClients(addrs []string) []*redis.Client {
	cs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		cs[i] = redis.NewClient(&redis.Options{Addr: a, ReadTimeout: nodeTimeout, WriteTimeout: nodeTimeout})
	}
	return cs
}

func closeClients(cs []*redis.Client) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// --- this library ---

type redlockLocker struct {
	clients []*redis.Client
	c       *redlock.Client
	try     *redlock.AcquireOptions
	wait    *redlock.AcquireOptions
}

type redlockHeld struct{ *redlock.Lock }

func (h redlockHeld) release(ctx context.Context) error { return h.Release(ctx) }

func openRedlock(noFence bool) func([]string) (locker, error) {
	return func(addrs []string) (locker, error) {
		cs := defaultClients(addrs)
		nodes := make([]redis.UniversalClient, len(cs))
		for i, c := range cs {
			nodes[i] = c
		}
		c, err := redlock.New(nodes, nil) // NodeTimeout: the default, 100 ms
		if err != nil {
			closeClients(cs)
			return nil, err
		}
		return &redlockLocker{
			clients: cs,
			c:       c,
			try:     &redlock.AcquireOptions{NoFence: noFence, Retry: redlock.NoRetry()},
			wait:    &redlock.AcquireOptions{NoFence: noFence},
		}, nil
	}
}

func (l *redlockLocker) tryLock(ctx context.Context, key string) (held, error) {
	lk, err := l.c.Acquire(ctx, key, ttl, l.try)
	if err != nil {
		return nil, err
	}
	return redlockHeld{lk}, nil
}

func (l *redlockLocker) lock(ctx context.Context, key string) (held, error) {
	lk, err := l.c.Acquire(ctx, key, ttl, l.wait)
	if err != nil {
		return nil, err
	}
	return redlockHeld{lk}, nil
}

func (l *redlockLocker) close() {
	_ = l.c.Close()
	closeClients(l.clients)
}

// --- redsync ---

type redsyncLocker struct {
	clients []*redis.Client
	rs      *redsync.Redsync
	opts    []redsync.Option
}

type redsyncHeld struct{ *redsync.Mutex }

func (h redsyncHeld) release(ctx context.Context) error {
	ok, err := h.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock below quorum")
	}
	return err
}

func openRedsync(failFast bool) func([]string) (locker, error) {
	return func(addrs []string) (locker, error) {
		cs := timeoutClients(addrs)
		pools := make([]rsredis.Pool, len(cs))
		for i, c := range cs {
			pools[i] = rsgoredis.NewPool(c)
		}
		return &redsyncLocker{
			clients: cs,
			rs:      redsync.New(pools...),
			opts: []redsync.Option{
				redsync.WithExpiry(ttl),
				// the acquire round's context timeout: ttl*factor = 100 ms
				redsync.WithTimeoutFactor(float64(nodeTimeout) / float64(ttl)),
				redsync.WithFailFast(failFast),
			},
		}, nil
	}
}

func (l *redsyncLocker) tryLock(ctx context.Context, key string) (held, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

// lock waits with redsync's defaults (32 tries, 50..250 ms apart); when
// they run out it starts again, until ctx ends.
func (l *redsyncLocker) lock(ctx context.Context, key string) (held, error) {
	for {
		m := l.rs.NewMutex(key, l.opts...)
		err := m.LockContext(ctx)
		if err == nil {
			return redsyncHeld{m}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !redsyncContended(err) {
			return nil, err
		}
	}
}

// redsyncContended: err only says that others hold the lock (or held
// enough nodes to split the vote), so waiting on makes sense.
func redsyncContended(err error) bool {
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	return errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken)
}

func (l *redsyncLocker) close() { closeClients(l.clients) }

// --- bsm/redislock, on node 0 only ---

type redislockLocker struct {
	client *redis.Client
	c      *redislock.Client
}

type redislockHeld struct{ *redislock.Lock }

func (h redislockHeld) release(ctx context.Context) error { return h.Release(ctx) }

func openRedislock(addrs []string) (locker, error) {
	cs := timeoutClients(addrs[:1])
	return &redislockLocker{client: cs[0], c: redislock.New(cs[0])}, nil
}

func (l *redislockLocker) tryLock(ctx context.Context, key string) (held, error) {
	lk, err := l.c.Obtain(ctx, key, ttl, nil) // nil: no retry
	if err != nil {
		return nil, err
	}
	return redislockHeld{lk}, nil
}

// lock retries with redislock's exponential backoff between 8 and 256 ms
// (the bounds of this library's DefaultRetry; redislock's default is no
// retry), until ctx ends.
func (l *redislockLocker) lock(ctx context.Context, key string) (held, error) {
	for {
		lk, err := l.c.Obtain(ctx, key, ttl, &redislock.Options{
			RetryStrategy: redislock.ExponentialBackoff(8*time.Millisecond, 256*time.Millisecond),
		})
		if err == nil {
			return redislockHeld{lk}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Obtain gives up after ttl without a deadline on ctx; wait on.
		if !errors.Is(err, redislock.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
}

func (l *redislockLocker) close() { _ = l.client.Close() }

// --- the floor ---

// floorScript is the trivial script of the floor's rounds: one key and one
// argument, like a lock script, and no work.
const floorScript = "return 1"

// floorWorkers is the number of persistent worker goroutines per node,
// more than the concurrency of any scenario.
const floorWorkers = 64

// floorLocker is the floor: a "lock" or "unlock" is one parallel round of
// EVALSHA floorScript to every node, decided at the quorum-th success,
// through persistent per-node workers (no goroutine per call).
type floorLocker struct {
	clients []*redis.Client
	sha     string
	reqs    []chan *floorRound
	wg      sync.WaitGroup
	quorum  int
}

// floorRound is one round; it is also the held "lock", whose release is
// the second round.
type floorRound struct {
	f       *floorLocker
	key     string
	replies chan error // buffered: late replies never block a worker
}

var errFloorBusy = errors.New("floor: node's workers all busy")

func openFloor(addrs []string) (locker, error) {
	cs := defaultClients(addrs)
	f := &floorLocker{clients: cs, quorum: len(cs)/2 + 1}
	for i, c := range cs {
		sha, err := c.ScriptLoad(context.Background(), floorScript).Result()
		if err != nil {
			closeClients(cs)
			return nil, fmt.Errorf("floor: loading the script on node %d: %w", i, err)
		}
		f.sha = sha
	}
	for _, c := range cs {
		ch := make(chan *floorRound, 256)
		f.reqs = append(f.reqs, ch)
		for range floorWorkers {
			f.wg.Add(1)
			go func() { // owner: f; stopped by close (channel closed), joined there
				defer f.wg.Done()
				for r := range ch {
					r.replies <- c.EvalSha(context.Background(), f.sha, []string{r.key}, "token").Err()
				}
			}()
		}
	}
	return f, nil
}

func (f *floorLocker) round(key string) (*floorRound, error) {
	r := &floorRound{f: f, key: key, replies: make(chan error, len(f.reqs))}
	for _, ch := range f.reqs {
		select {
		case ch <- r:
		default:
			r.replies <- errFloorBusy
		}
	}
	ok, failed := 0, 0
	for ok < f.quorum && failed <= len(f.reqs)-f.quorum {
		if err := <-r.replies; err == nil {
			ok++
		} else {
			failed++
		}
	}
	if ok < f.quorum {
		return nil, errors.New("floor: no quorum")
	}
	return r, nil
}

func (f *floorLocker) tryLock(_ context.Context, key string) (held, error) { return f.round(key) }
func (f *floorLocker) lock(_ context.Context, key string) (held, error)    { return f.round(key) }

func (r *floorRound) release(context.Context) error {
	_, err := r.f.round(r.key)
	return err
}

func (f *floorLocker) close() {
	for _, ch := range f.reqs {
		close(ch)
	}
	closeClients(f.clients) // frees workers stuck on a dead node
	f.wg.Wait()
}
