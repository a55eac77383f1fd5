package guard_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

// Tests of the downstream fencing guards. The same scenarios run on each
// store (stores_test.go): in-process (InProcess), Redis (Redis on a node of
// the shared cluster) and PostgreSQL (SQL on a server started by the test).
// Here: what they check after each access.

var _ guard.Holder = (*redlock.Lock)(nil)

// assertStored fails the test unless resource holds value with fence.
func assertStored(t testing.TB, s guardtest.Store, resource, value string, fence uint64) {
	t.Helper()
	v, f, err := s.Stored(t.Context(), resource)
	if err != nil {
		t.Fatalf("stored(%q): %v", resource, err)
	}
	if v != value || f != fence {
		t.Errorf("stored(%q) = %q, fence %d; want %q, fence %d", resource, v, f, value, fence)
	}
}

// assertStale fails the test unless err matches guard.ErrStaleFence and names the
// resource, the fence and the highest fence.
func assertStale(t testing.TB, op string, err error, resource string, fence, highest uint64) {
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

// holderAt returns the holder with fence f and a token of its own: one
// holder per fence, as when every acquisition gets a fence of its own.
func holderAt(f uint64) guard.Holder { return guard.HolderOf(f, fmt.Sprintf("token-%d", f)) }

// assertTie fails the test unless err matches guard.ErrStaleFence and says that
// another holder already holds fence for resource.
func assertTie(t testing.TB, op string, err error, resource string, fence uint64) {
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

// assertNoFence fails the test unless err matches guard.ErrNoFence and not
// guard.ErrStaleFence, and names resource.
func assertNoFence(t testing.TB, op string, err error, resource string) {
	t.Helper()
	if !errors.Is(err, guard.ErrNoFence) || errors.Is(err, guard.ErrStaleFence) || !strings.Contains(err.Error(), resource) {
		t.Errorf("%s = %v; want guard.ErrNoFence (not guard.ErrStaleFence) naming %s", op, err, resource)
	}
}

// guardOutcome is what a guard must answer to one access.
type guardOutcome int

const (
	accepted guardOutcome = iota
	stale                 // guard.ErrStaleFence: below the highest fence
	tie                   // guard.ErrStaleFence: the highest fence, another holder's
	noFence0              // guard.ErrNoFence
)

// assertOutcome checks err against want; highest is the highest fence
// accepted before the access.
func assertOutcome(t testing.TB, op string, err error, want guardOutcome, resource string, fence, highest uint64) {
	t.Helper()
	switch want {
	case accepted:
		if err != nil {
			t.Errorf("%s = %v; want nil", op, err)
		}
	case stale:
		assertStale(t, op, err, resource, fence, highest)
	case tie:
		assertTie(t, op, err, resource, fence)
	case noFence0:
		assertNoFence(t, op, err, resource)
	}
}

// testBigFences runs fences past 2^53 (where float64 comparison would err)
// up to the uint64 limit, from two holders a and b, through write (a
// guarded write of the store) and checks after each that stored (the value
// and the highest fence, unfenced) still holds the last accepted write.
// resource is the resource as errors name it.
func testBigFences(t *testing.T, resource string, write func(h guard.Holder, value string) error, stored func() (string, uint64, error)) {
	t.Helper()
	steps := []struct {
		fence uint64
		who   string
		want  guardOutcome
	}{
		{1<<53 + 1, "a", accepted},
		{1<<53 + 1, "b", tie},
		{1 << 53, "b", stale}, // one float64 with 2^53+1
		{1<<63 + 1, "a", accepted},
		{1<<63 + 1, "b", tie},
		{math.MaxUint64 - 1, "b", accepted},
		{math.MaxUint64, "a", accepted},
		{math.MaxUint64, "b", tie},
		{math.MaxUint64, "a", accepted}, // a again, at its own fence
		{math.MaxUint64 - 1, "b", stale},
		{1<<63 + 1, "a", stale},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		v := fmt.Sprintf("%d-%s", st.fence, st.who)
		op := fmt.Sprintf("%s's write(fence %d)", st.who, st.fence)
		err := write(guard.HolderOf(st.fence, "token-"+st.who), v)
		assertOutcome(t, op, err, st.want, resource, st.fence, highest)
		if st.want == accepted {
			value, highest = v, st.fence
		}
		gotV, gotF, err := stored()
		if gotV != value || gotF != highest || err != nil {
			t.Errorf("after %s: stored = %q, fence %d, %v; want %q, fence %d", op, gotV, gotF, err, value, highest)
		}
	}
}
