package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptOnly is a node that can run scripts and nothing else (no
// subscribe): a wrapper a user might put around a client, counting calls.
type scriptOnly struct {
	redis.Scripter
	calls *atomic.Int64
}

func (s scriptOnly) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	s.calls.Add(1)
	return s.Scripter.EvalSha(ctx, sha, keys, args...)
}

func TestNewWithNodesTakesScriptOnlyNodes(t *testing.T) {
	var calls atomic.Int64
	var ns []Node
	for _, n := range nodes(3) {
		ns = append(ns, scriptOnly{Scripter: n, calls: &calls})
	}
	c, err := NewWithNodes(ns, &Options{NodeTimeout: time.Second})
	if err != nil {
		t.Fatalf("NewWithNodes = %v", err)
	}
	defer c.Close()
	l, err := c.Acquire(t.Context(), "narrow", 5*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire through script-only nodes = %v", err)
	}
	if calls.Load() < 2 {
		t.Errorf("the wrapper saw %d script calls; want the lock's calls to go through it", calls.Load())
	}
	// A waiter on nodes that cannot subscribe finds the release by polling.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l2, err := c.Acquire(ctx, "narrow", 5*time.Second, nil)
		if err == nil {
			err = l2.Release(context.Background())
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("waiter without release notices = %v; want the lock after the release", err)
	}
	key, _ := c.Keys("narrow")
	assertNoLockKey(t, nodes(3), key)

	if _, err := NewWithNodes([]Node{ns[0], nil}, nil); err == nil || errors.Is(err, ErrNotAcquired) {
		t.Errorf("NewWithNodes with a nil node = %v; want a configuration error", err)
	}
}
