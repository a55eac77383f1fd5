package redlock

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	c := newTestClient(t, nodes(t, 3), nil)
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
		deleteOn(t, nodes(t, 3), key, 0, 1)
		st = inspect(t, c, name)
		if st.Held || !st.Free || st.Holder != l.Token() || st.HeldOn != 1 {
			t.Errorf("%s partly held: Held %v Free %v Holder %q on %d; want a free quorum and the holder on 1", name, st.Held, st.Free, st.Holder, st.HeldOn)
		}
		deleteOn(t, nodes(t, 3), key, 2)
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
		assertNoLockKey(t, nodes(t, 3), key)
	}
}

func TestInspectUnreachableAndSplit(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer dead.Close()
	ns := append(append([]redis.UniversalClient{}, nodes(t, 2)...), dead)
	c := newTestClient(t, ns, &Options{NodeTimeout: 500 * time.Millisecond})
	name := "inspect-unreachable"
	key, _ := c.Keys(name)
	st := inspect(t, c, name)
	if st.Nodes[2].Reachable || st.Nodes[2].Err == nil || !st.Free || st.Held {
		t.Errorf("with node 2 unreachable: %+v; want node 2 unreachable and the lock free on the other two", st)
	}
	// One node holds it, one is free, one is down: neither held nor free.
	nodes(t, 1)[0].Set(t.Context(), key, "someoneX.1", time.Minute)
	defer nodes(t, 1)[0].Del(context.Background(), key)
	st = inspect(t, c, name)
	if st.Held || st.Free || st.Holder != "someoneX" {
		t.Errorf("split: Held %v Free %v Holder %q; want unknown (neither) with holder someoneX", st.Held, st.Free, st.Holder)
	}
	// A key that is not a lock is that node's error, not a holder.
	nodes(t, 2)[1].RPush(t.Context(), key, "x")
	defer nodes(t, 2)[1].Del(context.Background(), key)
	st = inspect(t, c, name)
	if !st.Nodes[1].Reachable || st.Nodes[1].Err == nil || !strings.Contains(st.Nodes[1].Err.Error(), "not a lock") {
		t.Errorf("node 1 with a list: %+v; want reachable with an error saying it is not a lock", st.Nodes[1])
	}
}
