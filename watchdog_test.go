package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

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
