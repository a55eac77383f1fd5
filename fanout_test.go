package redlock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of one round's fan-out to the nodes: it returns as soon as the
// outcome is known, never waits for a slow minority, and hands late answers
// on. Fake nodes under synctest's fake clock, so every duration is exact.

func TestFanoutReturnsAtQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		defer settle()
		defer close(hang)
		start := time.Now()
		r := fanout(t.Context(), new(tracker), 5, 3, time.Second,
			func(ctx context.Context, i int) (bool, error) {
				if i >= 3 {
					<-hang // two nodes never answer
				}
				time.Sleep(time.Duration(i+1) * time.Millisecond)
				return true, nil
			},
			func(ok bool, err error) bool { return ok && err == nil }, nil)
		if got := time.Since(start); got != 3*time.Millisecond {
			t.Errorf("fanout returned after %v; want 3ms (the third answer), not the 1s timeout", got)
		}
		if r.ok != 3 || r.timedOut {
			t.Errorf("fanout = ok %d, timedOut %v; want ok 3, timedOut false", r.ok, r.timedOut)
		}
		for i := 3; i < 5; i++ {
			if r.answered[i] {
				t.Errorf("node %d answered; want pending", i)
			}
		}
	})
}

func TestFanoutDetectsImpossibleQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		defer settle()
		defer close(hang)
		start := time.Now()
		r := fanout(t.Context(), new(tracker), 5, 3, time.Second,
			func(ctx context.Context, i int) (bool, error) {
				if i < 2 {
					<-hang
				}
				time.Sleep(time.Millisecond)
				return false, nil // refused
			},
			func(ok bool, err error) bool { return ok }, nil)
		if got := time.Since(start); got != time.Millisecond {
			t.Errorf("fanout returned after %v; want 1ms: three refusals make a quorum of 3 of 5 impossible", got)
		}
		if r.ok != 0 {
			t.Errorf("ok = %d; want 0", r.ok)
		}
	})
}

func TestFanoutTimesOutSilentNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		defer settle()
		defer close(hang)
		start := time.Now()
		r := fanout(t.Context(), new(tracker), 3, 0, 50*time.Millisecond,
			func(ctx context.Context, i int) (bool, error) {
				if i == 1 {
					<-hang // ignores its context, as go-redis may on a socket read
				}
				return true, nil
			},
			func(ok bool, err error) bool { return ok }, nil)
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("fanout waited %v for a silent node; want the 50ms per-node timeout", got)
		}
		if !r.timedOut || r.answered[1] || r.ok != 2 {
			t.Errorf("fanout = timedOut %v, answered[1] %v, ok %d; want true, false, 2", r.timedOut, r.answered[1], r.ok)
		}
	})
}

func TestFanoutPassesLateAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer settle()
		late := make(chan reply[int], 5)
		fanout(t.Context(), new(tracker), 5, 3, 10*time.Millisecond,
			func(ctx context.Context, i int) (int, error) {
				time.Sleep(time.Duration(i) * 20 * time.Millisecond)
				return i, nil
			},
			func(int, error) bool { return true },
			func(rp reply[int]) { late <- rp })
		// Node 0 answers at once; nodes 1..4 after the 10ms timeout.
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		close(late)
		var got []int
		for rp := range late {
			got = append(got, rp.val)
		}
		if len(got) != 4 {
			t.Errorf("late answers = %v; want the four nodes that missed the timeout", got)
		}
	})
}
