package main

import (
	"context"
	"errors"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncLocker is go-redsync/redsync's contender.
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
