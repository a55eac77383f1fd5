package redlock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A set of names and the readers of one of them exclude each other: the
// readers' marker at the lock key refuses the set's SET NX on that name
// (nothing of the set stays on any node), and the set's value refuses a
// reader; once the readers are gone the set is taken, and once the set is
// released a reader is.
func TestMultiReadWriteExclude(t *testing.T) {
	ns := nodes(t, 3)
	ctx := t.Context()
	readers := newTestClient(t, ns, nil)
	sets := newTestClient(t, ns, nil)
	r := sharedLock(t, readers, "mrw-a", 10*time.Second, nil)
	if _, err := sets.TryAcquireMulti(ctx, []string{"mrw-a", "mrw-b"}, 10*time.Second, nil); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquireMulti over a name readers hold = %v; want ErrHeld", err)
	}
	keyB, _ := sets.Keys("mrw-b")
	assertNoLockKey(t, ns, keyB) // all or nothing: b was not taken either
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := sets.TryAcquireMulti(ctx, []string{"mrw-a", "mrw-b"}, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("TryAcquireMulti once the reader released = %v; want the set", err)
	}
	if _, err := readers.TryAcquireShared(ctx, "mrw-a", 10*time.Second, nil); !errors.Is(err, ErrHeld) {
		t.Errorf("TryAcquireShared of a name a set holds = %v; want ErrHeld", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r2, err := readers.TryAcquireShared(ctx, "mrw-a", 10*time.Second, nil)
	if err != nil {
		t.Fatalf("TryAcquireShared once the set released = %v; want a reader", err)
	}
	if err := r2.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
