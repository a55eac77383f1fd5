package redlock

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// Node faults under a read-write lock, on a cluster of its own.

// A minority of the nodes paused: readers keep and extend their leases,
// a writer is still excluded while they hold and gets the lock once they
// released; then the writer keeps it.
func TestReadWriteMinorityFault(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	name := "rw-minority"
	opts := &Options{NodeTimeout: 200 * time.Millisecond}
	r1 := sharedLock(t, newTestClient(t, cl.Clients(), opts), name, 5*time.Second, nil)
	r2 := sharedLock(t, newTestClient(t, cl.Clients(), opts), name, 5*time.Second, nil)
	if err := cl.Pause(2); err != nil {
		t.Fatal(err)
	}
	defer cl.Unpause(2)
	for _, r := range []*Lock{r1, r2} {
		if err := r.Extend(t.Context(), 5*time.Second); err != nil {
			t.Errorf("Extend(reader) with node 2 paused = %v; want extended", err)
		}
	}
	r3, err := newTestClient(t, cl.Clients(), opts).AcquireShared(t.Context(), name, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireShared with node 2 paused = %v; want a third reader", err)
	}
	wc := newTestClient(t, cl.Clients(), opts)
	if l, err := wc.TryAcquire(t.Context(), name, time.Second, nil); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire while readers hold, node 2 paused = %v, %v; want ErrHeld", l, err)
	}
	for _, r := range []*Lock{r1, r2, r3} {
		if err := r.Release(t.Context()); err != nil {
			t.Errorf("Release(reader) with node 2 paused = %v", err)
		}
	}
	w, err := wc.TryAcquire(t.Context(), name, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("TryAcquire after the readers released, node 2 paused = %v; want the lock", err)
	}
	if l, err := newTestClient(t, cl.Clients(), opts).TryAcquireShared(t.Context(), name, time.Second, nil); err == nil {
		l.Release(t.Context())
		t.Fatalf("TryAcquireShared while the writer holds = %v; want refused", l)
	}
	if err := w.Extend(t.Context(), 5*time.Second); err != nil {
		t.Errorf("Extend(writer) with node 2 paused = %v", err)
	}
	w.Release(t.Context())
}

// A majority of the nodes paused: readers and a writer (each on its own
// name) auto-extending lose their leases, and are told no later than their
// local deadlines.
func TestReadWriteMajorityFault(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	opts := &Options{NodeTimeout: 100 * time.Millisecond}
	ttl := 1500 * time.Millisecond
	auto := &AcquireOptions{AutoExtend: true}
	r1 := sharedLock(t, newTestClient(t, cl.Clients(), opts), "rw-majority", ttl, auto)
	r2 := sharedLock(t, newTestClient(t, cl.Clients(), opts), "rw-majority", ttl, auto)
	wc := newTestClient(t, cl.Clients(), opts)
	w, err := wc.Acquire(t.Context(), "rw-majority-w", ttl, auto)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release(t.Context())
	for _, i := range []int{1, 2} {
		if err := cl.Pause(i); err != nil {
			t.Fatal(err)
		}
		defer cl.Unpause(i)
	}
	// In the order of their deadlines, so that each is looked at once its
	// deadline is near (a Done that fired long ago is not late).
	holds := []struct {
		what string
		l    *Lock
	}{{"reader 1", r1}, {"reader 2", r2}, {"writer", w}}
	slices.SortFunc(holds, func(a, b struct {
		what string
		l    *Lock
	}) int {
		return a.l.ValidUntil().Compare(b.l.ValidUntil())
	})
	for _, h := range holds {
		what, l := h.what, h.l
		deadline := l.ValidUntil()
		select {
		case <-l.Done():
			if late := time.Since(deadline); late > lossTolerance {
				t.Errorf("%s told of its loss %v after its deadline", what, late)
			}
			if !errors.Is(l.Err(), ErrLost) {
				t.Errorf("%s: Err = %v; want ErrLost", what, l.Err())
			}
		case <-time.After(time.Until(deadline) + 2*time.Second):
			t.Errorf("%s still valid after a majority paused past its deadline", what)
		}
	}
}
