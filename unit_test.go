package redlock

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// Unit tests: quorum counting, timing and fence planning against fake nodes.
// Time is synctest's fake clock, so every duration below is exact.

// settle lets the goroutines a test leaves behind (calls to nodes that
// answer late) finish: a synctest bubble must end with none left.
func settle() { time.Sleep(time.Hour) }

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

func TestValidityMath(t *testing.T) {
	for _, tc := range []struct {
		ttl, elapsed time.Duration
		factor       float64
		want         time.Duration
	}{
		{10 * time.Second, 0, 0.01, 10*time.Second - 100*time.Millisecond - 2*time.Millisecond},
		{10 * time.Second, 500 * time.Millisecond, 0.01, 9500*time.Millisecond - 102*time.Millisecond},
		{100 * time.Millisecond, 97 * time.Millisecond, 0.01, 0},
		{100 * time.Millisecond, 98 * time.Millisecond, 0.01, -time.Millisecond},
		{time.Second, 0, 0.1, 898 * time.Millisecond},
	} {
		if got := validity(tc.ttl, tc.elapsed, tc.factor); got != tc.want {
			t.Errorf("validity(%v, %v, %v) = %v; want %v", tc.ttl, tc.elapsed, tc.factor, got, tc.want)
		}
	}
}

func TestAcquireValidityCountsElapsedTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		for _, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = 40 * time.Millisecond })
		}
		start := time.Now()
		l, err := c.Acquire(t.Context(), "v", time.Second, &AcquireOptions{NoFence: true})
		if err != nil {
			t.Fatalf("Acquire = %v; want a lock", err)
		}
		// 1s - 40ms elapsed - (10ms + 2ms) drift.
		if got, want := l.ValidUntil().Sub(start), 948*time.Millisecond; got != want {
			t.Errorf("validity = %v; want %v", got, want)
		}
		time.Sleep(time.Until(l.ValidUntil()) - time.Millisecond)
		select {
		case <-l.Done():
			t.Fatalf("Done fired before the deadline")
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		select {
		case <-l.Done():
		default:
			t.Fatalf("Done did not fire at the deadline")
		}
		if !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v; want ErrLost", l.Err())
		}
		if err := l.Release(context.Background()); !errors.Is(err, ErrLost) {
			t.Errorf("Release after the deadline = %v; want an error matching ErrLost", err)
		}
	})
}

func TestPerNodeTimeoutCappedAtValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		for _, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = 98 * time.Millisecond })
		}
		start := time.Now()
		_, err := c.Acquire(t.Context(), "late", 100*time.Millisecond, &AcquireOptions{Retry: NoRetry()})
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		// A grant after 97ms (100ms - 3ms drift) could never be valid:
		// the attempt gives up then instead of waiting a second.
		if got := time.Since(start); got != 97*time.Millisecond {
			t.Errorf("Acquire gave up after %v; want 97ms", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, f := range fakes {
			if v, ok := f.get("redlock:{late}"); ok {
				t.Errorf("node %d still holds %q after a failed attempt; want the late grant released", i, v)
			}
		}
	})
}

func TestWriteBackPastValidityFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		// Counters diverge, so the write-back runs; each round takes 60ms,
		// and the second one cannot end within the 37ms validity left.
		fakes[0].set(func(f *fakeNode) { f.kv["redlock:{slow}:fence"] = "7" })
		for i, f := range fakes { // node 0 answers first, so F = 8 is a minority
			f.set(func(f *fakeNode) { f.delay = time.Duration(60+i) * time.Millisecond })
		}
		_, err := c.Acquire(t.Context(), "slow", 100*time.Millisecond, &AcquireOptions{Retry: NoRetry()})
		var qe *QuorumError
		if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) || qe.Op != "fence write-back" {
			t.Fatalf("Acquire = %v; want a fence write-back *QuorumError matching ErrNotAcquired", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, f := range fakes {
			if v, ok := f.get("redlock:{slow}"); ok {
				t.Errorf("node %d still holds %q after a failed attempt; want it released", i, v)
			}
		}
	})
}

func TestLateGrantIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 5, &Options{NodeTimeout: 20 * time.Millisecond})
		// Nodes 0 and 1 grant at once, node 2 only after 200ms, nodes 3
		// and 4 are held by someone else: the attempt fails with 2 of 5.
		fakes[2].set(func(f *fakeNode) { f.delay = 200 * time.Millisecond })
		for _, f := range fakes[3:] {
			f.set(func(f *fakeNode) { f.kv["redlock:{late}"] = "someone-else" })
		}
		_, err := c.Acquire(t.Context(), "late", time.Second, &AcquireOptions{Retry: NoRetry()})
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, f := range fakes[:3] {
			if v, ok := f.get("redlock:{late}"); ok {
				t.Errorf("node %d still holds %q; want the late grant released", i, v)
			}
		}
		if n := fakes[2].count("cleanup"); n != 1 {
			t.Errorf("node 2 got %d cleanups; want 1 (after its late grant)", n)
		}
		for i, f := range fakes[3:] {
			if v, _ := f.get("redlock:{late}"); v != "someone-else" {
				t.Errorf("node %d = %q; want the other owner's key untouched", i+3, v)
			}
		}
	})
}

func TestLateGrantAfterReleaseIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 20 * time.Millisecond})
		fakes[2].set(func(f *fakeNode) { f.delay = 300 * time.Millisecond })
		l, err := c.Acquire(t.Context(), "r", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		// Release reaches node 2 before the grant does: its delete finds
		// nothing, and the late grant must delete itself. Release returns
		// when nodes 0 and 1 have deleted: node 2 is not waited for.
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release = %v; want nil: a quorum deleted", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if v, ok := fakes[2].get("redlock:{r}"); ok {
			t.Errorf("node 2 holds %q after release; want the late grant released", v)
		}
	})
}

func TestFenceFastPathSkipsWriteBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 5, nil)
		// Three nodes agree on the counter; two lag behind.
		for i, v := range []string{"5", "5", "5", "2", "2"} {
			fakes[i].set(func(f *fakeNode) {
				f.kv["redlock:{fp}:fence"] = v
				f.delay = time.Duration(i) * time.Millisecond // answer in order
			})
		}
		l, err := c.Acquire(t.Context(), "fp", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		if l.Fence() != 6 {
			t.Errorf("Fence() = %d; want 6", l.Fence())
		}
		for i, f := range fakes {
			if n := f.count("fence"); n != 0 {
				t.Errorf("node %d got %d write-backs; want none on the fast path", i, n)
			}
		}
		l.Release(t.Context())
	})
}

func TestFenceWriteBackMakesLaterFencesLarger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 5, nil)
		// Node 0 is far ahead. Nodes 0,1,2 answer first, so the quorum
		// returns {10, 2, 2}: F = 10 is held by one node only.
		for i, v := range []string{"9", "1", "1", "1", "1"} {
			fakes[i].set(func(f *fakeNode) {
				f.kv["redlock:{wb}:fence"] = v
				f.delay = time.Duration(i) * time.Millisecond
			})
		}
		l, err := c.Acquire(t.Context(), "wb", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		if l.Fence() != 10 {
			t.Fatalf("Fence() = %d; want 10", l.Fence())
		}
		time.Sleep(10 * time.Millisecond) // let the write-back reach the slower nodes
		for i, f := range fakes {
			if n := f.count("fence"); n != 1 {
				t.Errorf("node %d got %d write-backs; want 1 (sent to every node)", i, n)
			}
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
		// Now the quorum that saw F = 10 fails: nodes 0 and 1 go down.
		// The next quorum is nodes 2, 3, 4; without the write-back their
		// counters would give fence 3 or 4.
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { f.err = errors.New("down") })
		}
		l2, err := c.Acquire(t.Context(), "wb", time.Second, nil)
		if err != nil {
			t.Fatalf("second Acquire = %v", err)
		}
		if l2.Fence() <= l.Fence() {
			t.Errorf("second fence = %d; want > %d", l2.Fence(), l.Fence())
		}
		l2.Release(t.Context())
	})
}

func TestWriteBackWithoutQuorumFailsAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// All three nodes grant with fences {10, 1, 1}, so the write-back
		// is needed, and nodes 1 and 2 fail it.
		fakes := []*fakeNode{newFakeNode(), newFakeNode(), newFakeNode()}
		fakes[0].set(func(f *fakeNode) { f.kv["redlock:{nq}:fence"] = "9" })
		nodes := make([]node, len(fakes))
		for i, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = time.Duration(i) * time.Millisecond }) // node 0 first
			nodes[i] = node{addr: "fake", client: f}
			if i > 0 {
				nodes[i].client = &failScript{fakeNode: f, fail: fenceScript.Hash()}
			}
		}
		c, err := newClient(nodes, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { c.Close(); settle() }()
		_, err = c.Acquire(t.Context(), "nq", time.Second, &AcquireOptions{Retry: NoRetry()})
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Op != "fence write-back" || !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want a fence write-back QuorumError matching ErrNotAcquired", err)
		}
		time.Sleep(time.Second) // node 2's grant may arrive after the decision
		synctest.Wait()
		for i, f := range fakes {
			if v, ok := f.get("redlock:{nq}"); ok {
				t.Errorf("node %d holds %q; want the failed acquisition released", i, v)
			}
		}
	})
}

// failScript fails one script on a fake node.
type failScript struct {
	*fakeNode
	fail string
}

func (f *failScript) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == f.fail {
		return redis.NewCmdResult(nil, errors.New("ERR injected failure"))
	}
	return f.fakeNode.EvalSha(ctx, sha, keys, args...)
}

func TestRetryPolicies(t *testing.T) {
	if _, ok := NoRetry()(1); ok {
		t.Errorf("NoRetry()(1) ok = true; want false")
	}
	p := ExponentialBackoff(10*time.Millisecond, 80*time.Millisecond)
	seen := map[time.Duration]bool{}
	for attempt := 1; attempt <= 40; attempt++ {
		want := min(10*time.Millisecond<<min(attempt-1, 30), 80*time.Millisecond)
		for range 50 {
			d, ok := p(attempt)
			if !ok || d < want/2 || d > want {
				t.Fatalf("ExponentialBackoff(10ms, 80ms)(%d) = %v, %v; want in [%v, %v], true", attempt, d, ok, want/2, want)
			}
			seen[d] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("ExponentialBackoff drew only %d distinct delays; want jitter", len(seen))
	}
	l := LimitRetry(p, 3)
	for attempt, want := range []bool{true, true, false, false} {
		if _, ok := l(attempt + 1); ok != want {
			t.Errorf("LimitRetry(p, 3)(%d) ok = %v; want %v", attempt+1, ok, want)
		}
	}
}

func TestAcquireRetriesUntilFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		for _, f := range fakes {
			f.set(func(f *fakeNode) {
				f.kv["redlock:{busy}"] = "other"
				f.expiry["redlock:{busy}"] = time.Now().Add(300 * time.Millisecond)
			})
		}
		start := time.Now()
		l, err := c.Acquire(t.Context(), "busy", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v; want the lock once the other owner's key expires", err)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond || waited > 600*time.Millisecond {
			t.Errorf("Acquire waited %v; want a little over the 300ms the other owner held it", waited)
		}
		l.Release(t.Context())
	})
}

func TestAcquireContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fakes := newFakeClient(t, 3, nil)
				for _, f := range fakes {
					f.set(func(f *fakeNode) { f.kv["redlock:{held}"] = "other" })
				}
				ctx, cancel := tc.ctx(t.Context())
				defer cancel()
				start := time.Now()
				_, err := c.Acquire(ctx, "held", time.Second, nil)
				if !errors.Is(err, tc.want) || !errors.Is(err, ErrNotAcquired) {
					t.Errorf("Acquire = %v; want an error matching both %v and ErrNotAcquired", err, tc.want)
				}
				if waited := time.Since(start); waited != 100*time.Millisecond {
					t.Errorf("Acquire returned %v after start; want at once when the context ended (100ms)", waited)
				}
				var qe *QuorumError
				if errors.As(err, &qe) && !strings.Contains(qe.Error(), "held by another owner") {
					t.Errorf("error %q does not say the nodes were held", qe.Error())
				}
			})
		})
	}
}

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

func TestWatchdogKeepsLockAndReportsLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		l := autoLock(t, c, "wd", 300*time.Millisecond)
		ctx := l.Context(t.Context())
		time.Sleep(5 * 300 * time.Millisecond)
		if l.Err() != nil {
			t.Fatalf("Err() = %v after 5 TTLs; want the watchdog to keep the lock", l.Err())
		}
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { f.err = errors.New("connection refused") })
		}
		synctest.Wait() // a round that started before the failure lands first
		lostBy := l.ValidUntil()
		<-l.Done()
		if time.Now().After(lostBy) {
			t.Errorf("Done fired at %v, after the deadline %v", time.Now(), lostBy)
		}
		if !errors.Is(l.Err(), ErrLost) || !errors.Is(context.Cause(ctx), ErrLost) {
			t.Errorf("Err() = %v, Cause(ctx) = %v; want ErrLost", l.Err(), context.Cause(ctx))
		}
		if err := l.Release(t.Context()); !errors.Is(err, ErrLost) {
			t.Errorf("Release = %v; want ErrLost", err)
		}
	})
}

func TestReleaseEndsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		l := autoLock(t, c, "rel", time.Second)
		ctx := l.Context(t.Context())
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
		if !errors.Is(l.Err(), ErrReleased) || !errors.Is(context.Cause(ctx), ErrReleased) {
			t.Errorf("Err() = %v, Cause(ctx) = %v; want ErrReleased", l.Err(), context.Cause(ctx))
		}
		if err := l.Release(t.Context()); !errors.Is(err, ErrReleased) {
			t.Errorf("second Release = %v; want ErrReleased", err)
		}
		if err := l.Extend(t.Context(), time.Second); !errors.Is(err, ErrReleased) {
			t.Errorf("Extend after Release = %v; want ErrReleased", err)
		}
		synctest.Wait() // Release returned at quorum: the last delete may still be on its way
		for i, f := range fakes {
			if _, ok := f.get("redlock:{rel}"); ok {
				t.Errorf("node %d still holds the key", i)
			}
		}
	})
}

func TestLocalWaitersQueueInsteadOfContending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		holder, err := c.Acquire(t.Context(), "q", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the holder's own grants are all in
		before := fakes[0].count("acquire")
		got := make(chan *Lock)
		go func() {
			l, err := c.Acquire(context.Background(), "q", time.Minute, nil)
			if err != nil {
				l = nil
			}
			got <- l
		}()
		time.Sleep(10 * time.Second)
		if n := fakes[0].count("acquire") - before; n != 0 {
			t.Errorf("a local waiter made %d attempts on the nodes while the lock was held in the same client; want 0", n)
		}
		start := time.Now()
		if err := holder.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		next := <-got
		if next == nil {
			t.Fatal("the waiter did not get the lock after the local release")
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("handoff took %v after Release returned; want at once (no retry delay)", waited)
		}
		if next.Fence() <= holder.Fence() {
			t.Errorf("next fence %d; want > %d", next.Fence(), holder.Fence())
		}
		next.Release(t.Context())
	})
}

func TestQueuedWaiterGivesUpWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		holder, err := c.Acquire(t.Context(), "qc", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = c.Acquire(ctx, "qc", time.Minute, nil)
		if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("queued Acquire = %v; want ErrNotAcquired and DeadlineExceeded", err)
		}
		// A try-lock does not queue: it makes its one attempt and fails.
		_, err = c.Acquire(t.Context(), "qc", time.Minute, &AcquireOptions{Retry: NoRetry()})
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Agreed != 0 || qe.Attempts != 1 {
			t.Errorf("try-lock = %v; want one attempt refused by every node", err)
		}
		holder.Release(t.Context())
		// The turn passed on: the next Acquire gets the lock at once.
		l, err := c.Acquire(t.Context(), "qc", time.Minute, &AcquireOptions{Retry: NoRetry()})
		if err != nil {
			t.Fatalf("Acquire after release = %v", err)
		}
		l.Release(t.Context())
		l, err = c.Acquire(t.Context(), "qc", time.Minute, nil)
		if err != nil {
			t.Fatalf("queued Acquire after release = %v", err)
		}
		l.Release(t.Context())
	})
}

func TestLocalHandoffNotDelayedByDeadNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logSink{}
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 100 * time.Millisecond, Logger: slog.New(logs)})
		holder, err := c.Acquire(t.Context(), "h", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		hang := make(chan struct{})
		defer close(hang)
		fakes[2].set(func(f *fakeNode) { f.hang = hang }) // node 2 stops answering
		got := make(chan time.Time, 1)
		go func() {
			l, err := c.Acquire(context.Background(), "h", time.Minute, nil)
			if err == nil {
				got <- time.Now()
				l.Release(context.Background())
			}
			close(got)
		}()
		synctest.Wait() // the waiter is queued behind the holder
		start := time.Now()
		err = holder.Release(t.Context())
		if released := time.Since(start); released != 0 {
			t.Errorf("Release returned after %v; want at once, when a quorum had deleted", released)
		}
		if err != nil {
			t.Errorf("Release = %v; want nil: nodes 0 and 1 deleted", err)
		}
		at, ok := <-got
		if !ok {
			t.Fatal("the local waiter did not get the lock")
		}
		if d := at.Sub(start); d != 0 {
			t.Errorf("the local waiter got the lock %v after Release began; want at once, when a quorum had deleted", d)
		}
		time.Sleep(100 * time.Millisecond) // node 2's delete times out
		synctest.Wait()
		// Two releases (the holder's, then the waiter's) each time out on node 2.
		logged := logs.find(msgStraggler)
		if len(logged) != 2 || logged[0]["node"] != int64(2) || logged[1]["node"] != int64(2) {
			t.Errorf("straggler logs = %v; want node 2's timeout, for each release", logged)
		}
	})
}

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  grant
	}{
		{"1:0", grant{ok: true}},
		{"1:18446744073709551615", grant{ok: true, fence: 1<<64 - 1}},
		{"1:9007199254740993", grant{ok: true, fence: 1<<53 + 1}},
		{"0:1500", grant{pttl: 1500, rank: -1}},
		{"0:-1", grant{pttl: -1, rank: -1}},
		{"0:0:3", grant{rank: 3}},
	} {
		if g, err := parseGrant(tc.reply); err != nil || g != tc.want {
			t.Errorf("parseGrant(%q) = %+v, %v; want %+v", tc.reply, g, err, tc.want)
		}
	}
	for _, bad := range []string{"", "1", "1:", "1:-1", "1:x", "2:5", "0", "0:", "0:x", "0:5:", "0:5:x", "0:5:1:2", "OK"} {
		if g, err := parseGrant(bad); err == nil {
			t.Errorf("parseGrant(%q) = %+v; want an error", bad, g)
		}
	}
}

// A lease's strings, made in one piece, are the ones every other part of
// the client names: the keys, the release channel, the token and the
// values of its attempts.
func TestLeaseStrings(t *testing.T) {
	for _, prefix := range []string{"", "app:", strings.Repeat("p", 300)} {
		testLeaseStrings(t, prefix)
	}
}

func testLeaseStrings(t *testing.T, prefix string) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 1, &Options{KeyPrefix: prefix})
		for _, name := range []string{"a", "orders:42", strings.Repeat("n", MaxNameLen)} {
			ls := c.newLease(name, 1500*time.Millisecond, true)
			key, fenceKey := c.Keys(name)
			q, qt := queueKeys(key)
			if ls.key != key || ls.fenceKey != fenceKey || ls.queueKey != q || ls.queueTimesKey != qt {
				t.Errorf("prefix %q, name %q: lease keys %q %q %q %q; want %q %q %q %q", prefix, name,
					ls.key, ls.fenceKey, ls.queueKey, ls.queueTimesKey, key, fenceKey, q, qt)
			}
			if want := c.releaseChannel(key); ls.channel != want {
				t.Errorf("prefix %q, name %q: lease channel %q; want %q", prefix, name, ls.channel, want)
			}
			if len(ls.token) != len(newToken()) || strings.ContainsAny(ls.token, ".:{}") || ls.prefix != ls.token+"." {
				t.Errorf("token %q, prefix %q; want a token like %q and the token and a dot", ls.token, ls.prefix, newToken())
			}
			if ls.ttlArg != "1500" || ls.fenceArg != "1" {
				t.Errorf("ttl argument %q, fence argument %q; want \"1500\", \"1\"", ls.ttlArg, ls.fenceArg)
			}
			for _, attempt := range []int{1, 2, 10} {
				if got, want := ls.value(attempt), ls.token+"."+strconv.Itoa(attempt); got != want {
					t.Errorf("value(%d) = %q; want %q", attempt, got, want)
				}
			}
			// A lease that takes over another call's token (Resume)
			// makes its values from that token.
			ls.token, ls.prefix = "other", "other."
			if got := ls.value(1); got != "other.1" {
				t.Errorf("value(1) after the token changed = %q; want \"other.1\"", got)
			}
		}
		if ls := c.newLease("n", time.Second, false); ls.fenceArg != "0" {
			t.Errorf("unfenced lease: fence argument %q; want \"0\"", ls.fenceArg)
		}
	})
}
