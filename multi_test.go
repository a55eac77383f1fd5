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
