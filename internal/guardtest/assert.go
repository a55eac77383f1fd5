package guardtest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/guard"
)

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
