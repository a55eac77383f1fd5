package main

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
)

// redlockLocker is this library's contender.
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

// redlockPermitLocker takes a permit of a semaphore of limit permits
// (fenced) where the others take a lock: each key is a semaphore.
type redlockPermitLocker struct {
	*redlockLocker
	limit int
}

type redlockPermit struct{ *redlock.Permit }

func (h redlockPermit) release(ctx context.Context) error { return h.Release(ctx) }

func openRedlockPermit(limit int) func([]string) (locker, error) {
	return func(addrs []string) (locker, error) {
		l, err := openRedlock(false)(addrs)
		if err != nil {
			return nil, err
		}
		return &redlockPermitLocker{redlockLocker: l.(*redlockLocker), limit: limit}, nil
	}
}

func (l *redlockPermitLocker) tryLock(ctx context.Context, key string) (held, error) {
	p, err := l.c.TryAcquirePermit(ctx, key, l.limit, ttl, nil)
	if err != nil {
		return nil, err
	}
	return redlockPermit{p}, nil
}

func (l *redlockPermitLocker) lock(ctx context.Context, key string) (held, error) {
	p, err := l.c.AcquirePermit(ctx, key, l.limit, ttl, nil)
	if err != nil {
		return nil, err
	}
	return redlockPermit{p}, nil
}
