package main

import (
	"context"
	"time"

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
	// many: S7 (many names) applies.
	many bool
	// permit: a semaphore's permit in place of a lock (S1 and S2 only:
	// beside the lock, what the semaphore's checks cost).
	permit bool
	// rw: the read-write lock (S8 only, beside the plain lock).
	rw bool
	// set: k names per call (S9 only: s9.go).
	set int
}

func contenders() []contender {
	return []contender{
		{name: "floor", open: openFloor(floorTrivial), nodes: 5, floor: true},
		{name: "floor (plain SET)", open: openFloor(floorPlainSet), nodes: 5, floor: true},
		{name: "floor (fenced)", open: openFloor(floorFenced), nodes: 5, floor: true},
		{name: "redlock (fenced)", open: openRedlock(false), nodes: 5, many: true},
		{name: "redlock (unfenced)", open: openRedlock(true), nodes: 5, many: true},
		{name: "redlock permit (limit 4)", open: openRedlockPermit(4), nodes: 5, permit: true},
		{name: "redlock read-write (fenced)", open: openRedlockRW, nodes: 5, rw: true},
		{name: "redsync", open: openRedsync(false), nodes: 5, many: true},
		{name: "redsync (FailFast)", open: openRedsync(true), nodes: 5},
		{name: "redislock (1 node)", open: openRedislock, nodes: 1},
	}
}

// allContenders are the contenders and S9's (which take part in S9 only).
func allContenders() []contender { return append(contenders(), s9Contenders()...) }

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

// harness is the no-op contender: the scenarios' own loops with no lock in
// them, whose client CPU per operation is the bench's own share, subtracted
// from every contender's.
var harness = contender{name: "harness (no-op)", open: openNoop, nodes: 5, many: true}

// noopLocker is a locker over nothing: with a semaphore of one it
// excludes like a lock; without one (the harness) it grants everyone at
// once.
type noopLocker struct {
	sem chan struct{} // nil: no exclusion
}

func openNoop([]string) (locker, error) { return &noopLocker{}, nil }

func (f *noopLocker) tryLock(ctx context.Context, key string) (held, error) { return f.lock(ctx, key) }

func (f *noopLocker) lock(ctx context.Context, _ string) (held, error) {
	if f.sem == nil {
		return f, ctx.Err()
	}
	select {
	case f.sem <- struct{}{}:
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *noopLocker) release(context.Context) error {
	if f.sem != nil {
		<-f.sem
	}
	return nil
}

func (f *noopLocker) close() {}
