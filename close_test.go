package redlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of Close against the Acquire calls it finds waiting, on real Redis:
// every wait ends with ErrClosed, the Client's queue entries go, and no lock
// leaves a closed Client.

// closeBound is how soon after Close begins every waiting Acquire call of
// the Client must have returned. The calls need one round to leave the
// queue, which healthy local nodes answer in milliseconds; the bound leaves
// room for a loaded machine under the race detector.
const closeBound = 2 * time.Second

// acquired is what one Acquire call returned.
type acquired struct {
	l   *Lock
	err error
}

// startAcquires starts n Acquire calls of name on c, with ctx and opts,
// each in a goroutine of its own (owner: the test; joined by collecting
// their n results from the returned channel, buffered to n).
func startAcquires(ctx context.Context, c *Client, name string, n int, opts *AcquireOptions) <-chan acquired {
	results := make(chan acquired, n)
	for range n {
		go func() {
			l, err := c.Acquire(ctx, name, 10*time.Second, opts)
			results <- acquired{l, err}
		}()
	}
	return results
}

// turnsLen returns how many Acquire calls of c are in the local queue of
// lock key (the one with the turn included).
func turnsLen(c *Client, key string) int {
	c.turns.mu.Lock()
	defer c.turns.mu.Unlock()
	return len(c.turns.queues[key])
}

// waitTurns waits until want Acquire calls of c are in key's local queue.
func waitTurns(t testing.TB, c *Client, key string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for turnsLen(c, key) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d Acquire calls in the local queue of %s, want %d", turnsLen(c, key), key, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closeWhileWaiting closes c and collects the n results of its calls, each
// of which must come within closeBound of Close and be an error matching
// ErrClosed and ErrNotAcquired (not context.Canceled: the callers' contexts
// did not end). Calls still waiting then are reported, and unstick is called
// (say, the holder's Release) so that they end; every lock a call returned
// is reported and released. It returns the errors the calls returned.
func closeWhileWaiting(t *testing.T, c *Client, results <-chan acquired, n int, unstick func()) []error {
	t.Helper()
	start := time.Now()
	closed := make(chan struct{})
	go func() { // owner: the test; joined below
		defer close(closed)
		c.Close()
	}()
	errs := collectClosed(t, results, n, start, unstick)
	<-closed
	return errs
}

// collectClosed collects the n results of a closed Client's calls; see
// closeWhileWaiting.
func collectClosed(t *testing.T, results <-chan acquired, n int, start time.Time, unstick func()) []error {
	t.Helper()
	var errs []error
	check := func(r acquired) {
		if r.l != nil {
			t.Errorf("Acquire = lock (fence %d) from a closed Client; want an error matching ErrClosed", r.l.Fence())
			if err := r.l.Release(context.Background()); err != nil {
				t.Errorf("releasing the lock of a closed Client: %v", err)
			}
			return
		}
		errs = append(errs, r.err)
		if !errors.Is(r.err, ErrClosed) || !errors.Is(r.err, ErrNotAcquired) || errors.Is(r.err, context.Canceled) {
			t.Errorf("Acquire = %v; want an error matching ErrClosed and ErrNotAcquired, not context.Canceled", r.err)
		}
	}
	bound := time.NewTimer(time.Until(start.Add(closeBound)))
	defer bound.Stop()
	got := 0
	for ; got < n; got++ {
		select {
		case r := <-results:
			check(r)
			continue
		case <-bound.C:
			t.Errorf("%d of %d waiting Acquire calls still wait %v after Close", n-got, n, closeBound)
		}
		break
	}
	if got == n {
		t.Logf("all %d calls returned within %v of Close", n, time.Since(start).Round(time.Millisecond))
		return errs
	}
	unstick()
	for ; got < n; got++ {
		select {
		case r := <-results:
			check(r)
		case <-time.After(time.Minute):
			t.Fatalf("%d Acquire calls of a closed Client never returned", n-got)
		}
	}
	return errs
}

// assertNoEntriesOf fails the test if the queue of lock key on any node
// still holds an entry of the Client with waker id client once the leaves in
// flight have landed (entries are "<token>:<client>[:<ttl>:<fence>]").
func assertNoEntriesOf(t testing.TB, ns []redis.UniversalClient, key, client string) {
	t.Helper()
	q, qt := key+":q", key+":qt" // (keysOf derives them so)
	deadline := time.Now().Add(2 * time.Second)
	for i, n := range ns {
		for _, k := range []string{q, qt} {
			for {
				entries, err := n.ZRange(context.Background(), k, 0, -1).Result()
				var mine []string
				for _, e := range entries {
					if parts := strings.Split(e, ":"); len(parts) > 1 && parts[1] == client {
						mine = append(mine, e)
					}
				}
				if err == nil && len(mine) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("node %d: ZRANGE %s = %q, %v; want no entry of the closed Client", i, k, mine, err)
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// assertFree checks that name is free on ns and nobody waits for it: no
// lock key, and a fresh Client's try-lock (which gives way to any queued
// waiter) wins; it releases that lock and checks that no key is left.
func assertFree(t *testing.T, ns []redis.UniversalClient, name string) {
	t.Helper()
	fresh := newTestClient(t, ns, nil)
	key, _ := fresh.Keys(name)
	assertNoLockKey(t, ns, key)
	l, err := fresh.Acquire(context.Background(), name, 10*time.Second, &AcquireOptions{Retry: NoRetry()})
	if err != nil {
		t.Fatalf("try-lock Acquire(%q) by a fresh Client = %v; want the lock (nobody holds or waits for it)", name, err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	assertNoLockKey(t, ns, key)
	assertNoQueueKeys(t, fresh, ns, name)
}

// TestCloseEndsWaitingAcquires: a Client whose Acquire calls wait for a lock
// another Client holds (the first in the nodes' queue, the others in its
// local queue) is closed. Every call returns ErrClosed at once, none
// returns a lock, the Client's queue entries go, and when the holder
// releases, nobody of the closed Client takes the name.
func TestCloseEndsWaitingAcquires(t *testing.T) {
	const name, waiters = "close-waiters", 6
	ns, _, held := holdFair(t, 3, name)
	c := newTestClient(t, ns, nil)
	key, _ := c.Keys(name)
	results := startAcquires(context.Background(), c, name, waiters, nil)
	waitQueued(t, c, ns, name, 1) // the call with the turn, on every node
	waitTurns(t, c, key, waiters) // the others wait for its turn

	release := sync.OnceFunc(func() {
		if err := held.Release(context.Background()); err != nil {
			t.Errorf("holder's Release: %v", err)
		}
	})
	closeWhileWaiting(t, c, results, waiters, release)
	assertNoEntriesOf(t, ns, key, c.waker.id)
	release()
	assertFree(t, ns, name)
}

// TestCloseEndsWaitInLocalTurn: an Acquire call that waits for its turn
// among its Client's calls of the same name, and has not reached the nodes
// yet, ends with ErrClosed when the Client is closed, whether the call
// ahead waits on the nodes or holds the lock.
func TestCloseEndsWaitInLocalTurn(t *testing.T) {
	t.Run("behind a waiter", func(t *testing.T) {
		const name = "close-turn-waiter"
		ns, _, held := holdFair(t, 3, name)
		c := newTestClient(t, ns, nil)
		key, _ := c.Keys(name)
		results := startAcquires(context.Background(), c, name, 2, nil)
		waitQueued(t, c, ns, name, 1)
		waitTurns(t, c, key, 2)

		release := sync.OnceFunc(func() {
			if err := held.Release(context.Background()); err != nil {
				t.Errorf("holder's Release: %v", err)
			}
		})
		errs := closeWhileWaiting(t, c, results, 2, release)
		inTurn := 0
		for _, err := range errs {
			if qe, ok := errors.AsType[*QuorumError](err); ok && qe.Attempts == 0 {
				inTurn++
			}
		}
		if len(errs) == 2 && inTurn != 1 {
			t.Errorf("%d of the calls ended without an attempt (in their local turn); want 1: %v", inTurn, errs)
		}
		assertNoEntriesOf(t, ns, key, c.waker.id)
		release()
		assertFree(t, ns, name)
	})
	t.Run("behind its holder", func(t *testing.T) {
		const name = "close-turn-holder"
		ns := nodes(t, 3)
		c := newTestClient(t, ns, nil)
		key, _ := c.Keys(name)
		held, err := c.Acquire(context.Background(), name, 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		results := startAcquires(context.Background(), c, name, 1, nil)
		waitTurns(t, c, key, 2)

		release := sync.OnceFunc(func() {
			if err := held.Release(context.Background()); err != nil {
				t.Errorf("Release of the lock held at Close: %v", err)
			}
		})
		for _, err := range closeWhileWaiting(t, c, results, 1, release) {
			if qe, ok := errors.AsType[*QuorumError](err); !ok || qe.Attempts != 0 {
				t.Errorf("Acquire = %v; want a *QuorumError of no attempt (it waited for its turn)", err)
			}
		}
		release() // a lock held at Close can still be released
		assertFree(t, ns, name)
	})
}

// TestCloseRacesHolderRelease: the holder releases the name while the
// waiting Client is being closed, so that the release may grant the key to
// the closed Client's call, wake it, or find it leaving the queue. Whatever
// the order, no lock is returned and nothing of the closed Client is left
// on the nodes.
func TestCloseRacesHolderRelease(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			name := fmt.Sprintf("close-race-%d", i)
			ns, _, held := holdFair(t, 3, name)
			c := newTestClient(t, ns, nil)
			key, _ := c.Keys(name)
			results := startAcquires(context.Background(), c, name, 2, nil)
			waitQueued(t, c, ns, name, 1)
			waitTurns(t, c, key, 2)

			start := time.Now()
			closed := make(chan struct{})
			go func() { // owner: the test; joined below
				defer close(closed)
				c.Close()
			}()
			for !c.isClosed() {
				runtime.Gosched()
			}
			if err := held.Release(context.Background()); err != nil {
				t.Errorf("holder's Release: %v", err)
			}
			collectClosed(t, results, 2, start, func() {})
			<-closed
			assertNoEntriesOf(t, ns, key, c.waker.id)
			assertFree(t, ns, name)
		})
	}
}

// holdAnswers is a go-redis hook that holds the answers to the acquire
// script (the node has run it) until open is closed, and says when it
// holds one.
type holdAnswers struct {
	holding chan struct{} // one send per answer held, buffered
	open    chan struct{}
}

func (h *holdAnswers) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdAnswers) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); cmd.Name() == "evalsha" && len(args) > 1 && args[1] == acquirePlainScript.Hash() {
			select {
			case h.holding <- struct{}{}:
			default: // nobody counts them any more
			}
			<-h.open
		}
		return err
	}
}

func (h *holdAnswers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestCloseReleasesAttemptInFlight: an Acquire attempt whose nodes answer
// only after Close has begun, granting the lock, does not hand it out: the
// key is deleted on the nodes and the call returns ErrClosed. For a waiting
// call, Close ends the round; a try-lock's round runs to its end, and wins.
func TestCloseReleasesAttemptInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *AcquireOptions
	}{
		{"wait", nil},
		{"try", &AcquireOptions{Retry: NoRetry()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			name := "close-in-flight-" + tc.name
			hook := &holdAnswers{holding: make(chan struct{}, 16), open: make(chan struct{})}
			clients := make([]redis.UniversalClient, n)
			for i := range n {
				rc := redis.NewClient(&redis.Options{Addr: cluster(t).Addr(i)})
				t.Cleanup(func() { rc.Close() })
				rc.AddHook(hook)
				clients[i] = rc
			}
			// Loads the script on the nodes: the hook holds EVALSHA only.
			assertFree(t, nodes(t, n), name)
			c := newTestClient(t, clients, nil)
			open := sync.OnceFunc(func() { close(hook.open) })
			t.Cleanup(open) // before c.Close: nothing holds its calls then

			results := startAcquires(context.Background(), c, name, 1, tc.opts)
			for range n { // the attempt has taken the key on every node
				<-hook.holding
			}
			start := time.Now()
			closed := make(chan struct{})
			go func() { // owner: the test; joined below
				defer close(closed)
				c.Close()
			}()
			for !c.isClosed() {
				runtime.Gosched()
			}
			open()
			collectClosed(t, results, 1, start, func() {})
			<-closed
			key, _ := c.Keys(name)
			assertNoEntriesOf(t, nodes(t, n), key, c.waker.id)
			assertFree(t, nodes(t, n), name)
		})
	}
}

// closeInGrant is a clock that closes its Client the first time takeGrant
// reads it, and waits until Close has begun: a release's grant then comes
// to a call just as its Client is being closed.
type closeInGrant struct {
	c      *Client
	once   sync.Once
	fired  atomic.Bool
	closed chan struct{} // closed once Close has returned
}

func (k *closeInGrant) Now() time.Time {
	if calledFrom("takeGrant") {
		k.once.Do(func() {
			k.fired.Store(true)
			go func() { // owner: the test; joined by <-k.closed
				defer close(k.closed)
				k.c.Close()
			}()
			for !k.c.isClosed() {
				runtime.Gosched()
			}
		})
	}
	return time.Now()
}

func (k *closeInGrant) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// calledFrom reports whether a function named fn (a method's name without
// its receiver) is among the callers.
func calledFrom(fn string) bool {
	pc := make([]uintptr, 16)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "."+fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestCloseDropsGrantAfterClose: a release grants the key to a waiting call
// whose Client's Close begins as the call takes the lock from the grants.
// The call returns ErrClosed, not a lock, and its grants go. A poll of the
// waiter may win the key before the grant comes (see
// TestGrantHandsOffWithoutAnAttempt): the handoff is tried a few times,
// and must come from the grants at least once.
func TestCloseDropsGrantAfterClose(t *testing.T) {
	const tries = 5
	ctx := context.Background()
	hits := 0
	for i := 0; i < tries && hits == 0; i++ {
		name := fmt.Sprintf("close-grant-%d", i)
		ns, _, held := holdFair(t, 3, name)
		c := newTestClient(t, ns, nil)
		clk := &closeInGrant{c: c, closed: make(chan struct{})}
		c.clock = clk
		key, _ := c.Keys(name)
		// The waiter polls as seldom as a queued waiter may; a long TTL
		// keeps its wait short enough to take the lock from the grants.
		opts := &AcquireOptions{Retry: func(int) (time.Duration, bool) { return time.Hour, true }}
		results := make(chan acquired, 1)
		go func() { // owner: the test; joined by receiving from results
			l, err := c.Acquire(ctx, name, time.Minute, opts)
			results <- acquired{l, err}
		}()
		waitQueued(t, c, ns, name, 1)
		waitSubscribed(t, c, c.keys(name).channel+":"+c.waker.id, len(ns))
		start := time.Now()
		if err := held.Release(ctx); err != nil {
			t.Fatalf("holder's Release: %v", err)
		}
		var r acquired
		select {
		case r = <-results:
		case <-time.After(time.Minute):
			t.Fatalf("Acquire still waits a minute after the release")
		}
		if !clk.fired.Load() { // a poll took the key: not the case under test
			if r.err != nil {
				t.Fatalf("Acquire = %v; want the released lock", r.err)
			}
			if err := r.l.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			assertFree(t, ns, name)
			continue
		}
		hits++
		results <- r
		collectClosed(t, results, 1, start, func() {})
		<-clk.closed
		assertNoEntriesOf(t, ns, key, c.waker.id)
		assertFree(t, ns, name)
	}
	if hits == 0 {
		t.Fatalf("in %d handoffs the waiter never took the lock from the grants", tries)
	}
}
