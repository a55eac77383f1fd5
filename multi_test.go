package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of AcquireMulti on real Redis: all or nothing, exclusion with the
// plain locks both ways, a fence per name, bad input.

// multiNames returns n fresh names for test t.
func multiNames(t *testing.T, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%c", t.Name(), 'a'+i)
	}
	return names
}

// keysOfNames returns every key on node n that belongs to one of names,
// but the fence counters (which stay by design).
func keysOfNames(t testing.TB, n redis.UniversalClient, names []string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		ks, err := n.Keys(context.Background(), "*{"+name+"}*").Result()
		if err != nil {
			t.Fatalf("KEYS: %v", err)
		}
		for _, k := range ks {
			if !strings.HasSuffix(k, ":fence") {
				out = append(out, k)
			}
		}
	}
	return out
}

// assertNoKeysOf fails t if any node keeps a key of names (but a fence
// counter), once the deletes in flight have landed.
func assertNoKeysOf(t testing.TB, nodes []redis.UniversalClient, names []string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for i, n := range nodes {
		for {
			left := keysOfNames(t, n, names)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("node %d keeps %v; want no key but the fence counters", i, left)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// counters returns name's fence counter on each node ("" when absent).
func counters(t testing.TB, nodes []redis.UniversalClient, c *Client, name string) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		v, err := n.Get(context.Background(), c.keys(name).fence).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("GET: %v", err)
		}
		out[i] = v
	}
	return out
}

func TestMultiAcquireAllOrNothing(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		ns := nodes(t, n)
		c1, c2 := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
		names := multiNames(t, 3)
		ctx := t.Context()
		held, err := c1.Acquire(ctx, names[1], 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire(%q) = %v", names[1], err)
		}
		before := [][]string{counters(t, ns, c1, names[0]), counters(t, ns, c1, names[2])}

		// A try: refused, nothing written anywhere.
		if _, err := c2.TryAcquireMulti(ctx, names, 10*time.Second, nil); !errors.Is(err, ErrHeld) {
			t.Fatalf("TryAcquireMulti(%v) = %v; want ErrHeld", names, err)
		}
		free := []string{names[0], names[2]}
		assertNoKeysOf(t, ns, free)
		// A wait that gives up: it queued, and left every queue again.
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = c2.AcquireMulti(wctx, names, 10*time.Second, nil)
		cancel()
		if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AcquireMulti(%v) = %v; want ErrNotAcquired and DeadlineExceeded", names, err)
		}
		assertNoKeysOf(t, ns, free)
		after := [][]string{counters(t, ns, c1, names[0]), counters(t, ns, c1, names[2])}
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("fence counters of the free names went from %v to %v; want untouched", before, after)
		}

		// Once the name is free, the set takes every name on every node.
		if err := held.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		m, err := c2.AcquireMulti(ctx, []string{names[2], names[0], names[1]}, 10*time.Second, nil)
		if err != nil {
			t.Fatalf("AcquireMulti(%v) = %v", names, err)
		}
		if got := m.Names(); fmt.Sprint(got) != fmt.Sprint(names) {
			t.Errorf("Names() = %v; want %v (sorted)", got, names)
		}
		// (AcquireMulti returns at a quorum: the last nodes may answer later.)
		deadline := time.Now().Add(time.Second)
		for i, node := range ns {
			for _, name := range names {
				for {
					v, err := node.Get(ctx, c2.keys(name).lock).Result()
					if err == nil && strings.HasPrefix(v, m.Token()+".") {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("node %d: GET %s = %q, %v; want the set's value", i, name, v, err)
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
		if err := m.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		assertNoKeysOf(t, ns, names)
	})
}

func TestMultiExcludesPlain(t *testing.T) {
	ns := nodes(t, 3)
	c1, c2 := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	names := multiNames(t, 2)
	ctx := t.Context()

	// A set excludes the plain locks of its names.
	m, err := c1.AcquireMulti(ctx, names, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	for _, name := range names {
		if _, err := c2.TryAcquire(ctx, name, time.Second, nil); !errors.Is(err, ErrHeld) {
			t.Errorf("TryAcquire(%q) while the set holds it = %v; want ErrHeld", name, err)
		}
	}
	// A plain waiter on a name of the set gets it once the set is released
	// (the release hands the name on).
	got := make(chan error, 1)
	go func() {
		l, err := c2.Acquire(ctx, names[1], 10*time.Second, nil)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("Acquire(%q) returned %v while the set held it", names[1], err)
	default:
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Acquire(%q) after the set's release = %v", names[1], err)
	}

	// A plain lock excludes every set that has its name, and the set
	// writes nothing.
	l, err := c1.Acquire(ctx, names[0], 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := c2.TryAcquireMulti(ctx, names, time.Second, nil); !errors.Is(err, ErrHeld) {
		t.Errorf("TryAcquireMulti while %q is held = %v; want ErrHeld", names[0], err)
	}
	assertNoKeysOf(t, ns, names[1:])
	// A set waiting behind it gets the set when it is released.
	go func() {
		m, err := c2.AcquireMulti(ctx, names, 10*time.Second, nil)
		if err == nil {
			err = m.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("AcquireMulti after the plain lock's release = %v", err)
	}
	assertNoKeysOf(t, ns, names)
}

func TestMultiFencesPerName(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	names := multiNames(t, 2)
	ctx := t.Context()
	plain := func(name string) uint64 {
		t.Helper()
		l, err := c.Acquire(ctx, name, time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire(%q) = %v", name, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		return l.Fence()
	}
	a0 := plain(names[0])
	for range 3 {
		a0 = plain(names[0])
	}
	b0 := plain(names[1])
	m, err := c.AcquireMulti(ctx, names, time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	fa, fb := m.Fence(names[0]), m.Fence(names[1])
	if fa <= a0 || fb <= b0 {
		t.Errorf("set's fences %d, %d; want above the plain locks' %d, %d", fa, fb, a0, b0)
	}
	if got := m.Fences(); len(got) != 2 || got[0] != fa || got[1] != fb {
		t.Errorf("Fences() = %v; want [%d %d]", got, fa, fb)
	}
	if m.Fence("not-in-the-set") != 0 {
		t.Errorf("Fence of a name not in the set = %d; want 0", m.Fence("not-in-the-set"))
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if a1, b1 := plain(names[0]), plain(names[1]); a1 <= fa || b1 <= fb {
		t.Errorf("plain fences after the set %d, %d; want above the set's %d, %d", a1, b1, fa, fb)
	}
	// Fencing off: every fence 0.
	m, err = c.AcquireMulti(ctx, names, time.Second, &AcquireOptions{NoFence: true})
	if err != nil {
		t.Fatalf("AcquireMulti(NoFence) = %v", err)
	}
	if got := m.Fences(); got[0] != 0 || got[1] != 0 {
		t.Errorf("Fences() without fencing = %v; want zeros", got)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func TestMultiBadInput(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	names := multiNames(t, 2)
	many := make([]string, MaxSetNames+1)
	for i := range many {
		many[i] = fmt.Sprintf("%s-%d", t.Name(), i)
	}
	for _, tc := range []struct {
		what  string
		names []string
		opts  *AcquireOptions
	}{
		{"no names", nil, nil},
		{"empty name", []string{names[0], ""}, nil},
		{"a name twice", []string{names[0], names[1], names[0]}, nil},
		{"too many names", many, nil},
		{"a brace", []string{names[0], "x{y"}, nil},
		{"a semaphore's slot", []string{names[0], "sem:permit:1"}, nil},
		{"a semaphore's gate", []string{names[0], "sem:permits"}, nil},
		{"metadata", names, &AcquireOptions{Metadata: "job"}},
		{"re-entrant", names, &AcquireOptions{Reentrant: true}},
		{"MaxHold without AutoExtend", names, &AcquireOptions{MaxHold: time.Second}},
	} {
		if _, err := c.AcquireMulti(ctx, tc.names, time.Second, tc.opts); !errors.Is(err, ErrInvalid) {
			t.Errorf("AcquireMulti with %s = %v; want ErrInvalid", tc.what, err)
		}
		if _, err := c.TryAcquireMulti(ctx, tc.names, time.Second, tc.opts); !errors.Is(err, ErrInvalid) {
			t.Errorf("TryAcquireMulti with %s = %v; want ErrInvalid", tc.what, err)
		}
	}
	if _, err := c.TryAcquireMulti(ctx, names, time.Second, &AcquireOptions{Retry: DefaultRetry()}); !errors.Is(err, ErrInvalid) {
		t.Errorf("TryAcquireMulti with a retrying policy = %v; want ErrInvalid", err)
	}
	var nilCtx context.Context
	if _, err := c.AcquireMulti(nilCtx, names, time.Second, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("AcquireMulti with a nil ctx = %v; want ErrInvalid", err)
	}
	if _, err := c.TryAcquireMulti(nilCtx, names, time.Second, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("TryAcquireMulti with a nil ctx = %v; want ErrInvalid", err)
	}
	if _, err := c.AcquireMulti(ctx, names, 0, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("AcquireMulti with TTL 0 = %v; want ErrInvalid", err)
	}
	for i, n := range ns {
		for _, name := range append(many, names...) {
			if got, _ := n.Exists(ctx, c.keys(name).lock, c.keys(name).fence).Result(); got != 0 {
				t.Errorf("node %d: %d keys of %q after bad input; want none", i, got, name)
			}
		}
	}
}

// TestMultiInspect: a name held as part of a set says so, with the set's
// size; a plain lock's does not.
func TestMultiInspect(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	names := multiNames(t, 3)
	m, err := c.AcquireMulti(ctx, names, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	st, err := c.Inspect(ctx, names[1])
	if err != nil {
		t.Fatalf("Inspect = %v", err)
	}
	if !st.Held || st.Holder != m.Token() || st.Set != 3 {
		t.Errorf("Inspect(%q) = held %v, holder %q, set %d; want held by %q, set 3", names[1], st.Held, st.Holder, st.Set, m.Token())
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	l, err := c.Acquire(ctx, names[1], 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	defer l.Release(ctx)
	if st, err := c.Inspect(ctx, names[1]); err != nil || st.Set != 0 {
		t.Errorf("Inspect of a plain lock: set %d, %v; want 0", st.Set, err)
	}
}

// TestMultiKeysAsLocks: a set's keys are its names' lock and fence keys.
func TestMultiKeysAsLocks(t *testing.T) {
	c := newTestClient(t, nodes(t, 1), &Options{KeyPrefix: "p:"})
	ls := c.newMultiLease([]string{"x", "y"}, time.Second, true)
	for i, name := range []string{"x", "y"} {
		if k := c.keys(name); ls.multi.locks[i] != k.lock || ls.multi.fence[i] != k.fence {
			t.Errorf("set keys of %q = %q, %q; want %q, %q", name, ls.multi.locks[i], ls.multi.fence[i], k.lock, k.fence)
		}
	}
}

// TestMultiRedisErrors: a corrupt fence counter or a lock key of another
// type on one name fails the set on every node with the node's error, and
// leaves no lock key of any name behind.
func TestMultiRedisErrors(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	for _, tc := range []struct {
		what  string
		setup func(k keys) error
		want  string
	}{
		{"corrupt counter", func(k keys) error {
			for _, n := range ns {
				if err := n.Set(ctx, k.fence, "not-a-number", 0).Err(); err != nil {
					return err
				}
			}
			return nil
		}, "BADCOUNTER"},
		{"lock key of another type", func(k keys) error {
			for _, n := range ns {
				if err := n.RPush(ctx, k.lock, "x").Err(); err != nil {
					return err
				}
			}
			return nil
		}, "WRONGTYPE"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			names := multiNames(t, 3)
			bad := c.keys(names[1])
			if err := tc.setup(bad); err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, n := range ns {
					n.Del(context.Background(), bad.lock, bad.fence)
				}
			}()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := c.AcquireMulti(wctx, names, time.Second, nil)
			if err == nil || errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AcquireMulti over a %s = %v; want an error naming %s", tc.what, err, tc.want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("AcquireMulti over a %s waited for its context; want it to give up at once: %v", tc.what, err)
			}
			for i, n := range ns {
				for _, name := range []string{names[0], names[2]} {
					if got := n.Exists(ctx, c.keys(name).lock).Val(); got != 0 {
						t.Errorf("node %d: lock key of %q left behind", i, name)
					}
				}
			}
		})
	}
}

// TestMultiLeaseEnds: the set's lease is one: kept by AutoExtend while
// every name is held, lost (Done, Err matching ErrLost) once one name is
// taken away, and ended at its deadline without AutoExtend.
func TestMultiLeaseEnds(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	names := multiNames(t, 2)
	m, err := c.AcquireMulti(ctx, names, 600*time.Millisecond, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := m.Err(); err != nil {
		t.Fatalf("Err() after 2.5 TTLs under AutoExtend = %v; want held", err)
	}
	if _, err := c.ForceRelease(ctx, names[1]); err != nil {
		t.Fatalf("ForceRelease = %v", err)
	}
	select {
	case <-m.Done():
	case <-time.After(3 * time.Second):
		t.Fatalf("Done not closed after one name of the set was taken away")
	}
	if !errors.Is(m.Err(), ErrLost) {
		t.Errorf("Err() = %v; want ErrLost", m.Err())
	}
	_ = m.Release(ctx)

	m, err = c.AcquireMulti(ctx, names, 300*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	mctx := m.Context(ctx)
	select {
	case <-mctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatalf("the set's Context not done after its deadline")
	}
	if !errors.Is(context.Cause(mctx), ErrLost) || time.Now().Before(m.ValidUntil()) {
		t.Errorf("Context cause %v at %v (deadline %v); want ErrLost after the deadline", context.Cause(mctx), time.Now(), m.ValidUntil())
	}
	assertNoKeysOf(t, ns, names) // expired with their TTL: nothing stays but the counters
}

// TestMultiFenceWriteBack: when one name's counters diverged, the set's
// fence for it is the largest its quorum returned, and a quorum holds it
// afterwards (already, or by the write-back, as for a lock), so that a
// later plain lock of that name gets a larger fence through any quorum.
// Counters 100, 100, 5: every quorum meets a 100, so the fence is 101;
// through nodes 0 and 1 no write-back is needed, through 2 and another it
// is.
func TestMultiFenceWriteBack(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	names := multiNames(t, 2)
	fk := c.keys(names[1]).fence
	for i, v := range []string{"100", "100", "5"} {
		if err := ns[i].Set(ctx, fk, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.AcquireMulti(ctx, names, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	if got := m.Fence(names[1]); got != 101 {
		t.Errorf("Fence(%q) = %d; want 101, the largest counter after its INCR", names[1], got)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	atLeast := 0
	for _, n := range ns {
		if v, _ := n.Get(ctx, fk).Int64(); v >= 101 {
			atLeast++
		}
	}
	if atLeast < 2 {
		t.Errorf("%d nodes hold the counter at 101 or more; want a quorum (the write-back)", atLeast)
	}
	// A plain lock through the two nodes that had diverged gets more.
	pc := newTestClient(t, ns[1:], nil)
	l, err := pc.Acquire(ctx, names[1], time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	if l.Fence() <= 101 {
		t.Errorf("plain fence after the set = %d; want above 101", l.Fence())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}

	// The write-back for certain: counters 200 and 5 on the two live nodes
	// of three (the third never answers), so the quorum is those two and
	// only one of them returns the fence.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer dead.Close()
	wc := newTestClient(t, []redis.UniversalClient{ns[0], ns[1], dead}, nil)
	for i, v := range []string{"200", "5"} {
		if err := ns[i].Set(ctx, fk, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	m, err = wc.AcquireMulti(ctx, names, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireMulti with a dead node = %v", err)
	}
	defer m.Release(ctx)
	if got := m.Fence(names[1]); got != 201 {
		t.Errorf("Fence(%q) = %d; want 201", names[1], got)
	}
	if v, _ := ns[1].Get(ctx, fk).Int64(); v < 201 {
		t.Errorf("node 1's counter = %d after the set's write-back; want 201 or more", v)
	}
}
