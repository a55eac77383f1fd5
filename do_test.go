package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestDoReleasesOnReturnAndPanic(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "do-returns"
	key, _ := c.Keys(name)
	ran := false
	err := c.Do(t.Context(), name, time.Second, nil, func(ctx context.Context, l *Lock) error {
		ran = ctx.Err() == nil && l.Err() == nil && l.Name() == name
		return nil
	})
	if err != nil || !ran {
		t.Errorf("Do = %v (ran %v); want nil after running fn under the lock", err, ran)
	}
	assertNoLockKey(t, nodes(t, 3), key)

	boom := errors.New("fn failed")
	err = c.Do(t.Context(), name, time.Second, nil, func(context.Context, *Lock) error { return boom })
	if !errors.Is(err, boom) || errors.Is(err, ErrLost) {
		t.Errorf("Do with a failing fn = %v; want fn's error, not ErrLost", err)
	}
	assertNoLockKey(t, nodes(t, 3), key)

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v; want fn's panic to go on", r)
			}
		}()
		c.Do(t.Context(), name, time.Second, &AcquireOptions{Reentrant: true}, func(context.Context, *Lock) error { panic("boom") })
	}()
	assertNoLockKey(t, nodes(t, 3), key)
}

func TestDoCancelsOnLoss(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	c := newTestClient(t, cl.Clients(), &Options{NodeTimeout: 200 * time.Millisecond})
	name := "do-lost"
	started := make(chan struct{})
	var cause error
	errc := make(chan error, 1)
	go func() {
		errc <- c.Do(context.Background(), name, time.Second, nil, func(ctx context.Context, l *Lock) error {
			close(started)
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return ctx.Err()
			case <-time.After(30 * time.Second):
				return errors.New("fn ran on: its context was not cancelled")
			}
		})
	}()
	<-started
	for _, i := range []int{1, 2} {
		if err := cl.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	err := <-errc
	if !errors.Is(err, ErrLost) || !errors.Is(err, context.Canceled) {
		t.Errorf("Do after the majority stopped = %v; want ErrLost joined with fn's context.Canceled", err)
	}
	if !errors.Is(cause, ErrLost) {
		t.Errorf("fn's context cause = %v; want ErrLost", cause)
	}
	key, _ := c.Keys(name)
	assertNoLockKey(t, cl.Clients()[:1], key)
}
