package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// Tests of the watchdog (AutoExtend): it keeps a lock, rides out a blip, and
// reports a loss with its cause.

func TestWatchdogKeepsLockAndReportsLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		l := autoLock(t, c, "wd", 300*time.Millisecond)
		ctx := l.Context(t.Context())
		time.Sleep(5 * 300 * time.Millisecond)
		if l.Err() != nil {
			t.Fatalf("Err() = %v after 5 TTLs; want the watchdog to keep the lock", l.Err())
		}
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { f.err = errors.New("connection refused") })
		}
		synctest.Wait() // a round that started before the failure lands first
		lostBy := l.ValidUntil()
		<-l.Done()
		if time.Now().After(lostBy) {
			t.Errorf("Done fired at %v, after the deadline %v", time.Now(), lostBy)
		}
		if !errors.Is(l.Err(), ErrLost) || !errors.Is(context.Cause(ctx), ErrLost) {
			t.Errorf("Err() = %v, Cause(ctx) = %v; want ErrLost", l.Err(), context.Cause(ctx))
		}
		if err := l.Release(t.Context()); !errors.Is(err, ErrLost) {
			t.Errorf("Release = %v; want ErrLost", err)
		}
	})
}

func TestWatchdogAndLossOnRealNodes(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	c := newTestClient(t, cl.Clients(), nil)
	const ttl = 400 * time.Millisecond
	l, err := c.Acquire(t.Context(), "watchdog", ttl, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * ttl)
	if err := l.Err(); err != nil {
		t.Fatalf("Err() = %v after 5 TTLs; want the watchdog to keep it", err)
	}
	key, _ := c.Keys("watchdog")
	for i := 0; i < 3; i++ {
		if got := cl.Client(i).Get(t.Context(), key).Val(); !strings.HasPrefix(got, l.Token()+".") {
			t.Errorf("node %d holds %q; want our token", i, got)
		}
	}
	// A majority goes away: the holder must be told by its deadline. (The
	// watchdog retries failed rounds until then: Stop takes a while.)
	fired := make(chan time.Time, 1)
	go func() { <-l.Done(); fired <- time.Now() }()
	for _, i := range []int{1, 2} {
		if err := cl.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	var at time.Time
	select {
	case at = <-fired:
	case <-time.After(5 * ttl):
		t.Fatalf("Done did not fire within 5 TTLs of losing the majority")
	}
	// An extend that was on its way while the nodes stopped may still have
	// moved the deadline; the signal must come no later than the deadline
	// the lock had when it was lost (timer slack aside).
	if late := at.Sub(l.ValidUntil()); late > 20*time.Millisecond {
		t.Errorf("Done fired %v after the deadline", late)
	}
	if !errors.Is(l.Err(), ErrLost) {
		t.Errorf("Err() = %v; want ErrLost", l.Err())
	}
	if err := l.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Errorf("Release = %v; want ErrLost", err)
	}
	if got := cl.Client(0).Exists(t.Context(), key).Val(); got != 0 {
		t.Errorf("node 0 still has the key after the lost lock was released")
	}
}

// autoLock acquires name for ttl with the watchdog on, or stops the test.
func autoLock(t testing.TB, c *Client, name string, ttl time.Duration) *Lock {
	t.Helper()
	l, err := c.Acquire(t.Context(), name, ttl, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatalf("Acquire(%q) with AutoExtend = %v", name, err)
	}
	return l
}

// failFor makes the first n fakes fail with err from now on, for d.
func failFor(fakes []*fakeNode, n int, d time.Duration) {
	for _, f := range fakes[:n] {
		f.set(func(f *fakeNode) { f.err = errors.New("connection refused") })
		time.AfterFunc(d, func() { f.set(func(f *fakeNode) { f.err = nil }) })
	}
}

func TestWatchdogSurvivesBlip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "blip", ttl)
		defer l.Release(context.Background())
		// A majority is unreachable for 300ms around the first extend (at 1s).
		time.Sleep(900 * time.Millisecond)
		failFor(fakes, 2, 300*time.Millisecond)
		time.Sleep(5 * ttl)
		if err := l.Err(); err != nil {
			t.Errorf("Err() = %v after a 300ms blip with 2s of the lease left; want the watchdog to retry and keep it", err)
		}
	})
}

func TestWatchdogLossKeepsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "cause", ttl)
		ctx := l.Context(t.Context())
		time.Sleep(900 * time.Millisecond)
		lostBy := l.ValidUntil()
		failFor(fakes, 2, time.Hour)
		<-l.Done()
		if now := time.Now(); now.After(lostBy) {
			t.Errorf("Done fired at %v, after the deadline %v", now, lostBy)
		}
		if now := time.Now(); now.Before(lostBy.Add(-ttl / 3)) {
			t.Errorf("Done fired at %v, long before the deadline %v: one failed round ended the lease", now, lostBy)
		}
		var qerr *QuorumError
		if !errors.As(l.Err(), &qerr) || qerr.Op != "extend" || !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v; want the failed extend's QuorumError, matching ErrLost", l.Err())
		}
		if cause := context.Cause(ctx); !errors.As(cause, &qerr) || !errors.Is(cause, ErrLost) {
			t.Errorf("Cause(ctx) = %v; want the failed extend's QuorumError", cause)
		}
		l.Release(context.Background())
	})
}

func TestWatchdogLosesAtOnceWhenMajorityNotOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "gone", ttl)
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { f.kv["redlock:{gone}"] = "someone-else.1" })
		}
		deadline := l.ValidUntil()
		<-l.Done()
		if now := time.Now(); !now.Before(deadline.Add(-ttl / 2)) {
			t.Errorf("Done fired at %v; want at the first extend (~1s), well before the deadline %v", now, deadline)
		}
		if !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v; want ErrLost", l.Err())
		}
		l.Release(context.Background())
	})
}
