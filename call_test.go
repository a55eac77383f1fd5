package redlock

import (
	"testing"
	"testing/synctest"
	"time"
)

// A late answer of the winning attempt that comes after its lock was lost
// at the deadline is the lease's own value: another share (a resumed
// handle) may count it, so it is left to its TTL, not cleaned up. After a
// release it is cleaned up as before.
func TestLateWinningAnswerAfterLossIsLeftToItsTTL(t *testing.T) {
	for _, release := range []bool{false, true} {
		name := map[bool]string{false: "lost at the deadline", true: "released"}[release]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 50 * time.Millisecond})
				fakes[2].set(func(f *fakeNode) { f.delay = 300 * time.Millisecond })
				l, err := c.Acquire(t.Context(), "late-win", 100*time.Millisecond, nil)
				if err != nil {
					t.Fatalf("Acquire = %v", err)
				}
				if release {
					if err := l.Release(t.Context()); err != nil {
						t.Fatalf("Release = %v", err)
					}
				}
				time.Sleep(time.Second) // node 2 answers at 300ms, long after the deadline
				synctest.Wait()
				want := map[bool]int{false: 0, true: 1}[release]
				if got := fakes[2].count("cleanup"); got != want {
					t.Errorf("cleanups sent to node 2 = %d; want %d", got, want)
				}
			})
		})
	}
}
