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

// waitDepth inspects name until a quorum of the nodes report depth waiters,
// and returns that state.
func waitDepth(t *testing.T, c *Client, name string, depth int) *LockState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := inspect(t, c, name)
		n := 0
		for _, ns := range st.Nodes {
			if ns.Depth == depth {
				n++
			}
		}
		if n == len(st.Nodes) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("Inspect(%q): depths %v after 10s; want %d on every node", name, depthsOf(st), depth)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func depthsOf(st *LockState) []int {
	var d []int
	for _, ns := range st.Nodes {
		d = append(d, ns.Depth)
	}
	return d
}

// TestInspectQueue: Inspect lists who waits, in order, on every node and
// merged, with each waiter's age; the holder's own entry, kept until its
// release, is not a waiter.
func TestInspectQueue(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	const name = "inspect-queue"
	holder := acquireFenced(t, c, name, time.Minute)
	// One waiter per Client: a Client's own calls of a name take turns
	// locally before they queue on the nodes.
	var clients []*Client
	got := make(chan *Lock, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	for i := range 2 {
		w := newTestClient(t, ns, nil)
		clients = append(clients, w)
		go func() {
			l, err := w.Acquire(ctx, name, time.Minute, nil)
			if err != nil {
				l = nil
			}
			got <- l
		}()
		waitDepth(t, c, name, i+1)
	}
	st := waitDepth(t, c, name, 2)
	if st.Answered != 3 || st.Depth != 2 || len(st.Waiters) != 2 || st.Head == nil || *st.Head != st.Waiters[0] {
		t.Fatalf("Inspect with 2 waiters: Answered %d Depth %d Waiters %+v Head %+v; want 3, 2, two waiters, the first the head",
			st.Answered, st.Depth, st.Waiters, st.Head)
	}
	for i, w := range st.Waiters {
		if w.Client != clients[i].waker.id || w.Nodes != 3 || w.Token == "" || w.Token == holder.Token() ||
			w.Since.Before(start.Add(-time.Second)) || w.Age < 0 || w.Age > 30*time.Second {
			t.Errorf("waiter %d = %+v; want client %s's call, on 3 nodes, waiting since the test began", i, w, clients[i].waker.id)
		}
	}
	for i, n := range st.Nodes {
		if n.Depth != 2 || len(n.Waiters) != 2 || n.Waiters[0].Token != st.Waiters[0].Token || n.Waiters[1].Token != st.Waiters[1].Token {
			t.Errorf("node %d: depth %d, waiters %+v; want the 2 waiters in order", i, n.Depth, n.Waiters)
		}
	}
	// The head wins at the release; its entry stays until its own release,
	// but it holds the lock: one waiter is left.
	first := st.Waiters[0].Token
	if err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil || l.Token() != first {
		t.Fatalf("after the release, the lock went to %v; want the head %s", l, first)
	}
	st = inspect(t, c, name)
	if st.Holder != first || st.Depth != 1 || len(st.Waiters) != 1 || st.Head.Token == first {
		t.Errorf("after the head won: Holder %q Depth %d Waiters %+v; want holder %s and the other waiter alone", st.Holder, st.Depth, st.Waiters, first)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l := <-got; l == nil {
		t.Fatal("the second waiter did not get the lock")
	} else if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	st = inspect(t, c, name)
	if st.Depth != 0 || len(st.Waiters) != 0 || st.Head != nil {
		t.Errorf("after every waiter won: Depth %d Waiters %+v; want none", st.Depth, st.Waiters)
	}
}

// TestInspectQueueBounded: a queue longer than MaxInspectWaiters is
// counted in full and listed in part, in order; expired entries (dead
// waiters not purged yet) are neither; nor is the holder's entry.
func TestInspectQueueBounded(t *testing.T) {
	ns := nodes(t, 1)
	c := newTestClient(t, ns, nil)
	const name = "inspect-bounded"
	k := c.keys(name)
	rdb := ns[0]
	ctx := t.Context()
	t.Cleanup(func() { rdb.Del(context.Background(), k.lock, k.queue, k.queueTimes) })
	now := time.Now()
	live := MaxInspectWaiters + 8
	rdb.Set(ctx, k.lock, "holder.1", time.Minute)
	// The holder's entry at the head, then dead entries, then live ones.
	add := func(entry string, prio time.Time, expiry time.Time) {
		rdb.ZAdd(ctx, k.queue, redis.Z{Score: float64(prio.UnixMicro()), Member: entry})
		rdb.ZAdd(ctx, k.queueTimes, redis.Z{Score: float64(expiry.UnixMilli()), Member: entry})
	}
	add("holder:cl0:60000:1", now.Add(-time.Hour), now.Add(time.Minute))
	for i := range 5 {
		add(fmt.Sprintf("dead%02d:cl1", i), now.Add(-time.Minute+time.Duration(i)*time.Second), now.Add(-time.Second))
	}
	for i := range live {
		add(fmt.Sprintf("w%02d:cl2:60000:1", i), now.Add(-time.Duration(live-i)*time.Second), now.Add(time.Minute))
	}
	st := inspect(t, c, name)
	n := st.Nodes[0]
	if n.Depth != live || len(n.Waiters) != MaxInspectWaiters || st.Depth != live || len(st.Waiters) != MaxInspectWaiters {
		t.Fatalf("node depth %d with %d listed, merged %d with %d; want %d with %d listed", n.Depth, len(n.Waiters), st.Depth, len(st.Waiters), live, MaxInspectWaiters)
	}
	for i, w := range n.Waiters {
		want := fmt.Sprintf("w%02d", i)
		age := time.Duration(live-i) * time.Second
		if w.Token != want || w.Client != "cl2" || w.Age < age-time.Second || w.Age > age+5*time.Second {
			t.Errorf("waiter %d = %+v; want %s of cl2, about %v old", i, w, want, age)
		}
	}
}

// TestInspectAnswered: Answered counts the nodes that answered, so that
// no answer reads as unknown, not free.
func TestInspectAnswered(t *testing.T) {
	var dead []redis.UniversalClient
	for i := range 3 {
		d := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1), MaxRetries: -1})
		defer d.Close()
		dead = append(dead, d)
	}
	c := newTestClient(t, dead, &Options{NodeTimeout: 200 * time.Millisecond})
	st := inspect(t, c, "inspect-answered")
	if st.Answered != 0 || st.Held || st.Free || st.Depth != 0 {
		t.Errorf("no node up: %+v; want 0 answered, neither held nor free", st)
	}
	c = newTestClient(t, append(nodes(t, 2), dead[0]), &Options{NodeTimeout: 200 * time.Millisecond})
	if st := inspect(t, c, "inspect-answered"); st.Answered != 2 || !st.Free {
		t.Errorf("2 of 3 up: Answered %d Free %v; want 2, free", st.Answered, st.Free)
	}
}
