package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// On Redis Cluster nodes one script cannot take keys of different hash
// slots, and every name is its own slot (its hash tag). There a set takes
// its names one at a time, each a plain lock of its own, in sorted order:
// one order for every set, so no set waits for a name while holding a name
// that comes after it, and no cycle of waits can form. It costs a round per
// name (and a wait per taken name) where the one script costs one round.
// The set's names share its token, so Inspect tells them apart as a set's.

// slotted reports whether a set must take its names one at a time: some
// node is a Redis Cluster (or a Ring), whose script runs on one shard.
// Every set on such nodes does, whatever its names' slots: a set waiting in
// every name's queue (the one script) beside one holding its first names
// and waiting for the next could wait for each other.
func (c *Client) slotted(names []string) bool {
	if len(names) < 2 {
		return false
	}
	for _, n := range c.nodes {
		switch n.client.(type) {
		case *redis.ClusterClient, *redis.Ring:
			return true
		}
	}
	return false
}

// acquireEach takes the names (sorted) one at a time, each a plain lock
// with the set's token, and releases those it took if one fails.
func (c *Client) acquireEach(ctx context.Context, names []string, ttl time.Duration, o AcquireOptions) (*MultiLock, error) {
	token := newToken() + setSuffix(len(names))
	m := &MultiLock{names: names, token: token, fences: make([]uint64, len(names)), each: make([]*Lock, 0, len(names))}
	m.ctx, m.cancel = context.WithCancelCause(context.Background())
	for i, name := range names {
		ls := c.newLease(name, ttl, leaseSpec{fenced: !o.NoFence, token: token})
		l, err := c.acquireLease(ctx, ls, o, c.clock.Now())
		if err == nil && !c.clock.Now().Before(m.firstDeadline()) {
			_ = l.Release(context.WithoutCancel(ctx))
			err = &QuorumError{Op: "acquire", Name: name, Quorum: c.quorum, sentinel: ErrNotAcquired,
				Err: errors.New("redlock: an earlier name's lease ended while the set waited for this one: give the set a longer TTL, or AutoExtend")}
		}
		if err != nil {
			m.cancel(err)
			for _, held := range m.each {
				_ = held.Release(context.WithoutCancel(ctx))
			}
			return nil, err
		}
		m.each = append(m.each, l)
		m.fences[i] = l.Fence()
		lctx := l.Context(context.Background())
		context.AfterFunc(lctx, func() { m.cancel(context.Cause(lctx)) })
	}
	return m, nil
}

// firstDeadline is the earliest deadline of the names taken so far (far
// ahead when none).
func (m *MultiLock) firstDeadline() time.Time {
	d := time.Now().Add(time.Hour)
	for _, l := range m.each {
		d = minTime(d, l.ValidUntil())
	}
	return d
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// The one-at-a-time set's methods: its lease ends when any name's does.

func (m *MultiLock) eachErr() error {
	if m.ctx.Err() == nil {
		return nil
	}
	return context.Cause(m.ctx)
}

func (m *MultiLock) eachContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(m.ctx, func() { cancel(context.Cause(m.ctx)) })
	context.AfterFunc(ctx, func() { stop() })
	return ctx
}

func (m *MultiLock) eachExtend(ctx context.Context, ttl time.Duration) error {
	var errs []error
	for _, l := range m.each {
		errs = append(errs, l.Extend(ctx, ttl))
	}
	return errors.Join(errs...)
}

func (m *MultiLock) eachRelease(ctx context.Context) error {
	m.cancel(ErrReleased) // unless a name's lease ended first
	var errs []error
	for _, l := range m.each {
		errs = append(errs, l.Release(ctx))
	}
	return errors.Join(errs...)
}
