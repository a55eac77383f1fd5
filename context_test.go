package redlock

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// Contexts derived from a lock whose parents have ended must not pile up in
// the lock until it ends.
func TestContextDoesNotRetainDerived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		l, err := c.Acquire(t.Context(), "ctx", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		// The runtime keeps the goroutines it made, whether the lock is
		// involved or not: let it make as many as the loop below may
		// need at once (context.AfterFunc runs each callback in one)
		// before measuring.
		for range 50000 {
			parent, cancel := context.WithCancel(context.Background())
			context.AfterFunc(parent, func() {})
			cancel()
		}
		time.Sleep(100 * time.Millisecond)
		before := heap()
		for range 50000 {
			parent, cancel := context.WithCancel(context.Background())
			_ = l.Context(parent)
			cancel()
		}
		time.Sleep(100 * time.Millisecond) // context.AfterFunc callbacks run in goroutines
		grew := int64(heap()) - int64(before)
		if grew > 2<<20 {
			t.Errorf("heap grew %d bytes after 50000 Context calls whose parents ended; want them collectable", grew)
		}
		if l.Err() != nil {
			t.Fatalf("lock ended: %v", l.Err())
		}
		ctx := l.Context(context.Background())
		l.Release(context.Background())
		if !errors.Is(context.Cause(ctx), ErrReleased) {
			t.Errorf("Cause(ctx) after Release = %v; want ErrReleased", context.Cause(ctx))
		}
	})
}
