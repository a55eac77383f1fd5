package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of AcquireOptions.MaxHold: the cap on the watchdog.

// TestWatchdogMaxHoldEndsLock: the watchdog keeps the lock until an extend
// would reach past MaxHold, then stops; the lock ends at its deadline, no
// later than MaxHold after Acquire returned, and Err says the cap did it.
func TestWatchdogMaxHoldEndsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl, maxHold = 3 * time.Second, 10 * time.Second
		l, err := c.Acquire(t.Context(), "maxhold", ttl, &AcquireOptions{AutoExtend: true, MaxHold: maxHold})
		if err != nil {
			t.Fatal(err)
		}
		acquired := time.Now()
		ctx := l.Context(t.Context())
		time.Sleep(2 * ttl)
		if err := l.Err(); err != nil {
			t.Fatalf("Err() = %v after 2 TTLs of a MaxHold of %v; want the watchdog to keep the lock", err, maxHold)
		}
		<-l.Done()
		held := time.Since(acquired)
		if held > maxHold || held < maxHold-ttl/3-ttl/10 {
			t.Errorf("lock ended %v after Acquire returned; want by its MaxHold of %v, and less than one watchdog period before", held, maxHold)
		}
		err = l.Err()
		if !errors.Is(err, ErrLost) || !errors.Is(err, ErrMaxHold) || !strings.Contains(err.Error(), "raise AcquireOptions.MaxHold") {
			t.Errorf("Err() = %v; want an error matching ErrLost and ErrMaxHold that says to raise MaxHold", err)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, ErrMaxHold) {
			t.Errorf("Cause(lock context) = %v; want ErrMaxHold", cause)
		}
		// Extends ran until the cap: about MaxHold/(TTL/3) rounds, on every node.
		if n := fakes[0].count("extend"); n < 2 {
			t.Errorf("node 0 ran %d extends; want the watchdog's rounds until the cap", n)
		}
		if err := l.Release(t.Context()); !errors.Is(err, ErrMaxHold) {
			t.Errorf("Release after the cap = %v; want the loss, matching ErrMaxHold", err)
		}
	})
}

// TestWatchdogMaxHoldShorterThanTTL: a MaxHold that no extend fits in
// leaves the lock to its first deadline, without any extend.
func TestWatchdogMaxHoldShorterThanTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l, err := c.Acquire(t.Context(), "maxhold-short", ttl, &AcquireOptions{AutoExtend: true, MaxHold: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		deadline := l.ValidUntil()
		<-l.Done()
		if now := time.Now(); !now.Equal(deadline) {
			t.Errorf("lock ended at %v; want its first deadline %v", now, deadline)
		}
		if !errors.Is(l.Err(), ErrMaxHold) {
			t.Errorf("Err() = %v; want ErrMaxHold", l.Err())
		}
		for i, f := range fakes {
			if n := f.count("extend"); n != 0 {
				t.Errorf("node %d ran %d extends; want none", i, n)
			}
		}
	})
}

// TestDoMaxHold: Do's fn sees its context end at the cap, and Do's error
// says so.
func TestDoMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		err := c.Do(t.Context(), "maxhold-do", 3*time.Second, &AcquireOptions{MaxHold: 8 * time.Second}, func(ctx context.Context, l *Lock) error {
			<-ctx.Done() // a stuck critical section
			return context.Cause(ctx)
		})
		if !errors.Is(err, ErrMaxHold) || !errors.Is(err, ErrLost) {
			t.Errorf("Do with a stuck fn = %v; want ErrMaxHold and ErrLost", err)
		}
	})
}

// TestAcquireMaxHoldBadInput: a negative MaxHold, or one without the
// watchdog, is refused before anything is sent.
func TestAcquireMaxHoldBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		for _, o := range []AcquireOptions{
			{AutoExtend: true, MaxHold: -time.Second},
			{MaxHold: time.Minute},
		} {
			if _, err := c.Acquire(t.Context(), "maxhold-bad", time.Second, &o); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "MaxHold") {
				t.Errorf("Acquire with %+v = %v; want ErrInvalid naming MaxHold", o, err)
			}
		}
		if n := fakes[0].sent(); n != 0 {
			t.Errorf("node 0 was sent %d requests; want none", n)
		}
	})
}
