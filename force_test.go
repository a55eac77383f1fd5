package redlock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestForceRelease(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "force-release"
	key, fenceKey := c.Keys(name)
	l := reentrant(t, c, name, time.Minute, "stuck job")
	if _, err := l.Reenter(t.Context(), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.ForceRelease(t.Context(), name)
	if err != nil {
		t.Fatalf("ForceRelease = %v", err)
	}
	for i, b := range got {
		if !b.Deleted || b.Token != l.Token() || !b.Reentrant || b.Err != nil || b.Node != i {
			t.Errorf("node %d: %+v; want the re-entrant lock of %q deleted", i, b, l.Token())
		}
	}
	assertNoLockKey(t, nodes(t, 3), key)
	for i, nd := range nodes(t, 3) {
		if v, _ := nd.Get(t.Context(), fenceKey).Uint64(); v < l.Fence() {
			t.Errorf("node %d: fence counter %d after ForceRelease; want it kept (>= %d)", i, v, l.Fence())
		}
	}
	if err := l.Extend(t.Context(), time.Minute); !errors.Is(err, ErrLost) {
		t.Errorf("the broken holder's Extend = %v; want ErrLost", err)
	}
	next, err := c.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry()})
	if err != nil {
		t.Fatalf("Acquire after ForceRelease = %v", err)
	}
	if next.Fence() <= l.Fence() {
		t.Errorf("fence after the break %d; want above the broken holder's %d", next.Fence(), l.Fence())
	}
	next.Release(t.Context())
	// Nothing there: nothing deleted, no error.
	got, err = c.ForceRelease(t.Context(), name)
	if err != nil || got[0].Deleted {
		t.Errorf("ForceRelease of a free lock = %+v, %v; want nothing deleted", got, err)
	}
}

func TestForceReleaseWakesWaiter(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "force-release-wakes"
	key, _ := c.Keys(name)
	held, err := c.Acquire(t.Context(), name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	waiter := newTestClient(t, nodes(t, 3), nil)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		l, err := waiter.Acquire(ctx, name, time.Second, nil)
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond) // the waiter queues
	if _, err := c.ForceRelease(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter after ForceRelease = %v; want the lock (a TTL of 1m left would have made it time out)", err)
	}
	assertNoLockKey(t, nodes(t, 3), key)
}
