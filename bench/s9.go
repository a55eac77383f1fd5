package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
)

// S9: locks over several names (issue 32). k free names per call, taken
// by one AcquireMulti (one script per node: one round) or as k plain locks
// taken one after the other in sorted order by the same library (k rounds),
// next to one plain lock; uncontended, one goroutine, fresh names, as S1.

// s9Sizes are the set sizes S9 measures.
var s9Sizes = []int{1, 2, 4, 8}

// s9Contenders are S9's contenders: for each k, the set and the k locks.
func s9Contenders() []contender {
	var cs []contender
	for _, k := range s9Sizes {
		cs = append(cs,
			contender{name: fmt.Sprintf("redlock set of %d (AcquireMulti)", k), open: openRedlockSet(k, false), nodes: 5, set: k},
			contender{name: fmt.Sprintf("redlock %d locks in sorted order", k), open: openRedlockSet(k, true), nodes: 5, set: k})
	}
	return cs
}

// s9Applies: the set contenders and the plain lock they are compared with.
func s9Applies(c contender) bool { return c.set > 0 || c.name == "redlock (fenced)" }

func s9Scenario(cl *cluster, f *flags) scenario {
	return scenario{
		id: "S9", title: "k free names per call: one AcquireMulti, or k plain locks in sorted order (uncontended, as S1)", fault: healthy,
		duration: &f.s9, applies: s9Applies, columns: latencyCols(),
		measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
			return withLocker(ctx, cl, healthy, c, addrs, prefix, 1, false, func(ls []locker, w *window) (metrics, error) {
				return sequential(ctx, ls[0], prefix, d, w), ctx.Err()
			})
		},
	}
}

// setLocker takes k names per call (key:0 .. key:k-1), as one set or as
// k locks in sorted order.
type setLocker struct {
	clients []*redis.Client
	c       *redlock.Client
	k       int
	each    bool
}

func openRedlockSet(k int, each bool) func([]string) (locker, error) {
	return func(addrs []string) (locker, error) {
		cs := defaultClients(addrs)
		nodes := make([]redis.UniversalClient, len(cs))
		for i, c := range cs {
			nodes[i] = c
		}
		c, err := redlock.New(nodes, nil)
		if err != nil {
			closeClients(cs)
			return nil, err
		}
		return &setLocker{clients: cs, c: c, k: k, each: each}, nil
	}
}

func (l *setLocker) names(key string) []string {
	names := make([]string, l.k)
	for i := range names {
		names[i] = key + ":" + strconv.Itoa(i)
	}
	slices.Sort(names)
	return names
}

type setHeld struct{ *redlock.MultiLock }

func (h setHeld) release(ctx context.Context) error { return h.Release(ctx) }

// locksHeld are k plain locks, released in reverse order.
type locksHeld []*redlock.Lock

func (h locksHeld) release(ctx context.Context) error {
	var errs []error
	for i := len(h) - 1; i >= 0; i-- {
		errs = append(errs, h[i].Release(ctx))
	}
	return errors.Join(errs...)
}

func (l *setLocker) take(ctx context.Context, key string, o *redlock.AcquireOptions) (held, error) {
	names := l.names(key)
	if !l.each {
		m, err := l.c.AcquireMulti(ctx, names, ttl, o)
		if err != nil {
			return nil, err
		}
		return setHeld{m}, nil
	}
	var h locksHeld
	for _, n := range names {
		lk, err := l.c.Acquire(ctx, n, ttl, o)
		if err != nil {
			_ = h.release(context.WithoutCancel(ctx))
			return nil, err
		}
		h = append(h, lk)
	}
	return h, nil
}

func (l *setLocker) tryLock(ctx context.Context, key string) (held, error) {
	return l.take(ctx, key, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
}

func (l *setLocker) lock(ctx context.Context, key string) (held, error) {
	return l.take(ctx, key, nil)
}

func (l *setLocker) close() {
	_ = l.c.Close()
	closeClients(l.clients)
}
