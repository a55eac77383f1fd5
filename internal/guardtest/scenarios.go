package guardtest

// The scenarios every guarded store must pass, and what the guard tests
// check after each access. The guard tests (guard/) run them on the
// in-process and Redis stores, the PostgreSQL tests (guard/sqltest/, a
// module of their own) on guard.SQL.

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
)

var _ guard.Holder = (*redlock.Lock)(nil)

// newTestClient returns a redlock Client over nodes with a per-node timeout
// of 1s (the race detector on a loaded machine can starve a round trip past
// the 100ms default), closed when the test ends.
func newTestClient(t testing.TB, nodes []redis.UniversalClient) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// RunScenarios runs the scenarios every guarded store must pass on s, named
// name; lockNodes returns the Redis nodes (at least 3) of the scenario that
// takes real locks.
func RunScenarios(t *testing.T, s Store, name string, lockNodes func(testing.TB) []redis.UniversalClient) {
	t.Run("StaleWriteRejected", func(t *testing.T) { testStaleWriteRejected(t, s) })
	t.Run("Owners", func(t *testing.T) { testOwners(t, s) })
	t.Run("StaleReadRejected", func(t *testing.T) { testStaleReadRejected(t, s) })
	t.Run("FencedReadThenStaleWrite", func(t *testing.T) { testFencedReadThenStaleWrite(t, s) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, s) })
	t.Run("ExpiredHolder", func(t *testing.T) { testExpiredHolder(t, s, "guard-"+name, lockNodes(t)[:3]) })
}

func testStaleWriteRejected(t *testing.T, s Store) {
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
		err := s.Write(t.Context(), res, HolderAt(st.fence), st.value)
		op := fmt.Sprintf("write(%q, fence %d)", st.value, st.fence)
		if st.wantStale {
			AssertStale(t, op, err, res, st.fence, highest)
		} else {
			if err != nil {
				t.Errorf("%s = %v; want nil", op, err)
			}
			value, highest = st.value, st.fence
		}
		AssertStored(t, s, res, value, highest)
	}
}

// Two holders with different tokens at the same fence (two overlapping holds
// that got the same fence): the first to reach the store keeps it, the
// other is rejected, reads and writes, and changes nothing. Before guards
// recorded the owner, both were accepted. The same holder still rewrites at
// its own fence, and fence 0 is refused without recording anything.
func testOwners(t *testing.T, s Store) {
	const res = "owners"
	s.Create(t, res)
	a, b, c := guard.HolderOf(7, "token-a"), guard.HolderOf(7, "token-b"), guard.HolderOf(6, "token-c")
	zero := guard.HolderOf(0, "token-z")

	// A fence 0 on a fresh resource records nothing.
	AssertNoFence(t, "write(fence 0)", s.Write(t.Context(), res, zero, "z"), res)
	v, err := s.Read(t.Context(), res, zero)
	AssertNoFence(t, "read(fence 0)", err, res)
	if v != "" {
		t.Errorf("read(fence 0) returned %q; want nothing", v)
	}
	AssertStored(t, s, res, "", 0)

	steps := []struct {
		who   string
		h     guard.Holder
		read  bool // a fenced read instead of a write
		value string
		want  Outcome
	}{
		{"a", a, false, "a1", Accepted},
		{"b", b, false, "b1", Tie}, // the bug: accepted before
		{"b", b, true, "", Tie},
		{"a", a, false, "a2", Accepted}, // the same holder writes again
		{"a", a, true, "a2", Accepted},
		{"c", c, false, "c1", Stale},
		{"z", zero, false, "z1", NoFence0},
		{"b", guard.HolderOf(8, "token-b"), true, "a2", Accepted}, // b again, with a higher fence
		{"a", a, false, "a3", Stale},
		{"b", guard.HolderOf(8, "token-b"), false, "b2", Accepted},
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
			if st.want == Accepted {
				want = value
			}
			if v != want {
				t.Errorf("%s returned %q; want %q", op, v, want)
			}
		} else {
			err = s.Write(t.Context(), res, st.h, st.value)
		}
		AssertOutcome(t, op, err, st.want, res, st.h.Fence(), highest)
		if st.want == Accepted {
			highest = st.h.Fence()
			if !st.read {
				value = st.value
			}
		}
		AssertStored(t, s, res, value, highest)
	}
}

func testStaleReadRejected(t *testing.T, s Store) {
	const res = "stale-read"
	s.Create(t, res)
	if err := s.Write(t.Context(), res, HolderAt(4), "x"); err != nil {
		t.Fatalf("write(fence 4) = %v", err)
	}
	v, err := s.Read(t.Context(), res, HolderAt(2))
	AssertStale(t, "read(fence 2)", err, res, 2, 4)
	if v != "" {
		t.Errorf("read(fence 2) returned %q; want nothing", v)
	}
	for _, f := range []uint64{4, 6} {
		if v, err := s.Read(t.Context(), res, HolderAt(f)); v != "x" || err != nil {
			t.Errorf("read(fence %d) = %q, %v; want %q, nil", f, v, err, "x")
		}
	}
	AssertStored(t, s, res, "x", 6) // the read recorded its fence
}

// A stale holder A read before the newer holder B; B reads too. A's write
// must now be rejected, though nobody has written with B's fence yet:
// otherwise B's write, computed from what B read, would overwrite A's.
func testFencedReadThenStaleWrite(t *testing.T, s Store) {
	const res = "read-modify-write"
	s.Create(t, res)
	if err := s.Write(t.Context(), res, HolderAt(1), "0"); err != nil {
		t.Fatalf("write(fence 1) = %v", err)
	}
	const a, b = 1, 2
	for _, f := range []uint64{a, b} {
		if v, err := s.Read(t.Context(), res, HolderAt(f)); v != "0" || err != nil {
			t.Fatalf("read(fence %d) = %q, %v; want %q, nil", f, v, err, "0")
		}
	}
	AssertStale(t, "A's write(fence 1) after B's read(fence 2)", s.Write(t.Context(), res, HolderAt(a), "1"), res, a, b)
	if err := s.Write(t.Context(), res, HolderAt(b), "1"); err != nil {
		t.Errorf("B's write(fence 2) = %v; want nil", err)
	}
	AssertStored(t, s, res, "1", b)
}
