package redlock

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// Tests of the safety fixes: one value per attempt, exact counters, honest
// deadlines, a watchdog that survives a blip. Each fails on the code before
// the fix.

// A delayed cleanup of a failed attempt reaches a node after the next
// attempt of the same call has taken it. With one token for every attempt,
// it deleted the key the winning attempt counted on; with one value per
// attempt it matches nothing.
func TestDelayedCleanupSparesNextAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 20 * time.Millisecond})
		// Someone else holds nodes 1 and 2 for 50ms; node 0 is free, and
		// every cleanup takes 300ms to reach it.
		fakes[0].set(func(f *fakeNode) { f.slowCleanup = 300 * time.Millisecond })
		for _, f := range fakes[1:] {
			f.set(func(f *fakeNode) {
				f.kv["redlock:{dc}"] = "someone-else.1"
				f.expiry["redlock:{dc}"] = time.Now().Add(50 * time.Millisecond)
			})
		}
		l, err := c.Acquire(t.Context(), "dc", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		defer l.Release(context.Background())
		time.Sleep(time.Second) // every delayed cleanup has landed
		synctest.Wait()
		for i, f := range fakes {
			if v, _ := f.get("redlock:{dc}"); !strings.HasPrefix(v, l.Token()+".") {
				t.Errorf("node %d holds %q after the delayed cleanups; want the lock's key (token %s)", i, v, l.Token())
			}
		}
		if n := fakes[0].count("cleanup"); n == 0 {
			t.Errorf("node 0 got no cleanup; the test did not exercise a failed attempt")
		}
	})
}

// A node whose reply is lost after its script ran holds our key: a late
// error is cleaned up like a late grant.
func TestLateErrorIsCleanedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 20 * time.Millisecond})
		fakes[0].set(func(f *fakeNode) {
			f.delay = 100 * time.Millisecond
			f.errAfter = errors.New("i/o timeout")
		})
		for _, f := range fakes[1:] {
			f.set(func(f *fakeNode) { f.kv["redlock:{le}"] = "someone-else.1" })
		}
		if _, err := c.Acquire(t.Context(), "le", time.Second, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		fakes[0].set(func(f *fakeNode) { f.errAfter = nil })
		time.Sleep(time.Second)
		synctest.Wait()
		noKey(t, fakes[:1], "redlock:{le}") // a late error reply is cleaned up
	})
}

// A quorum that arrives with validity left, but after the deadline (which
// counts from the start), is a failure.
func TestAcquireFailsWhenDeadlinePassed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		for _, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = 600 * time.Millisecond })
		}
		// validity = 1s - 600ms - 12ms = 388ms > 0, but start+388ms is past.
		l, err := c.Acquire(t.Context(), "late-deadline", time.Second, &AcquireOptions{Retry: NoRetry()})
		if err == nil {
			t.Fatalf("Acquire = lock valid until %v (now %v); want ErrNotAcquired", l.ValidUntil(), time.Now())
		}
		var qerr *QuorumError
		if !errors.As(err, &qerr) || !errors.Is(err, ErrNotAcquired) || qerr.Validity > 0 {
			t.Errorf("Acquire = %v; want a QuorumError with validity <= 0", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		noKey(t, fakes, "redlock:{late-deadline}") // the failed attempt is cleaned up
	})
}

// manualClock is a clock whose timers never fire: a deadline can pass
// without the lock noticing, as when its timer goroutine has not run yet.
type manualClock struct {
	mu  sync.Mutex // protects now
	now time.Time
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualClock) advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

func (m *manualClock) AfterFunc(time.Duration, func()) stopper { return nopStopper{} }

type nopStopper struct{}

func (nopStopper) Stop() bool { return true }

func TestExtendAfterDeadlineNeverRevives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		clk := &manualClock{now: time.Now()}
		c.clock = clk
		l, err := c.Acquire(t.Context(), "revive", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		clk.advance(2 * time.Second) // past the deadline; the timer has not run
		if err := l.Extend(t.Context(), time.Second); !errors.Is(err, ErrLost) {
			t.Errorf("Extend after the deadline = %v; want ErrLost", err)
		}
		if !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v after an extend past the deadline; want ErrLost (never revived)", l.Err())
		}
		select {
		case <-l.Done():
		default:
			t.Errorf("Done not closed after the lock was found lost")
		}
	})
}

// autoLock acquires name for ttl with the watchdog on, or stops the test.
func autoLock(t testing.TB, c *Client, name string, ttl time.Duration) *Lock {
	t.Helper()
	l, err := c.Acquire(t.Context(), name, ttl, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatalf("Acquire(%q) with AutoExtend = %v", name, err)
	}
	return l
}

// failFor makes the first n fakes fail with err from now on, for d.
func failFor(fakes []*fakeNode, n int, d time.Duration) {
	for _, f := range fakes[:n] {
		f.set(func(f *fakeNode) { f.err = errors.New("connection refused") })
		time.AfterFunc(d, func() { f.set(func(f *fakeNode) { f.err = nil }) })
	}
}

func TestWatchdogSurvivesBlip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "blip", ttl)
		defer l.Release(context.Background())
		// A majority is unreachable for 300ms around the first extend (at 1s).
		time.Sleep(900 * time.Millisecond)
		failFor(fakes, 2, 300*time.Millisecond)
		time.Sleep(5 * ttl)
		if err := l.Err(); err != nil {
			t.Errorf("Err() = %v after a 300ms blip with 2s of the lease left; want the watchdog to retry and keep it", err)
		}
	})
}

func TestWatchdogLossKeepsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "cause", ttl)
		ctx := l.Context(t.Context())
		time.Sleep(900 * time.Millisecond)
		lostBy := l.ValidUntil()
		failFor(fakes, 2, time.Hour)
		<-l.Done()
		if now := time.Now(); now.After(lostBy) {
			t.Errorf("Done fired at %v, after the deadline %v", now, lostBy)
		}
		if now := time.Now(); now.Before(lostBy.Add(-ttl / 3)) {
			t.Errorf("Done fired at %v, long before the deadline %v: one failed round ended the lease", now, lostBy)
		}
		var qerr *QuorumError
		if !errors.As(l.Err(), &qerr) || qerr.Op != "extend" || !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v; want the failed extend's QuorumError, matching ErrLost", l.Err())
		}
		if cause := context.Cause(ctx); !errors.As(cause, &qerr) || !errors.Is(cause, ErrLost) {
			t.Errorf("Cause(ctx) = %v; want the failed extend's QuorumError", cause)
		}
		l.Release(context.Background())
	})
}

func TestWatchdogLosesAtOnceWhenMajorityNotOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "gone", ttl)
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { f.kv["redlock:{gone}"] = "someone-else.1" })
		}
		deadline := l.ValidUntil()
		<-l.Done()
		if now := time.Now(); !now.Before(deadline.Add(-ttl / 2)) {
			t.Errorf("Done fired at %v; want at the first extend (~1s), well before the deadline %v", now, deadline)
		}
		if !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Err() = %v; want ErrLost", l.Err())
		}
		l.Release(context.Background())
	})
}

func TestErrHeldTellsBusyFromUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		for _, f := range fakes {
			f.set(func(f *fakeNode) {
				f.kv["redlock:{busy}"] = "someone-else.1"
				f.expiry["redlock:{busy}"] = time.Now().Add(time.Minute)
			})
		}
		_, err := c.Acquire(t.Context(), "busy", time.Second, &AcquireOptions{Retry: NoRetry()})
		var qerr *QuorumError
		var held *HeldError
		// The round is decided at the second "held": a quorum of 2 is then
		// impossible, whatever the third node says.
		if !errors.Is(err, ErrHeld) || !errors.As(err, &qerr) || qerr.Held < 2 || !errors.As(err, &held) || held.TTL <= 0 {
			t.Errorf("Acquire of a held lock = %v; want ErrHeld, Held >= 2 and the holder's TTL", err)
		}
		failFor(fakes, 3, time.Hour)
		if _, err := c.Acquire(t.Context(), "busy", time.Second, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrHeld) {
			t.Errorf("Acquire with every node unreachable = %v; want ErrNotAcquired, not ErrHeld", err)
		}
	})
}

// Contexts derived from a lock whose parents have ended must not pile up in
// the lock until it ends.
func TestContextDoesNotRetainDerived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		l, err := c.Acquire(t.Context(), "ctx", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		before := heap()
		for range 50000 {
			parent, cancel := context.WithCancel(context.Background())
			_ = l.Context(parent)
			cancel()
		}
		time.Sleep(100 * time.Millisecond) // context.AfterFunc callbacks run in goroutines
		grew := int64(heap()) - int64(before)
		if grew > 2<<20 {
			t.Errorf("heap grew %d bytes after 50000 Context calls whose parents ended; want them collectable", grew)
		}
		if l.Err() != nil {
			t.Fatalf("lock ended: %v", l.Err())
		}
		ctx := l.Context(context.Background())
		l.Release(context.Background())
		if !errors.Is(context.Cause(ctx), ErrReleased) {
			t.Errorf("Cause(ctx) after Release = %v; want ErrReleased", context.Cause(ctx))
		}
	})
}

func TestLockNameRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 1, nil)
		for _, tc := range []struct {
			name string
			ok   bool
		}{
			{"orders:42", true},
			{strings.Repeat("n", MaxNameLen), true},
			{"", false},
			{"a{b", false},
			{"a}b", false},
			{"{tag}", false},
			{strings.Repeat("n", MaxNameLen+1), false},
		} {
			l, err := c.Acquire(t.Context(), tc.name, time.Second, &AcquireOptions{Retry: NoRetry()})
			if (err == nil) != tc.ok {
				t.Errorf("Acquire(%.20q…) = %v; want ok %v", tc.name, err, tc.ok)
			}
			if err == nil {
				l.Release(t.Context())
			} else if !strings.HasPrefix(err.Error(), "redlock: ") {
				t.Errorf("Acquire(%.20q…) error %q does not start with redlock:", tc.name, err)
			}
		}
	})
}

// redisError is an error reply from a Redis server.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

var _ redis.Error = redisError("")

func TestPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{redisError("READONLY You can't write against a read only replica."), true},
		{redisError("CROSSSLOT Keys in request don't hash to the same slot"), true},
		{redisError("BADCOUNTER fence counter k holds \"x\""), true},
		{redisError("WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{redisError("NOPERM this user has no permissions"), true},
		{redisError("OOM command not allowed when used memory > 'maxmemory'"), false},
		{redisError("LOADING Redis is loading the dataset in memory"), false},
		{errors.New("dial tcp: connection refused"), false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

func TestObserveReportsLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var kinds []string
		c, fakes := newFakeClient(t, 3, &Options{Observe: func(e Event) {
			if e.Kind == EventNode {
				return // each node's answers: TestObserveReportsNodeAnswers
			}
			mu.Lock()
			defer mu.Unlock()
			if e.Kind != EventAcquire && e.Token == "" {
				t.Errorf("%v event without a token", e.Kind)
			}
			s := e.Kind.String()
			if e.Auto {
				s += "/auto"
			}
			if e.Err != nil {
				s += "/err"
			}
			kinds = append(kinds, s)
		}})
		l := autoLock(t, c, "obs", 3*time.Second)
		time.Sleep(1500 * time.Millisecond) // one automatic extend
		l.Release(context.Background())
		l2, err := c.Acquire(t.Context(), "obs", 3*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		failFor(fakes, 2, time.Hour)
		<-l2.Done()
		mu.Lock()
		defer mu.Unlock()
		want := "acquire extend/auto release acquire lost/err"
		if got := strings.Join(kinds, " "); got != want {
			t.Errorf("events = %q; want %q", got, want)
		}
	})
}

// Counters past 2^53 stay exact: the acquire script returns the counter as
// a string, not through a Lua number.
func TestFencesExactPast2to53(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	name := "exact-2-53"
	_, fenceKey := c.Keys(name)
	const seed = 1<<53 + 1
	for _, nd := range nodes(3) {
		if err := nd.Set(t.Context(), fenceKey, uint64(seed), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(1); i <= 4; i++ {
		l, err := c.Acquire(t.Context(), name, time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire #%d = %v", i, err)
		}
		if got := l.Fence(); got != seed+i {
			t.Errorf("Acquire #%d fence = %d; want %d exactly", i, got, uint64(seed+i))
		}
		l.Release(t.Context())
	}
}

// A corrupt counter fails the acquire at once, with a typed error, leaving
// both keys as they were: no retry loop, no stray lock key.
func TestBadCounterFailsCleanly(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	for _, bad := range []string{"abc", "-5", "007", "1.5", "9223372036854775807", "99999999999999999999"} {
		name := "bad-counter"
		key, fenceKey := c.Keys(name)
		for _, nd := range nodes(3) {
			if err := nd.Set(t.Context(), fenceKey, bad, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		start := time.Now()
		_, err := c.Acquire(ctx, name, time.Second, nil) // retries until ctx ends, unless the error is permanent
		cancel()
		if !errors.Is(err, ErrBadCounter) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("counter %q: Acquire = %v; want ErrBadCounter", bad, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("counter %q: Acquire took %v; want it to give up at once", bad, d)
		}
		assertNoLockKey(t, nodes(3), key)
		for i, nd := range nodes(3) {
			if got, _ := nd.Get(t.Context(), fenceKey).Result(); got != bad {
				t.Errorf("counter %q: node %d counter = %q; want it untouched", bad, i, got)
			}
			nd.Del(t.Context(), fenceKey)
		}
	}
}

// A node that turned into a read-only replica fails for good: once such
// nodes make the quorum impossible, Acquire gives up at once.
func TestReadOnlyReplicaEndsWait(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	ns := cl.Clients()
	for _, nd := range ns[:2] {
		// A master that does not exist: the node stays a read-only replica.
		if err := nd.Do(t.Context(), "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := newTestClient(t, ns, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Acquire(ctx, "ro", time.Second, nil)
	if !errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), "READONLY") || ctx.Err() != nil {
		t.Errorf("Acquire with 2 of 3 nodes read-only = %v after %v; want READONLY at once", err, time.Since(start))
	}
	key, _ := c.Keys("ro")
	assertNoLockKey(t, ns[2:], key)
}

// allNodes lists the indexes of n nodes.
func allNodes(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}
