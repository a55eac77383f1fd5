package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

func TestFencedStores(t *testing.T) {
	mem := guardtest.NewMemStore(true)
	t.Run("memory", func(t *testing.T) { testStore(t, mem, "memory") })
	if n := mem.Overlaps(); n != 0 {
		t.Errorf("guard.InProcess ran %d accesses of one resource at once; want 0", n)
	}
	t.Run("redis", func(t *testing.T) { testStore(t, guardtest.NewRedisStore(storeNode(t), true), "redis") })
	t.Run("postgres", func(t *testing.T) {
		db := startPostgres(t)
		if _, err := db.ExecContext(t.Context(), guardtest.SQLStoreTable); err != nil {
			t.Fatalf("CREATE TABLE: %v", err)
		}
		testStore(t, guardtest.NewSQLStore(db), "postgres")
		t.Run("Errors", func(t *testing.T) { testSQLErrors(t, db) })
	})
}

// testStore runs the scenarios on the store s named name.
func testStore(t *testing.T, s guardtest.Store, name string) {
	t.Run("StaleWriteRejected", func(t *testing.T) { testStaleWriteRejected(t, s) })
	t.Run("Owners", func(t *testing.T) { testOwners(t, s) })
	t.Run("StaleReadRejected", func(t *testing.T) { testStaleReadRejected(t, s) })
	t.Run("FencedReadThenStaleWrite", func(t *testing.T) { testFencedReadThenStaleWrite(t, s) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, s) })
	t.Run("ExpiredHolder", func(t *testing.T) { testExpiredHolder(t, s, "guard-"+name) })
}

func testStaleWriteRejected(t *testing.T, s guardtest.Store) {
	const res = "stale-write"
	s.Create(t, res)
	steps := []struct {
		fence     uint64
		value     string
		wantStale bool
	}{
		{5, "a", false},
		{3, "b", true},
		{5, "c", false}, // the same holder writes again
		{5, "d", false},
		{9, "e", false},
		{10, "f", false}, // compared as numbers, not text
		{9, "g", true},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		err := s.Write(t.Context(), res, holderAt(st.fence), st.value)
		op := fmt.Sprintf("write(%q, fence %d)", st.value, st.fence)
		if st.wantStale {
			assertStale(t, op, err, res, st.fence, highest)
		} else {
			if err != nil {
				t.Errorf("%s = %v; want nil", op, err)
			}
			value, highest = st.value, st.fence
		}
		assertStored(t, s, res, value, highest)
	}
}

// Two holders with different tokens at the same fence (two overlapping holds
// that got the same fence): the first to reach the store keeps it, the
// other is rejected, reads and writes, and changes nothing. Before guards
// recorded the owner, both were accepted. The same holder still rewrites at
// its own fence, and fence 0 is refused without recording anything.
func testOwners(t *testing.T, s guardtest.Store) {
	const res = "owners"
	s.Create(t, res)
	a, b, c := guard.HolderOf(7, "token-a"), guard.HolderOf(7, "token-b"), guard.HolderOf(6, "token-c")
	zero := guard.HolderOf(0, "token-z")

	// A fence 0 on a fresh resource records nothing.
	assertNoFence(t, "write(fence 0)", s.Write(t.Context(), res, zero, "z"), res)
	v, err := s.Read(t.Context(), res, zero)
	assertNoFence(t, "read(fence 0)", err, res)
	if v != "" {
		t.Errorf("read(fence 0) returned %q; want nothing", v)
	}
	assertStored(t, s, res, "", 0)

	steps := []struct {
		who   string
		h     guard.Holder
		read  bool // a fenced read instead of a write
		value string
		want  guardOutcome
	}{
		{"a", a, false, "a1", accepted},
		{"b", b, false, "b1", tie}, // the bug: accepted before
		{"b", b, true, "", tie},
		{"a", a, false, "a2", accepted}, // the same holder writes again
		{"a", a, true, "a2", accepted},
		{"c", c, false, "c1", stale},
		{"z", zero, false, "z1", noFence0},
		{"b", guard.HolderOf(8, "token-b"), true, "a2", accepted}, // b again, with a higher fence
		{"a", a, false, "a3", stale},
		{"b", guard.HolderOf(8, "token-b"), false, "b2", accepted},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		op := fmt.Sprintf("%s's write(%q, fence %d)", st.who, st.value, st.h.Fence())
		var err error
		if st.read {
			op = fmt.Sprintf("%s's read(fence %d)", st.who, st.h.Fence())
			var v string
			v, err = s.Read(t.Context(), res, st.h)
			want := "" // nothing read unless accepted
			if st.want == accepted {
				want = value
			}
			if v != want {
				t.Errorf("%s returned %q; want %q", op, v, want)
			}
		} else {
			err = s.Write(t.Context(), res, st.h, st.value)
		}
		assertOutcome(t, op, err, st.want, res, st.h.Fence(), highest)
		if st.want == accepted {
			highest = st.h.Fence()
			if !st.read {
				value = st.value
			}
		}
		assertStored(t, s, res, value, highest)
	}
}

func testStaleReadRejected(t *testing.T, s guardtest.Store) {
	const res = "stale-read"
	s.Create(t, res)
	if err := s.Write(t.Context(), res, holderAt(4), "x"); err != nil {
		t.Fatalf("write(fence 4) = %v", err)
	}
	v, err := s.Read(t.Context(), res, holderAt(2))
	assertStale(t, "read(fence 2)", err, res, 2, 4)
	if v != "" {
		t.Errorf("read(fence 2) returned %q; want nothing", v)
	}
	for _, f := range []uint64{4, 6} {
		if v, err := s.Read(t.Context(), res, holderAt(f)); v != "x" || err != nil {
			t.Errorf("read(fence %d) = %q, %v; want %q, nil", f, v, err, "x")
		}
	}
	assertStored(t, s, res, "x", 6) // the read recorded its fence
}

// A stale holder A read before the newer holder B; B reads too. A's write
// must now be rejected, though nobody has written with B's fence yet:
// otherwise B's write, computed from what B read, would overwrite A's.
func testFencedReadThenStaleWrite(t *testing.T, s guardtest.Store) {
	const res = "read-modify-write"
	s.Create(t, res)
	if err := s.Write(t.Context(), res, holderAt(1), "0"); err != nil {
		t.Fatalf("write(fence 1) = %v", err)
	}
	const a, b = 1, 2
	for _, f := range []uint64{a, b} {
		if v, err := s.Read(t.Context(), res, holderAt(f)); v != "0" || err != nil {
			t.Fatalf("read(fence %d) = %q, %v; want %q, nil", f, v, err, "0")
		}
	}
	assertStale(t, "A's write(fence 1) after B's read(fence 2)", s.Write(t.Context(), res, holderAt(a), "1"), res, a, b)
	if err := s.Write(t.Context(), res, holderAt(b), "1"); err != nil {
		t.Errorf("B's write(fence 2) = %v; want nil", err)
	}
	assertStored(t, s, res, "1", b)
}

// Writers with random fences race; the stored fence never goes down, every
// write with the largest fence is accepted, and the store ends with the
// largest fence and a value written with it.
func testConcurrentWriters(t *testing.T, s guardtest.Store) {
	const res = "concurrent"
	s.Create(t, res)
	const writers, writes = 16, 8
	type result struct {
		fence uint64
		value string
		err   error
	}
	var (
		results = make(chan result, writers*writes)
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The watcher samples the stored fence until the writers are done.
	stop := make(chan struct{})
	watcherErr := make(chan error, 1)
	go func() {
		var last uint64
		for {
			_, f, err := s.Stored(ctx, res)
			if err == nil && f < last {
				err = fmt.Errorf("stored fence went down from %d to %d", last, f)
			}
			if err != nil {
				watcherErr <- err
				return
			}
			last = f
			select {
			case <-stop:
				watcherErr <- nil
				return
			default:
			}
		}
	}()

	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				f := 1 + rand.Uint64N(40)
				v := fmt.Sprintf("w%d-%d-f%d", w, i, f)
				results <- result{f, v, s.Write(ctx, res, holderAt(f), v)}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-watcherErr; err != nil {
		t.Errorf("watcher: %v", err)
	}
	close(results)

	var maxTried, maxAccepted uint64
	withMax := map[string]bool{} // values written with the largest fence
	var all []result
	for r := range results {
		all = append(all, r)
		maxTried = max(maxTried, r.fence)
		switch {
		case r.err == nil:
			maxAccepted = max(maxAccepted, r.fence)
		case !errors.Is(r.err, guard.ErrStaleFence):
			t.Errorf("write(%q, fence %d) = %v; want nil or guard.ErrStaleFence", r.value, r.fence, r.err)
		}
	}
	for _, r := range all {
		if r.fence == maxTried {
			withMax[r.value] = true
			if r.err != nil {
				t.Errorf("write(%q, fence %d) = %v; want nil: no fence was higher", r.value, r.fence, r.err)
			}
		}
	}
	v, f, err := s.Stored(t.Context(), res)
	if err != nil {
		t.Fatalf("stored: %v", err)
	}
	if f != maxAccepted || f != maxTried {
		t.Errorf("stored fence = %d; want %d, the largest accepted and tried", f, maxAccepted)
	}
	if !withMax[v] {
		t.Errorf("stored value = %q; want one written with fence %d", v, f)
	}
}

// A real lock: holder A's lease ends on the nodes (as after a long pause),
// B acquires it and reads; A, still believing it holds the lock, writes:
// rejected, and B's write goes through.
func testExpiredHolder(t *testing.T, s guardtest.Store, name string) {
	const res = "expired-holder"
	s.Create(t, res)
	// Two clients, as two processes: one client queues its own Acquire
	// calls of a name until the earlier lock ends locally.
	ca, cb := newTestClient(t, nodes(t, 3)), newTestClient(t, nodes(t, 3))
	key, _ := ca.Keys(name)
	a, err := ca.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire a = %v", err)
	}
	defer a.Release(t.Context())
	if err := s.Write(t.Context(), res, a, "a1"); err != nil {
		t.Fatalf("a's write(fence %d) = %v; want nil", a.Fence(), err)
	}
	for _, nd := range nodes(t, 3) {
		nd.PExpire(t.Context(), key, time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	b, err := cb.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire b = %v", err)
	}
	defer b.Release(t.Context())
	if b.Fence() <= a.Fence() {
		t.Fatalf("b.Fence() = %d; want more than a's %d", b.Fence(), a.Fence())
	}
	if v, err := s.Read(t.Context(), res, b); v != "a1" || err != nil {
		t.Fatalf("b's read(fence %d) = %q, %v; want %q, nil", b.Fence(), v, err, "a1")
	}
	if a.Err() != nil {
		t.Fatalf("a.Err() = %v; want nil (a still believes it holds the lock)", a.Err())
	}
	err = s.Write(t.Context(), res, a, "a2")
	assertStale(t, fmt.Sprintf("a's write(fence %d) after b's read", a.Fence()), err, res, a.Fence(), b.Fence())
	if err := s.Write(t.Context(), res, b, "b1"); err != nil {
		t.Errorf("b's write(fence %d) = %v; want nil", b.Fence(), err)
	}
	assertStored(t, s, res, "b1", b.Fence())
}
