package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

func inspect(t *testing.T, c *Client, name string) *LockState {
	t.Helper()
	st, err := c.Inspect(t.Context(), name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	return st
}

func TestInspectHeldFreeAndPartly(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	for _, reent := range []bool{false, true} {
		name := fmt.Sprintf("inspect-%v", reent)
		key, _ := c.Keys(name)
		meta := ""
		if reent {
			meta = "host-a:4242:job-7"
		}
		l, err := c.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Reentrant: reent, Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		holds := 1
		if reent {
			if _, err := l.Reenter(t.Context(), 10*time.Second, nil); err != nil {
				t.Fatal(err)
			}
			holds = 2
		}
		wantHolds(t, c, name, holds) // the last node's answer has landed
		st := inspect(t, c, name)
		if !st.Held || st.Free || st.Holder != l.Token() || st.HeldOn != 3 || st.Quorum != 2 {
			t.Errorf("%s held: Held %v Free %v Holder %q on %d; want held by %q on 3", name, st.Held, st.Free, st.Holder, st.HeldOn, l.Token())
		}
		for i, ns := range st.Nodes {
			if !ns.Reachable || ns.Err != nil || !ns.Held || ns.Token != l.Token() || ns.Reentrant != reent ||
				ns.Metadata != meta || ns.Holds != holds || ns.TTL <= 0 || ns.TTL > 10*time.Second || ns.Fence < l.Fence() || ns.Addr == "" {
				t.Errorf("%s node %d: %+v; want held by %q, metadata %q, %d holds, TTL in (0,10s], fence >= %d",
					name, i, ns, l.Token(), meta, holds, l.Fence())
			}
		}
		// The key on one node of three: a minority holds it; a quorum is free.
		deleteOn(t, nodes(3), key, 0, 1)
		st = inspect(t, c, name)
		if st.Held || !st.Free || st.Holder != l.Token() || st.HeldOn != 1 {
			t.Errorf("%s partly held: Held %v Free %v Holder %q on %d; want a free quorum and the holder on 1", name, st.Held, st.Free, st.Holder, st.HeldOn)
		}
		deleteOn(t, nodes(3), key, 2)
		st = inspect(t, c, name)
		if st.Held || !st.Free || st.Holder != "" || st.HeldOn != 0 {
			t.Errorf("%s free: %+v; want free, no holder", name, st)
		}
		for i, ns := range st.Nodes {
			if ns.Held || ns.Token != "" || ns.Fence < l.Fence() {
				t.Errorf("%s free, node %d: %+v; want no holder and the counter kept", name, i, ns)
			}
		}
		l.Release(t.Context())
		assertNoLockKey(t, nodes(3), key)
	}
}

func TestInspectUnreachableAndSplit(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer dead.Close()
	ns := append(append([]redis.UniversalClient{}, nodes(2)...), dead)
	c := newTestClient(t, ns, &Options{NodeTimeout: 500 * time.Millisecond})
	name := "inspect-unreachable"
	key, _ := c.Keys(name)
	st := inspect(t, c, name)
	if st.Nodes[2].Reachable || st.Nodes[2].Err == nil || !st.Free || st.Held {
		t.Errorf("with node 2 unreachable: %+v; want node 2 unreachable and the lock free on the other two", st)
	}
	// One node holds it, one is free, one is down: neither held nor free.
	nodes(1)[0].Set(t.Context(), key, "someoneX.1", time.Minute)
	defer nodes(1)[0].Del(context.Background(), key)
	st = inspect(t, c, name)
	if st.Held || st.Free || st.Holder != "someoneX" {
		t.Errorf("split: Held %v Free %v Holder %q; want unknown (neither) with holder someoneX", st.Held, st.Free, st.Holder)
	}
	// A key that is not a lock is that node's error, not a holder.
	nodes(2)[1].RPush(t.Context(), key, "x")
	defer nodes(2)[1].Del(context.Background(), key)
	st = inspect(t, c, name)
	if !st.Nodes[1].Reachable || st.Nodes[1].Err == nil || !strings.Contains(st.Nodes[1].Err.Error(), "not a lock") {
		t.Errorf("node 1 with a list: %+v; want reachable with an error saying it is not a lock", st.Nodes[1])
	}
}

func TestForceRelease(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
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
	assertNoLockKey(t, nodes(3), key)
	for i, nd := range nodes(3) {
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
	c := newTestClient(t, nodes(3), nil)
	name := "force-release-wakes"
	key, _ := c.Keys(name)
	held, err := c.Acquire(t.Context(), name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	waiter := newTestClient(t, nodes(3), nil)
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
	assertNoLockKey(t, nodes(3), key)
}

func TestDoReleasesOnReturnAndPanic(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	name := "do-returns"
	key, _ := c.Keys(name)
	ran := false
	err := c.Do(t.Context(), name, time.Second, func(ctx context.Context, l *Lock) error {
		ran = ctx.Err() == nil && l.Err() == nil && l.Name() == name
		return nil
	}, nil)
	if err != nil || !ran {
		t.Errorf("Do = %v (ran %v); want nil after running fn under the lock", err, ran)
	}
	assertNoLockKey(t, nodes(3), key)

	boom := errors.New("fn failed")
	err = c.Do(t.Context(), name, time.Second, func(context.Context, *Lock) error { return boom }, nil)
	if !errors.Is(err, boom) || errors.Is(err, ErrLost) {
		t.Errorf("Do with a failing fn = %v; want fn's error, not ErrLost", err)
	}
	assertNoLockKey(t, nodes(3), key)

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v; want fn's panic to go on", r)
			}
		}()
		c.Do(t.Context(), name, time.Second, func(context.Context, *Lock) error { panic("boom") }, &AcquireOptions{Reentrant: true})
	}()
	assertNoLockKey(t, nodes(3), key)
}

func TestDoCancelsOnLoss(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	c := newTestClient(t, cl.Clients(), &Options{NodeTimeout: 200 * time.Millisecond})
	name := "do-lost"
	started := make(chan struct{})
	var cause error
	errc := make(chan error, 1)
	go func() {
		errc <- c.Do(context.Background(), name, time.Second, func(ctx context.Context, l *Lock) error {
			close(started)
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return ctx.Err()
			case <-time.After(30 * time.Second):
				return errors.New("fn ran on: its context was not cancelled")
			}
		}, nil)
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
