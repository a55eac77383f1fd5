package redlock

import (
	"context"
	"testing"
	"time"
)

func TestReleaseWakesWaiter(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	holder, err := c.Acquire(t.Context(), "wake", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's retry delay is an hour: only the release notice can
	// get it the lock within the test's time.
	hour := func(int) (time.Duration, bool) { return time.Hour, true }
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := c.Acquire(ctx, "wake", time.Minute, &AcquireOptions{Retry: hour})
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond) // the waiter has failed once and subscribed
	if err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter: %v; want the lock after the holder's release", err)
	}
}
