package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of the retry policies and of Acquire's wait for a held lock.

func TestRetryPolicies(t *testing.T) {
	if _, ok := NoRetry()(1); ok {
		t.Errorf("NoRetry()(1) ok = true; want false")
	}
	p := ExponentialBackoff(10*time.Millisecond, 80*time.Millisecond)
	seen := map[time.Duration]bool{}
	for attempt := 1; attempt <= 40; attempt++ {
		want := min(10*time.Millisecond<<min(attempt-1, 30), 80*time.Millisecond)
		for range 50 {
			d, ok := p(attempt)
			if !ok || d < want/2 || d > want {
				t.Fatalf("ExponentialBackoff(10ms, 80ms)(%d) = %v, %v; want in [%v, %v], true", attempt, d, ok, want/2, want)
			}
			seen[d] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("ExponentialBackoff drew only %d distinct delays; want jitter", len(seen))
	}
	l := LimitRetry(p, 3)
	for attempt, want := range []bool{true, true, false, false} {
		if _, ok := l(attempt + 1); ok != want {
			t.Errorf("LimitRetry(p, 3)(%d) ok = %v; want %v", attempt+1, ok, want)
		}
	}
}

func TestAcquireRetriesUntilFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		for _, f := range fakes {
			f.set(func(f *fakeNode) {
				f.kv["redlock:{busy}"] = "other"
				f.expiry["redlock:{busy}"] = time.Now().Add(300 * time.Millisecond)
			})
		}
		start := time.Now()
		l, err := c.Acquire(t.Context(), "busy", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v; want the lock once the other owner's key expires", err)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond || waited > 600*time.Millisecond {
			t.Errorf("Acquire waited %v; want a little over the 300ms the other owner held it", waited)
		}
		l.Release(t.Context())
	})
}

func TestAcquireContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fakes := newFakeClient(t, 3, nil)
				for _, f := range fakes {
					f.set(func(f *fakeNode) { f.kv["redlock:{held}"] = "other" })
				}
				ctx, cancel := tc.ctx(t.Context())
				defer cancel()
				start := time.Now()
				_, err := c.Acquire(ctx, "held", time.Second, nil)
				if !errors.Is(err, tc.want) || !errors.Is(err, ErrNotAcquired) {
					t.Errorf("Acquire = %v; want an error matching both %v and ErrNotAcquired", err, tc.want)
				}
				if waited := time.Since(start); waited != 100*time.Millisecond {
					t.Errorf("Acquire returned %v after start; want at once when the context ended (100ms)", waited)
				}
				var qe *QuorumError
				if errors.As(err, &qe) && !strings.Contains(qe.Error(), "held by another owner") {
					t.Errorf("error %q does not say the nodes were held", qe.Error())
				}
			})
		})
	}
}
