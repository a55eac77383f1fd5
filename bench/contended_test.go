package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLocker is a locker over nothing: with a semaphore of one it
// excludes like a lock; without one it grants everyone at once.
type fakeLocker struct {
	sem chan struct{} // nil: no exclusion
}

func (f *fakeLocker) tryLock(ctx context.Context, key string) (held, error) { return f.lock(ctx, key) }

func (f *fakeLocker) lock(ctx context.Context, _ string) (held, error) {
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

func (f *fakeLocker) release(context.Context) error {
	if f.sem != nil {
		<-f.sem
	}
	return nil
}

func (f *fakeLocker) close() {}

// The in-section counter of contended sees overlapping critical sections
// (the negative control) and reports none when the lock excludes.
func TestContendedCountsOverlaps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sem      chan struct{}
		overlaps bool
	}{
		{"no exclusion", nil, true},
		{"exclusive", make(chan struct{}, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var violations atomic.Int64
			m := contended(context.Background(), []locker{&fakeLocker{sem: tc.sem}}, "k", 50*time.Millisecond, &violations)
			if got := violations.Load() > 0; got != tc.overlaps {
				t.Fatalf("violations = %d, want overlaps %v", violations.Load(), tc.overlaps)
			}
			if m["cs_per_s"] <= 0 {
				t.Fatalf("no critical sections counted: %v", m)
			}
		})
	}
}
