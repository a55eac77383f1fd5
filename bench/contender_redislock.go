package main

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redislockLocker is bsm/redislock's contender, on node 0 only.
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
