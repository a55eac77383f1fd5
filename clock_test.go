package redlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of validity (TTL - elapsed - drift) and of the local deadline, which
// neither a late quorum nor an extend can move back. Fake nodes under
// synctest's fake clock, so every duration is exact.

func TestValidityMath(t *testing.T) {
	for _, tc := range []struct {
		ttl, elapsed time.Duration
		factor       float64
		want         time.Duration
	}{
		{10 * time.Second, 0, 0.01, 10*time.Second - 100*time.Millisecond - 2*time.Millisecond},
		{10 * time.Second, 500 * time.Millisecond, 0.01, 9500*time.Millisecond - 102*time.Millisecond},
		{100 * time.Millisecond, 97 * time.Millisecond, 0.01, 0},
		{100 * time.Millisecond, 98 * time.Millisecond, 0.01, -time.Millisecond},
		{time.Second, 0, 0.1, 898 * time.Millisecond},
	} {
		if got := validity(tc.ttl, tc.elapsed, tc.factor); got != tc.want {
			t.Errorf("validity(%v, %v, %v) = %v; want %v", tc.ttl, tc.elapsed, tc.factor, got, tc.want)
		}
	}
}

func TestAcquireValidityCountsElapsedTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		for _, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = 40 * time.Millisecond })
		}
		start := time.Now()
		l, err := c.Acquire(t.Context(), "v", time.Second, &AcquireOptions{NoFence: true})
		if err != nil {
			t.Fatalf("Acquire = %v; want a lock", err)
		}
		// 1s - 40ms elapsed - (10ms + 2ms) drift.
		if got, want := l.ValidUntil().Sub(start), 948*time.Millisecond; got != want {
			t.Errorf("validity = %v; want %v", got, want)
		}
		time.Sleep(time.Until(l.ValidUntil()) - time.Millisecond)
		select {
		case <-l.Done():
			t.Fatalf("Done fired before the deadline")
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		select {
		case <-l.Done():
		default:
			t.Fatalf("Done did not fire at the deadline")
		}
		if !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v; want ErrLost", l.Err())
		}
		if err := l.Release(context.Background()); !errors.Is(err, ErrLost) {
			t.Errorf("Release after the deadline = %v; want an error matching ErrLost", err)
		}
	})
}

func TestPerNodeTimeoutCappedAtValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		for _, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = 98 * time.Millisecond })
		}
		start := time.Now()
		_, err := c.Acquire(t.Context(), "late", 100*time.Millisecond, &AcquireOptions{Retry: NoRetry()})
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		// A grant after 97ms (100ms - 3ms drift) could never be valid:
		// the attempt gives up then instead of waiting a second.
		if got := time.Since(start); got != 97*time.Millisecond {
			t.Errorf("Acquire gave up after %v; want 97ms", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, f := range fakes {
			if v, ok := f.get("redlock:{late}"); ok {
				t.Errorf("node %d still holds %q after a failed attempt; want the late grant released", i, v)
			}
		}
	})
}

// A quorum that arrives with validity left, but after the deadline (which
// counts from the start), is a failure.
func TestAcquireFailsWhenDeadlinePassed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		for _, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = 600 * time.Millisecond })
		}
		// validity = 1s - 600ms - 12ms = 388ms > 0, but start+388ms is past.
		l, err := c.Acquire(t.Context(), "late-deadline", time.Second, &AcquireOptions{Retry: NoRetry()})
		if err == nil {
			t.Fatalf("Acquire = lock valid until %v (now %v); want ErrNotAcquired", l.ValidUntil(), time.Now())
		}
		var qerr *QuorumError
		if !errors.As(err, &qerr) || !errors.Is(err, ErrNotAcquired) || qerr.Validity > 0 {
			t.Errorf("Acquire = %v; want a QuorumError with validity <= 0", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		noKey(t, fakes, "redlock:{late-deadline}") // the failed attempt is cleaned up
	})
}

// manualClock is a clock whose timers never fire: a deadline can pass
// without the lock noticing, as when its timer goroutine has not run yet.
type manualClock struct {
	mu  sync.Mutex // protects now
	now time.Time
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualClock) advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

func (m *manualClock) AfterFunc(time.Duration, func()) stopper { return nopStopper{} }

type nopStopper struct{}

func (nopStopper) Stop() bool { return true }

func TestExtendAfterDeadlineNeverRevives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		clk := &manualClock{now: time.Now()}
		c.clock = clk
		l, err := c.Acquire(t.Context(), "revive", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		clk.advance(2 * time.Second) // past the deadline; the timer has not run
		if err := l.Extend(t.Context(), time.Second); !errors.Is(err, ErrLost) {
			t.Errorf("Extend after the deadline = %v; want ErrLost", err)
		}
		if !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v after an extend past the deadline; want ErrLost (never revived)", l.Err())
		}
		select {
		case <-l.Done():
		default:
			t.Errorf("Done not closed after the lock was found lost")
		}
	})
}
