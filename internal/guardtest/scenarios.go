package guardtest

// The scenarios every guarded store must pass, and what the guard tests
// check after each access. The guard tests (guard/) run them on the
// in-process and Redis stores, the PostgreSQL tests (guard/sqltest/, a
// module of their own) on guard.SQL.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
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

// AssertStored fails the test unless resource holds value with fence.
func AssertStored(t testing.TB, s Store, resource, value string, fence uint64) {
	t.Helper()
	v, f, err := s.Stored(t.Context(), resource)
	if err != nil {
		t.Fatalf("stored(%q): %v", resource, err)
	}
	if v != value || f != fence {
		t.Errorf("stored(%q) = %q, fence %d; want %q, fence %d", resource, v, f, value, fence)
	}
}

// AssertStale fails the test unless err matches guard.ErrStaleFence and names the
// resource, the fence and the highest fence.
func AssertStale(t testing.TB, op string, err error, resource string, fence, highest uint64) {
	t.Helper()
	if !errors.Is(err, guard.ErrStaleFence) {
		t.Errorf("%s = %v; want guard.ErrStaleFence", op, err)
		return
	}
	for _, s := range []string{resource, fmt.Sprintf("fence %d is below %d", fence, highest)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s = %q; want it to contain %q", op, err, s)
		}
	}
}

// HolderAt returns the holder with fence f and a token of its own: one
// holder per fence, as when every acquisition gets a fence of its own.
func HolderAt(f uint64) guard.Holder { return guard.HolderOf(f, fmt.Sprintf("token-%d", f)) }

// AssertTie fails the test unless err matches guard.ErrStaleFence and says that
// another holder already holds fence for resource.
func AssertTie(t testing.TB, op string, err error, resource string, fence uint64) {
	t.Helper()
	if !errors.Is(err, guard.ErrStaleFence) || errors.Is(err, guard.ErrNoFence) {
		t.Errorf("%s = %v; want guard.ErrStaleFence", op, err)
		return
	}
	for _, s := range []string{resource, fmt.Sprintf("fence %d is already held by another holder", fence)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s = %q; want it to contain %q", op, err, s)
		}
	}
}

// AssertNoFence fails the test unless err matches guard.ErrNoFence and not
// guard.ErrStaleFence, and names resource.
func AssertNoFence(t testing.TB, op string, err error, resource string) {
	t.Helper()
	if !errors.Is(err, guard.ErrNoFence) || errors.Is(err, guard.ErrStaleFence) || !strings.Contains(err.Error(), resource) {
		t.Errorf("%s = %v; want guard.ErrNoFence (not guard.ErrStaleFence) naming %s", op, err, resource)
	}
}

// Outcome is what a guard must answer to one access.
type Outcome int

const (
	Accepted Outcome = iota
	Stale            // guard.ErrStaleFence: below the highest fence
	Tie              // guard.ErrStaleFence: the highest fence, another holder's
	NoFence0         // guard.ErrNoFence
)

// AssertOutcome checks err against want; highest is the highest fence
// accepted before the access.
func AssertOutcome(t testing.TB, op string, err error, want Outcome, resource string, fence, highest uint64) {
	t.Helper()
	switch want {
	case Accepted:
		if err != nil {
			t.Errorf("%s = %v; want nil", op, err)
		}
	case Stale:
		AssertStale(t, op, err, resource, fence, highest)
	case Tie:
		AssertTie(t, op, err, resource, fence)
	case NoFence0:
		AssertNoFence(t, op, err, resource)
	}
}

// BigFences runs fences past 2^53 (where float64 comparison would err)
// up to the uint64 limit, from two holders a and b, through write (a
// guarded write of the store) and checks after each that stored (the value
// and the highest fence, unfenced) still holds the last accepted write.
// resource is the resource as errors name it.
func BigFences(t *testing.T, resource string, write func(h guard.Holder, value string) error, stored func() (string, uint64, error)) {
	t.Helper()
	steps := []struct {
		fence uint64
		who   string
		want  Outcome
	}{
		{1<<53 + 1, "a", Accepted},
		{1<<53 + 1, "b", Tie},
		{1 << 53, "b", Stale}, // one float64 with 2^53+1
		{1<<63 + 1, "a", Accepted},
		{1<<63 + 1, "b", Tie},
		{math.MaxUint64 - 1, "b", Accepted},
		{math.MaxUint64, "a", Accepted},
		{math.MaxUint64, "b", Tie},
		{math.MaxUint64, "a", Accepted}, // a again, at its own fence
		{math.MaxUint64 - 1, "b", Stale},
		{1<<63 + 1, "a", Stale},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		v := fmt.Sprintf("%d-%s", st.fence, st.who)
		op := fmt.Sprintf("%s's write(fence %d)", st.who, st.fence)
		err := write(guard.HolderOf(st.fence, "token-"+st.who), v)
		AssertOutcome(t, op, err, st.want, resource, st.fence, highest)
		if st.want == Accepted {
			value, highest = v, st.fence
		}
		gotV, gotF, err := stored()
		if gotV != value || gotF != highest || err != nil {
			t.Errorf("after %s: stored = %q, fence %d, %v; want %q, fence %d", op, gotV, gotF, err, value, highest)
		}
	}
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

// Writers with random fences race; the stored fence never goes down, every
// write with the largest fence is accepted, and the store ends with the
// largest fence and a value written with it.
func testConcurrentWriters(t *testing.T, s Store) {
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
				results <- result{f, v, s.Write(ctx, res, HolderAt(f), v)}
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
func testExpiredHolder(t *testing.T, s Store, name string, nodes []redis.UniversalClient) {
	const res = "expired-holder"
	s.Create(t, res)
	// Two clients, as two processes: one client queues its own Acquire
	// calls of a name until the earlier lock ends locally.
	ca, cb := newTestClient(t, nodes), newTestClient(t, nodes)
	key, _ := ca.Keys(name)
	a, err := ca.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire a = %v", err)
	}
	defer a.Release(t.Context())
	if err := s.Write(t.Context(), res, a, "a1"); err != nil {
		t.Fatalf("a's write(fence %d) = %v; want nil", a.Fence(), err)
	}
	for _, nd := range nodes {
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
	AssertStale(t, fmt.Sprintf("a's write(fence %d) after b's read", a.Fence()), err, res, a.Fence(), b.Fence())
	if err := s.Write(t.Context(), res, b, "b1"); err != nil {
		t.Errorf("b's write(fence %d) = %v; want nil", b.Fence(), err)
	}
	AssertStored(t, s, res, "b1", b.Fence())
}
