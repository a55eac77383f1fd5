package transport

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The round's decision and timing against calls that answer when the test
// says. Time is synctest's fake clock, so every duration below is exact.

// settle lets the goroutines a test leaves behind (calls to nodes that
// answer late) finish: a synctest bubble must end with none left.
func settle() { time.Sleep(time.Hour) }

// majority is the lock's quorum rule, as its callers pass it.
func majority(ok, failed, n, need int) bool { return ok >= need || failed > n-need }

func accepted(ok bool, err error) bool { return ok && err == nil }

func TestFanoutReturnsAtQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		defer settle()
		defer close(hang)
		start := time.Now()
		r := Fanout(t.Context(), new(Tracker), 5,
			func(ctx context.Context, i int) (bool, error) {
				if i >= 3 {
					<-hang // two nodes never answer
				}
				time.Sleep(time.Duration(i+1) * time.Millisecond)
				return true, nil
			},
			&Spec[bool]{Need: 3, Decided: majority, PerNode: time.Second, Accept: accepted})
		if got := time.Since(start); got != 3*time.Millisecond {
			t.Errorf("Fanout returned after %v; want 3ms (the third answer), not the 1s timeout", got)
		}
		if r.OK != 3 || r.TimedOut || r.CtxEnded {
			t.Errorf("Fanout = OK %d, TimedOut %v, CtxEnded %v; want 3, false, false", r.OK, r.TimedOut, r.CtxEnded)
		}
		for i := 3; i < 5; i++ {
			if r.Answered[i] {
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
		r := Fanout(t.Context(), new(Tracker), 5,
			func(ctx context.Context, i int) (bool, error) {
				if i < 2 {
					<-hang
				}
				time.Sleep(time.Millisecond)
				return false, nil // refused
			},
			&Spec[bool]{Need: 3, Decided: majority, PerNode: time.Second, Accept: accepted})
		if got := time.Since(start); got != time.Millisecond {
			t.Errorf("Fanout returned after %v; want 1ms: three refusals make a quorum of 3 of 5 impossible", got)
		}
		if r.OK != 0 || r.TimedOut {
			t.Errorf("OK = %d, TimedOut %v; want 0, false", r.OK, r.TimedOut)
		}
	})
}

func TestFanoutTimesOutSilentNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		defer settle()
		defer close(hang)
		start := time.Now()
		r := Fanout(t.Context(), new(Tracker), 3,
			func(ctx context.Context, i int) (bool, error) {
				if i == 1 {
					<-hang // ignores its context, as go-redis may on a socket read
				}
				return true, nil
			},
			&Spec[bool]{Decided: majority, PerNode: 50 * time.Millisecond, Accept: accepted})
		if got := time.Since(start); got != 50*time.Millisecond {
			t.Errorf("Fanout waited %v for a silent node; want the 50ms per-node timeout", got)
		}
		if !r.TimedOut || r.Answered[1] || r.OK != 2 {
			t.Errorf("Fanout = TimedOut %v, Answered[1] %v, OK %d; want true, false, 2", r.TimedOut, r.Answered[1], r.OK)
		}
	})
}

func TestFanoutStopsWhenCallerContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := make(chan struct{})
		defer settle()
		defer close(hang)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(5*time.Millisecond, cancel)
		start := time.Now()
		r := Fanout(ctx, new(Tracker), 3,
			func(ctx context.Context, i int) (bool, error) {
				<-hang
				return true, nil
			},
			&Spec[bool]{Need: 2, Decided: majority, PerNode: time.Second, Accept: accepted})
		if got := time.Since(start); got != 5*time.Millisecond {
			t.Errorf("Fanout returned after %v; want 5ms, when its context ended", got)
		}
		if !r.CtxEnded || r.TimedOut {
			t.Errorf("Fanout = CtxEnded %v, TimedOut %v; want true, false", r.CtxEnded, r.TimedOut)
		}
	})
}

func TestFanoutPassesLateAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer settle()
		late := make(chan Reply[int], 5)
		observed := make(chan int, 5)
		Fanout(t.Context(), new(Tracker), 5,
			func(ctx context.Context, i int) (int, error) {
				time.Sleep(time.Duration(i) * 20 * time.Millisecond)
				return i, nil
			},
			&Spec[int]{Need: 3, Decided: majority, PerNode: 10 * time.Millisecond,
				Accept:  func(int, error) bool { return true },
				Late:    func(rp Reply[int]) { late <- rp },
				Observe: func(node int, _ error) { observed <- node }})
		// Node 0 answers at once; nodes 1..4 after the 10ms timeout.
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		close(late)
		close(observed)
		var got []int
		for rp := range late {
			got = append(got, rp.Val)
		}
		if len(got) != 4 {
			t.Errorf("late answers = %v; want the four nodes that missed the timeout", got)
		}
		if n := len(observed); n != 5 {
			t.Errorf("observed %d answers; want all 5, in time or late", n)
		}
	})
}

func TestTrackerIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Tracker
		select {
		case <-g.Idle():
		default:
			t.Fatal("Idle of an unused Tracker is open; want closed")
		}
		stop := make(chan struct{})
		g.Go(func() { <-stop })
		g.Go(func() { <-stop })
		if n := g.Running(); n != 2 {
			t.Errorf("Running = %d; want 2", n)
		}
		idle := g.Idle()
		select {
		case <-idle:
			t.Fatal("Idle closed while two goroutines run")
		default:
		}
		close(stop)
		synctest.Wait()
		select {
		case <-idle:
		default:
			t.Fatal("Idle still open after both goroutines returned")
		}
		if n := g.Running(); n != 0 {
			t.Errorf("Running = %d; want 0", n)
		}
	})
}

// A round's calls get a context with the caller's values, not its
// cancellation, that ends at the round's deadline (a hook or a Scripter may
// wait on it), and that ends once every call answered.
func TestRoundContextEndsAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type key struct{}
		parent, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
		defer cancel()
		start := time.Now()
		type seen struct {
			deadline time.Time
			value    any
			ended    time.Duration
			err      error
			ctx      context.Context
		}
		got := make(chan seen, 1)
		Fanout(parent, new(Tracker), 1, func(ctx context.Context, i int) (bool, error) {
			s := seen{ctx: ctx, value: ctx.Value(key{})}
			s.deadline, _ = ctx.Deadline()
			cancel() // the caller gives up: its round's calls go on
			<-ctx.Done()
			s.ended, s.err = time.Since(start), ctx.Err()
			got <- s
			return true, nil
		}, &Spec[bool]{Decided: majority, PerNode: 50 * time.Millisecond, Accept: accepted})
		s := <-got
		if want := start.Add(50 * time.Millisecond); !s.deadline.Equal(want) || s.value != "v" {
			t.Errorf("the call's context: deadline %v, value %v; want %v and the caller's value", s.deadline.Sub(start), s.value, want.Sub(start))
		}
		if s.ended != 50*time.Millisecond || s.err != context.DeadlineExceeded {
			t.Errorf("the call's context ended after %v with %v; want 50ms, %v", s.ended, s.err, context.DeadlineExceeded)
		}
		settle()
		if err := s.ctx.Err(); err != context.DeadlineExceeded {
			t.Errorf("once the call answered, Err = %v; still %v", err, context.DeadlineExceeded)
		}

		// A round whose calls all answered ends their context, as a cancel
		// func would, and leaves no timer behind.
		after := make(chan context.Context, 1)
		Fanout(t.Context(), new(Tracker), 1, func(ctx context.Context, i int) (bool, error) {
			_ = ctx.Done() // makes the timer
			after <- ctx
			return true, nil
		}, &Spec[bool]{Decided: majority, PerNode: time.Hour, Accept: accepted})
		ctx := <-after
		settle()
		select {
		case <-ctx.Done():
		default:
			t.Errorf("the context of a round whose calls all answered has not ended")
		}
		if err := ctx.Err(); err != context.Canceled {
			t.Errorf("its Err = %v; want %v", err, context.Canceled)
		}
	})
}
