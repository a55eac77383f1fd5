package redlock

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of Extend on fake nodes, under synctest's fake clock.

func TestExtendMovesDeadlineAndKeepsFence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		l, err := c.Acquire(t.Context(), "ext", time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		fence := l.Fence()
		time.Sleep(900 * time.Millisecond)
		start := time.Now()
		if err := l.Extend(t.Context(), 2*time.Second); err != nil {
			t.Fatalf("Extend = %v", err)
		}
		if got, want := l.ValidUntil().Sub(start), 2*time.Second-22*time.Millisecond; got != want {
			t.Errorf("after Extend validity = %v; want %v", got, want)
		}
		if l.Fence() != fence {
			t.Errorf("Fence() = %d after Extend; want %d kept", l.Fence(), fence)
		}
		time.Sleep(time.Second)
		if l.Err() != nil {
			t.Errorf("Err() = %v past the first deadline; want nil after the extend", l.Err())
		}
		l.Release(t.Context())
	})
}

func TestFailedExtendLosesLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		l, err := c.Acquire(t.Context(), "fx", time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // every grant is in
		// Someone wiped our key on two nodes: the extend cannot reach a
		// quorum and must not let us believe we hold it.
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { delete(f.kv, "redlock:{fx}") })
		}
		err = l.Extend(t.Context(), time.Second)
		if !errors.Is(err, ErrLost) {
			t.Fatalf("Extend = %v; want ErrLost", err)
		}
		select {
		case <-l.Done():
		default:
			t.Errorf("Done not closed after a failed extend")
		}
		if _, ok := fakes[2].get("redlock:{fx}"); ok {
			t.Errorf("node 2 still holds the key after the lock was lost; want it released")
		}
		if fakes[0].count("acquire") != 1 {
			t.Errorf("extend re-acquired the key; want it never re-created")
		}
	})
}
