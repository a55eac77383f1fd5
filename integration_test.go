package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// Integration tests: the scripts and the client against real Redis nodes in
// containers.

func TestMutualExclusion(t *testing.T) {
	// 32 goroutines in 4 clients (as if 4 processes): goroutines of one
	// client queue locally, the clients contend on the nodes.
	const clients = 4
	forEachN(t, func(t *testing.T, n int) {
		cs := make([]*Client, clients)
		for i := range cs {
			cs[i] = newTestClient(t, nodes(n), nil)
		}
		name := fmt.Sprintf("mutex-%d", n)
		const workers, rounds = 32, 5
		var (
			inside   atomic.Int32
			overlaps atomic.Int32
			mu       sync.Mutex // protects count, fences
			count    int
			fences   []uint64
			errs     = make(chan error, workers)
			wg       sync.WaitGroup
		)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			c := cs[w%clients]
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					l, err := c.Acquire(ctx, name, 5*time.Second, nil)
					if err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					mu.Lock()
					count++
					fences = append(fences, l.Fence())
					mu.Unlock()
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("worker: %v", err)
		}
		if got := overlaps.Load(); got != 0 {
			t.Errorf("%d overlapping holds; want 0", got)
		}
		if count != workers*rounds {
			t.Errorf("count = %d; want %d", count, workers*rounds)
		}
		for i := 1; i < len(fences); i++ {
			if fences[i] <= fences[i-1] {
				t.Errorf("fence %d = %d after %d; want fences to increase in the order of the holds", i, fences[i], fences[i-1])
				break
			}
		}
		key, _ := cs[0].Keys(name)
		assertNoLockKey(t, nodes(n), key)
	})
}

func TestOnlyHolderCanExtendOrRelease(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(n), nil)
		name := fmt.Sprintf("holder-%d", n)
		key, _ := c.Keys(name)
		a, err := c.Acquire(t.Context(), name, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire a = %v", err)
		}
		// a's lease ends on the nodes (as if its process had paused);
		// b takes the lock.
		for _, nd := range nodes(n) {
			nd.PExpire(t.Context(), key, time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		b, err := c.Acquire(t.Context(), name, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire b = %v", err)
		}
		if err := a.Extend(t.Context(), 5*time.Second); !errors.Is(err, ErrLost) {
			t.Errorf("a.Extend = %v; want ErrLost", err)
		}
		if err := a.Release(t.Context()); !errors.Is(err, ErrLost) {
			t.Errorf("a.Release = %v; want ErrLost (it was lost before)", err)
		}
		for i, nd := range nodes(n) {
			// b's Acquire returned at its quorum: give its last grants time to land.
			got, _ := nd.Get(t.Context(), key).Result()
			for deadline := time.Now().Add(2 * time.Second); got == "" && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				got, _ = nd.Get(t.Context(), key).Result()
			}
			if !strings.HasPrefix(got, b.Token()+".") {
				t.Errorf("node %d holds %q; want b's token %q untouched by a", i, got, b.Token())
			}
		}
		if err := b.Extend(t.Context(), 10*time.Second); err != nil {
			t.Errorf("b.Extend = %v", err)
		}
		if err := b.Release(t.Context()); err != nil {
			t.Errorf("b.Release = %v", err)
		}
		assertNoLockKey(t, nodes(n), key)
	})
}

func TestExtendKeepsFence(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(n), nil)
		name := fmt.Sprintf("extend-%d", n)
		key, fenceKey := c.Keys(name)
		l, err := c.Acquire(t.Context(), name, time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		fence := l.Fence()
		if err := l.Extend(t.Context(), time.Minute); err != nil {
			t.Fatalf("Extend = %v", err)
		}
		if l.Fence() != fence {
			t.Errorf("Fence() = %d after Extend; want %d", l.Fence(), fence)
		}
		if left := time.Until(l.ValidUntil()); left < 50*time.Second {
			t.Errorf("ValidUntil in %v; want about a minute after extending by one", left)
		}
		// Acquire and Extend return at quorum: a slow node's grant may still
		// be on its way, so the promise is about a quorum of nodes.
		extended := 0
		for i, nd := range nodes(n) {
			if ttl := nd.PTTL(t.Context(), key).Val(); ttl > 50*time.Second {
				extended++
			}
			if got, _ := nd.Get(t.Context(), fenceKey).Uint64(); got > fence {
				t.Errorf("node %d: fence counter = %d; want <= %d (extend does not count)", i, got, fence)
			}
		}
		if extended < c.Quorum() {
			t.Errorf("%d nodes have the key extended to about a minute; want a quorum of %d", extended, c.Quorum())
		}
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release = %v", err)
		}
		assertNoLockKey(t, nodes(n), key)
	})
}

func TestAcquireScriptAttempts(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	ls := c.newLease("idem", 10*time.Second, true)
	cl := &call{leaveTurn: func() {}}
	try := func(cl *call, attempt int) *Lock {
		t.Helper()
		l, qerr := c.try(t.Context(), cl, ls, attempt)
		if l != nil {
			t.Cleanup(func() { l.end(ErrReleased, 0) })
			return l
		}
		if !errors.Is(qerr, ErrHeld) {
			t.Fatalf("attempt %d: %v; want success or ErrHeld", attempt, qerr)
		}
		return nil
	}
	// holds checks every node once the calls still on their way (an
	// attempt returns at its quorum) have landed.
	holds := func(value string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for i, nd := range nodes(3) {
			got, err := nd.Get(t.Context(), ls.key).Result()
			for got != value && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				got, err = nd.Get(t.Context(), ls.key).Result()
			}
			if got != value {
				t.Errorf("node %d: GET %s = %q, %v; want %q", i, ls.key, got, err, value)
			}
		}
	}
	l1 := try(cl, 1)
	// The reply was "lost": the same attempt is sent again and succeeds.
	l1b := try(cl, 1)
	if l1 == nil || l1b == nil {
		t.Fatalf("attempt 1 and its resend = %v, %v; want both to succeed", l1, l1b)
	}
	if l1b.Fence() <= l1.Fence() {
		t.Errorf("resent attempt fence %d; want > %d", l1b.Fence(), l1.Fence())
	}
	// A later attempt of the same call takes over attempt 1's key (a late
	// grant of ours must not lock us out).
	if try(cl, 2) == nil {
		t.Fatalf("attempt 2 over attempt 1's key failed; want success")
	}
	holds(ls.value(2))
	// A delayed request of attempt 1 never takes the key back, and its
	// cleanup never deletes attempt 2's key. It is sent with its own call
	// state: the call itself never goes back to an earlier attempt, and
	// reusing it would make attempt 2's own late replies (still on their
	// way from the last node) look stale and clean themselves up.
	if l := try(&call{leaveTurn: func() {}}, 1); l != nil {
		t.Errorf("delayed attempt 1 after attempt 2 succeeded; want ErrHeld")
	}
	c.cleanup(t.Context(), ls, ls.value(1), allNodes(3))
	holds(ls.value(2))
	c.releaseAll(t.Context(), ls)
	assertNoLockKey(t, nodes(3), ls.key)
}

func TestFencesIncreaseAfterCountersDiverge(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(n), nil)
		name := fmt.Sprintf("diverge-%d", n)
		key, fenceKey := c.Keys(name)
		// Counters far apart, so the first acquisitions need the write-back.
		for i, nd := range nodes(n) {
			if err := nd.Set(t.Context(), fenceKey, (i*7919)%10007, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var last uint64
		for i := 0; i < 1000; i++ {
			l, err := c.Acquire(t.Context(), name, time.Second, nil)
			if err != nil {
				t.Fatalf("Acquire #%d = %v", i, err)
			}
			if l.Fence() <= last {
				t.Fatalf("Acquire #%d fence = %d after %d; want strictly increasing", i, l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Release(t.Context()); err != nil {
				t.Fatalf("Release #%d = %v", i, err)
			}
		}
		// The write-back left a quorum of counters at the last fence.
		atLast := 0
		for _, nd := range nodes(n) {
			if v, _ := nd.Get(t.Context(), fenceKey).Uint64(); v >= last {
				atLast++
			}
		}
		if atLast < c.Quorum() {
			t.Errorf("%d counters at >= %d; want a quorum of %d", atLast, last, c.Quorum())
		}
		assertNoLockKey(t, nodes(n), key)
	})
}

func TestScriptFlushMidRun(t *testing.T) {
	c := newTestClient(t, nodes(5), nil)
	key, _ := c.Keys("flush")
	for i := 0; i < 50; i++ {
		if i == 25 {
			for _, nd := range nodes(5) {
				if err := nd.ScriptFlush(t.Context()).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		l, err := c.Acquire(t.Context(), "flush", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire #%d = %v", i, err)
		}
		if i == 25 {
			// The lock is held: extend and release after another flush.
			for _, nd := range nodes(5) {
				nd.ScriptFlush(t.Context())
			}
			if err := l.Extend(t.Context(), time.Second); err != nil {
				t.Fatalf("Extend after SCRIPT FLUSH = %v", err)
			}
			for _, nd := range nodes(5) {
				nd.ScriptFlush(t.Context())
			}
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release #%d = %v", i, err)
		}
	}
	assertNoLockKey(t, nodes(5), key)
}

func TestWrongTypeKey(t *testing.T) {
	for _, tc := range []struct {
		name, which, want string
	}{
		{"lock-key", "lock", "holds a hash, not a lock"},
		{"fence-key", "fence", "holds a hash, not a counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, nodes(3), nil)
			name := "wrongtype-" + tc.name
			key, fenceKey := c.Keys(name)
			target := key
			if tc.which == "fence" {
				target = fenceKey
			}
			before := make([]int64, 3)
			for i, nd := range nodes(3) {
				nd.HSet(t.Context(), target, "owner", "someone")
				before[i] = nd.DBSize(t.Context()).Val()
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := c.Acquire(ctx, name, time.Second, nil)
			if !errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("Acquire = %v; want ErrNotAcquired naming WRONGTYPE and %q", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Errorf("Acquire waited for its context; want it to give up at once, since no retry can help")
			}
			var ne *NodeError
			if !errors.As(err, &ne) || ne.Addr == "" {
				t.Errorf("error %v carries no *NodeError with an address", err)
			}
			for i, nd := range nodes(3) {
				if got := nd.HGet(t.Context(), target, "owner").Val(); got != "someone" {
					t.Errorf("node %d: the hash was changed to %q", i, got)
				}
				if got := nd.DBSize(t.Context()).Val(); got != before[i] {
					t.Errorf("node %d: DBSIZE %d -> %d; want nothing created", i, before[i], got)
				}
				nd.Del(t.Context(), target)
			}
		})
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []redis.UniversalClient
		opts  *Options
		want  string
	}{
		{"no nodes", nil, nil, "no nodes: pass at least one"},
		{"nil node", []redis.UniversalClient{cluster().Client(0), nil}, nil, "node 1 is nil"},
		{"negative drift", nodes(1), &Options{DriftFactor: -0.1}, "DriftFactor -0.1 is out of range"},
		{"drift of one", nodes(1), &Options{DriftFactor: 1}, "DriftFactor 1 is out of range"},
		{"NaN drift", nodes(1), &Options{DriftFactor: math.NaN()}, "DriftFactor NaN is out of range"},
		{"negative timeout", nodes(1), &Options{NodeTimeout: -time.Second}, "NodeTimeout -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.nodes, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "redlock: ") {
				t.Errorf("New = %v, %v; want an error containing %q", c, err, tc.want)
			}
		})
	}

	c := newTestClient(t, nodes(3), nil)
	for _, tc := range []struct {
		name string
		lock string
		ttl  time.Duration
		want string
	}{
		{"empty name", "", time.Second, "empty lock name"},
		{"zero ttl", "x", 0, "TTL 0s is too short"},
		{"sub-millisecond ttl", "x", 500 * time.Microsecond, "TTL 500µs is too short"},
		{"ttl within drift", "x", 2 * time.Millisecond, "not longer than its drift allowance"},
		{"negative ttl", "x", -time.Second, "TTL -1s is too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Acquire(t.Context(), tc.lock, tc.ttl, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNotAcquired) {
				t.Errorf("Acquire(%q, %v) = %v, %v; want a config error containing %q", tc.lock, tc.ttl, l, err, tc.want)
			}
		})
	}
	key, _ := c.Keys("x")
	assertNoLockKey(t, nodes(3), key)

	l, err := c.Acquire(t.Context(), "bad-extend", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("Extend(0) = %v; want a TTL error", err)
	}
	if l.Err() != nil {
		t.Errorf("Err() = %v after a rejected Extend; want the lock still held", l.Err())
	}
	l.Release(t.Context())
}

func TestReleaseWakesWaiter(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	holder, err := c.Acquire(t.Context(), "wake", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's retry delay is an hour: only the release notice can
	// get it the lock within the test's time.
	hour := func(int) (time.Duration, bool) { return time.Hour, true }
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := c.Acquire(ctx, "wake", time.Minute, &AcquireOptions{Retry: hour})
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond) // the waiter has failed once and subscribed
	if err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter: %v; want the lock after the holder's release", err)
	}
}

func TestWatchdogAndLossOnRealNodes(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	c := newTestClient(t, cl.Clients(), nil)
	const ttl = 400 * time.Millisecond
	l, err := c.Acquire(t.Context(), "watchdog", ttl, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * ttl)
	if err := l.Err(); err != nil {
		t.Fatalf("Err() = %v after 5 TTLs; want the watchdog to keep it", err)
	}
	key, _ := c.Keys("watchdog")
	for i := 0; i < 3; i++ {
		if got := cl.Client(i).Get(t.Context(), key).Val(); !strings.HasPrefix(got, l.Token()+".") {
			t.Errorf("node %d holds %q; want our token", i, got)
		}
	}
	// A majority goes away: the holder must be told by its deadline. (The
	// watchdog retries failed rounds until then: Stop takes a while.)
	fired := make(chan time.Time, 1)
	go func() { <-l.Done(); fired <- time.Now() }()
	for _, i := range []int{1, 2} {
		if err := cl.Stop(i); err != nil {
			t.Fatal(err)
		}
	}
	var at time.Time
	select {
	case at = <-fired:
	case <-time.After(5 * ttl):
		t.Fatalf("Done did not fire within 5 TTLs of losing the majority")
	}
	// An extend that was on its way while the nodes stopped may still have
	// moved the deadline; the signal must come no later than the deadline
	// the lock had when it was lost (timer slack aside).
	if late := at.Sub(l.ValidUntil()); late > 20*time.Millisecond {
		t.Errorf("Done fired %v after the deadline", late)
	}
	if !errors.Is(l.Err(), ErrLost) {
		t.Errorf("Err() = %v; want ErrLost", l.Err())
	}
	if err := l.Release(t.Context()); !errors.Is(err, ErrLost) {
		t.Errorf("Release = %v; want ErrLost", err)
	}
	if got := cl.Client(0).Exists(t.Context(), key).Val(); got != 0 {
		t.Errorf("node 0 still has the key after the lost lock was released")
	}
}

func TestAcquireWithMinorityDown(t *testing.T) {
	cl := redlocktest.Start(t, 5, nil)
	for _, i := range []int{3, 4} {
		if err := cl.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	logs := &logSink{}
	rc := newTestClient(t, cl.Clients(), &Options{NodeTimeout: time.Second, Logger: slog.New(logs)})
	l, err := rc.Acquire(t.Context(), "minority", time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire with 3 of 5 up = %v", err)
	}
	// Release returns once 3 nodes deleted; the dead nodes' failures are
	// in its error if they came first, in the log (by Close) otherwise.
	reported := map[int]bool{}
	if err := l.Release(t.Context()); err != nil {
		for _, e := range flattenErrors(err) {
			var ne *NodeError
			if !errors.As(e, &ne) || (ne.Node != 3 && ne.Node != 4) {
				t.Errorf("Release = %v; want only nodes 3 and 4 reported", err)
				continue
			}
			reported[ne.Node] = true
		}
	}
	rc.Close() // waits for the stragglers
	for _, a := range logs.find(msgStraggler) {
		reported[int(a["node"].(int64))] = true
	}
	if !reported[3] || !reported[4] || len(reported) != 2 {
		t.Errorf("nodes reported by Release or the log: %v; want 3 and 4", reported)
	}
	c := newTestClient(t, cl.Clients(), nil)
	cl.Kill(2)
	_, err = c.Acquire(t.Context(), "minority", time.Second, &AcquireOptions{Retry: NoRetry()})
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Agreed != 2 || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire with 2 of 5 up = %v; want a QuorumError with 2 agreed", err)
	}
	for _, s := range []string{"2 of 5 nodes agreed, quorum is 3", cl.Addr(2), cl.Addr(3)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	key, _ := c.Keys("minority")
	assertNoLockKey(t, []redis.UniversalClient{cl.Client(0), cl.Client(1)}, key)
}
