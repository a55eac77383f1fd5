package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// Tests of the waiting order (queue.go) on real Redis. Each waiter has a
// Client of its own, as a separate process would.

// queueLen returns the number of entries in name's queue on each node.
func queueLen(t testing.TB, c *Client, ns []redis.UniversalClient, name string) []int64 {
	t.Helper()
	q := c.keys(name).queue
	out := make([]int64, len(ns))
	for i, n := range ns {
		v, err := n.ZCard(context.Background(), q).Result()
		if err != nil {
			t.Fatalf("node %d: ZCARD %s: %v", i, q, err)
		}
		out[i] = v
	}
	return out
}

// waitQueued waits until name's queue holds want entries on every node.
func waitQueued(t testing.TB, c *Client, ns []redis.UniversalClient, name string, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := true
		for _, n := range queueLen(t, c, ns, name) {
			all = all && n == want
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue of %q: %v entries per node, want %d on every node", name, queueLen(t, c, ns, name), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// assertNoQueueKeys fails the test if any node still has name's queue keys.
func assertNoQueueKeys(t testing.TB, c *Client, ns []redis.UniversalClient, name string) {
	t.Helper()
	q, qt := c.keys(name).queue, c.keys(name).queueTimes
	assertNoLockKey(t, ns, q)
	assertNoLockKey(t, ns, qt)
}

// enqueueDead puts an entry for token in name's queue on every node, as a
// waiter that then died would leave it: priority prio (unix µs), the key
// held by someone else so the script queues it.
func enqueueDead(t testing.TB, c *Client, ns []redis.UniversalClient, name, token string, prio int64) {
	t.Helper()
	key, _ := c.Keys(name)
	for i, n := range ns {
		v, err := acquirePlainScript.Run(context.Background(), n, []string{key},
			token+".1", "10000", "0", queueWait, token, fmt.Sprint(prio), queueTTLArg).Text()
		if g, perr := parseTake(v); err != nil || perr != nil || g.ok || g.rank < 0 {
			t.Fatalf("node %d: queueing a dead waiter: %v, %v (want it refused and queued: is the key held?)", i, v, err)
		}
	}
}

// holdFair returns the first n nodes and a Client holding name on them (10s).
func holdFair(t *testing.T, n int, name string) ([]redis.UniversalClient, *Client, *Lock) {
	t.Helper()
	ns := nodes(t, n)
	holder := newTestClient(t, ns, nil)
	l, err := holder.Acquire(context.Background(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Acquire returns at a quorum; the tests need the key on every node
	// (a waiter that finds a node free is granted there instead of queued),
	// so let the last grants land.
	key, _ := holder.Keys(name)
	deadline := time.Now().Add(5 * time.Second)
	for i, nd := range ns {
		for nd.Exists(context.Background(), key).Val() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: the holder's key %s never landed", i, key)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return ns, holder, l
}

func TestFairFIFOAcrossClients(t *testing.T) {
	const name, waiters = "fair-fifo", 5
	ns, holder, l := holdFair(t, 5, name)
	ctx := context.Background()

	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for w := range waiters {
		c := newTestClient(t, ns, nil)
		wg.Add(1)
		go func() { // owner: the test; joined below
			defer wg.Done()
			lk, err := c.Acquire(ctx, name, 10*time.Second, nil)
			if err != nil {
				errs <- fmt.Errorf("waiter %d: %w", w, err)
				return
			}
			mu.Lock()
			order = append(order, w)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // give a barging waiter its chance to overtake
			if err := lk.Release(ctx); err != nil {
				errs <- fmt.Errorf("waiter %d: release: %w", w, err)
			}
		}()
		// The next waiter starts once this one has its place on every node.
		waitQueued(t, c, ns, name, int64(w+1))
		time.Sleep(2 * time.Millisecond) // a later start: a later priority
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, w := range order {
		if w != i {
			t.Fatalf("waiters got the lock in the order %v, want 0..%d (the order they queued in)", order, waiters-1)
		}
	}
	if len(order) != waiters {
		t.Fatalf("%d of %d waiters got the lock", len(order), waiters)
	}
	assertNoQueueKeys(t, holder, ns, name)
	key, _ := holder.Keys(name)
	assertNoLockKey(t, ns, key)
}

func TestFairDeadWaiterStallsAtMostItsExpiry(t *testing.T) {
	const name = "fair-dead"
	ns, holder, l := holdFair(t, 3, name)
	live := newTestClient(t, ns, nil)
	ctx := context.Background()
	// A waiter that queued first and then died: its process is gone.
	queuedAt := time.Now()
	enqueueDead(t, holder, ns, name, "dead", queuedAt.UnixMicro())

	got := make(chan time.Time, 1)
	var lk *Lock
	var lerr error
	done := make(chan struct{})
	go func() { // owner: the test; joined by <-done
		defer close(done)
		lk, lerr = live.Acquire(ctx, name, 10*time.Second, nil)
		got <- time.Now()
	}()
	waitQueued(t, live, ns, name, 2)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if lerr != nil {
		t.Fatal(lerr)
	}
	at := <-got
	waited := at.Sub(queuedAt)
	// Not before the dead entry expires (the order is honoured: negative
	// control) and not much after (it stops blocking): one poll of the
	// live waiter late at most, plus slack for a loaded machine.
	if waited < queueTTL-50*time.Millisecond {
		t.Errorf("the live waiter got the lock %v after the dead one queued: before the dead entry's expiry %v", waited, queueTTL)
	}
	if limit := queueTTL + queueRefresh + 2*time.Second; waited > limit {
		t.Errorf("the live waiter got the lock %v after the dead one queued: a dead waiter stalled it longer than %v", waited, limit)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoQueueKeys(t, holder, ns, name)
}

func TestFairCancelledWaiterLeavesQueue(t *testing.T) {
	const name = "fair-cancel"
	ns, holder, l := holdFair(t, 3, name)
	first, second := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	firstErr := make(chan error, 1)
	go func() { // owner: the test; joined by <-firstErr
		_, err := first.Acquire(cctx, name, 10*time.Second, nil)
		firstErr <- err
	}()
	waitQueued(t, first, ns, name, 1)
	type result struct {
		l   *Lock
		err error
	}
	secondRes := make(chan result, 1)
	go func() { // owner: the test; joined by <-secondRes
		l, err := second.Acquire(ctx, name, 10*time.Second, nil)
		secondRes <- result{l, err}
	}()
	waitQueued(t, second, ns, name, 2)

	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("cancelled waiter: %v, want ErrNotAcquired and context.Canceled", err)
	}
	// Its entry is gone from every node once Acquire has returned.
	for i, n := range queueLen(t, first, ns, name) {
		if n != 1 {
			t.Errorf("node %d: %d queue entries after the head gave up, want 1 (the second waiter)", i, n)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-secondRes
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoQueueKeys(t, holder, ns, name)
}

func TestFairTryLockNeverQueues(t *testing.T) {
	ns := nodes(t, 3)
	const name = "fair-try"
	c := newTestClient(t, ns, nil)
	ctx := context.Background()
	try := &AcquireOptions{Retry: NoRetry()}

	// Free key, empty queue: a try-lock takes it and leaves no queue key.
	l, err := c.Acquire(ctx, name, 10*time.Second, try)
	if err != nil {
		t.Fatalf("try-lock on a free name: %v", err)
	}
	// Held: fails at once and does not queue.
	if _, err := c.Acquire(ctx, name, 10*time.Second, try); !errors.Is(err, ErrHeld) {
		t.Fatalf("try-lock on a held name: %v, want ErrHeld", err)
	}
	assertNoQueueKeys(t, c, ns, name)

	// Free key, somebody queued: a fair try-lock fails at once (ErrHeld: a
	// waiter comes first); a barging one takes it.
	enqueueDead(t, c, ns, name, "waiter", time.Now().UnixMicro())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Acquire(ctx, name, 10*time.Second, try)
	if !errors.Is(err, ErrHeld) || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("fair try-lock on a free name with a waiter queued: %v, want ErrNotAcquired and ErrHeld", err)
	}
	if waited := time.Since(start); waited >= queueTTL {
		t.Fatalf("fair try-lock took %v: it waited for the queue", waited)
	}
	for i, n := range queueLen(t, c, ns, name) {
		if n != 1 {
			t.Errorf("node %d: %d queue entries, want 1: a try-lock must not queue", i, n)
		}
	}
	l, err = c.Acquire(ctx, name, 10*time.Second, &AcquireOptions{Retry: NoRetry(), Barging: true})
	if err != nil {
		t.Fatalf("barging try-lock on a free name with a waiter queued: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestFairBargingIgnoresQueue(t *testing.T) {
	const name = "fair-barge"
	ns, holder, l := holdFair(t, 3, name)
	c := newTestClient(t, ns, nil)
	ctx := context.Background()
	enqueueDead(t, holder, ns, name, "waiter", time.Now().UnixMicro())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Fair: the queued (dead) waiter comes first until its entry expires.
	sctx, cancel := context.WithTimeout(ctx, queueTTL/4)
	_, err := c.Acquire(sctx, name, 10*time.Second, nil)
	cancel()
	if !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("fair Acquire behind a queued waiter: %v, want ErrNotAcquired", err)
	}
	// Barging: takes the free lock on its first attempt.
	var attempts int
	b := newTestClient(t, ns, &Options{NodeTimeout: time.Second, OnEvent: func(_ context.Context, e Event) {
		if e.Kind == EventAcquire {
			attempts = e.Attempts
		}
	}})
	l, err = b.Acquire(ctx, name, 10*time.Second, &AcquireOptions{Barging: true})
	if err != nil {
		t.Fatalf("barging Acquire: %v", err)
	}
	if attempts != 1 {
		t.Errorf("barging Acquire took %d attempts, want 1", attempts)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// contend runs workers Clients until stop closes, worker w over ns(w),
// each taking name in a loop and counting its critical sections in
// counts[w] (atomically), and checks that no two critical sections overlap
// and that fences rise.
func contend(t *testing.T, ns func(w int) []redis.UniversalClient, counts []int64, name string, stop <-chan struct{}) {
	t.Helper()
	var inCS atomic.Int32
	var lastFence atomic.Uint64
	var wg sync.WaitGroup
	for w := range counts {
		c := newTestClient(t, ns(w), &Options{NodeTimeout: 200 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(2)
		go func() { // owner: contend; ends when stop closes, joined below
			defer wg.Done()
			<-stop
			cancel()
		}()
		go func() { // owner: contend; stopped by stop, joined below
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := c.Acquire(ctx, name, 5*time.Second, nil)
				if err != nil {
					continue
				}
				if inCS.Add(1) != 1 {
					t.Errorf("worker %d: two holders of %q at once", w, name)
				}
				if f := l.Fence(); f <= lastFence.Load() {
					t.Errorf("worker %d: fence %d not above the previous holder's %d", w, f, lastFence.Load())
				} else {
					lastFence.Store(f)
				}
				time.Sleep(time.Millisecond)
				inCS.Add(-1)
				_ = l.Release(context.Background())
				atomic.AddInt64(&counts[w], 1)
			}
		}()
	}
	wg.Wait()
}

func TestFairQueueNoKeysLeftAfterContention(t *testing.T) {
	ns := nodes(t, 3)
	const name = "fair-nokeys"
	stop := make(chan struct{})
	time.AfterFunc(time.Second, func() { close(stop) })
	counts := make([]int64, 4)
	contend(t, func(int) []redis.UniversalClient { return ns }, counts, name, stop)
	for w, n := range counts {
		if n == 0 {
			t.Errorf("worker %d never got the lock: %v", w, counts)
		}
	}
	c := newTestClient(t, ns, nil)
	key, _ := c.Keys(name)
	q, qt := c.keys(name).queue, c.keys(name).queueTimes
	for i, n := range ns {
		a, _ := n.ZRangeWithScores(context.Background(), q, 0, -1).Result()
		b, _ := n.ZRangeWithScores(context.Background(), qt, 0, -1).Result()
		t.Logf("node %d: %v %v now %d", i, a, b, time.Now().UnixMilli())
	}
	assertNoQueueKeys(t, c, ns, name)
	assertNoLockKey(t, ns, key)
}

func TestFairQueueNodeBlackholedDuringContention(t *testing.T) {
	const name, workers = "fair-blackhole", 4
	nets := make([]*redlocktest.Net, workers)
	for w := range nets {
		n, err := cluster(t).NewNet(fmt.Sprintf("fair-w%d", w))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nets[w] = n
	}
	counts := make([]int64, workers)
	atFault := make([]int64, workers)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // owner: the test; joined by <-done
		defer close(done)
		time.Sleep(500 * time.Millisecond)
		for w, n := range nets {
			atFault[w] = atomic.LoadInt64(&counts[w])
			if err := n.Blackhole(1); err != nil {
				t.Errorf("blackhole: %v", err)
			}
		}
		time.Sleep(2 * time.Second)
		close(stop)
	}()
	contend(t, func(w int) []redis.UniversalClient { return nets[w].Clients() }, counts, name, stop)
	<-done
	for w := range counts {
		if counts[w] <= atFault[w] {
			t.Errorf("worker %d made no progress with node 1 blackholed: %d critical sections before, %d in all", w, atFault[w], counts[w])
		}
	}
	for _, n := range nets {
		if err := n.HealAll(); err != nil {
			t.Fatal(err)
		}
	}
	// No key left but on the blackholed node, whose last entries expire
	// (and vanish at the next script that looks).
	ns := nodes(t, 5)
	c := newTestClient(t, ns, nil)
	key, _ := c.Keys(name)
	assertNoLockKey(t, []redis.UniversalClient{ns[0], ns[2], ns[3], ns[4]}, key)
	q, qt := c.keys(name).queue, c.keys(name).queueTimes
	assertNoLockKey(t, []redis.UniversalClient{ns[0], ns[2], ns[3], ns[4]}, q)
	assertNoLockKey(t, []redis.UniversalClient{ns[0], ns[2], ns[3], ns[4]}, qt)
}

// A call waiting for its local turn is not on the nodes yet: a waiter of
// another process that reached the nodes meanwhile comes first, and the
// release's notice (naming that waiter) is not raced by the local call.
// Ten rounds: the remote waiter's attempt sometimes lands just before the
// release that grants it the key, and its grants must then still count
// (awaitGrants); before they did, about one round in four lost the order
// under -race.
func TestFairLocalTurnQueuesWhenItComes(t *testing.T) {
	for i := range 10 {
		fairLocalTurn(t, fmt.Sprintf("fair-local-%d", i))
	}
}

func fairLocalTurn(t *testing.T, name string) {
	t.Helper()
	ns, a, l := holdFair(t, 3, name)
	b := newTestClient(t, ns, nil)
	ctx := context.Background()
	got := make(chan string, 2)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	run := func(c *Client, who string) {
		defer wg.Done()
		lk, err := c.Acquire(ctx, name, 10*time.Second, nil)
		if err != nil {
			errs <- fmt.Errorf("%s: %w", who, err)
			return
		}
		got <- who
		time.Sleep(10 * time.Millisecond)
		if err := lk.Release(ctx); err != nil {
			errs <- fmt.Errorf("%s: release: %w", who, err)
		}
	}
	wg.Add(2)
	go run(a, "local") // owner: the test; joined below. Waits for a's turn.
	time.Sleep(5 * time.Millisecond)
	go run(b, "remote") // owner: the test; joined below
	waitQueued(t, b, ns, name, 1)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(got)
	var order []string
	for w := range got {
		order = append(order, w)
	}
	if len(order) != 2 || order[0] != "remote" {
		t.Fatalf("order %v, want [remote local]: the remote call reached the nodes first", order)
	}
	assertNoQueueKeys(t, a, ns, name)
}

// A queue key of another type is an error no retry cures: the fair Acquire
// fails at once, changing nothing (the lock key stays free); a barging one
// does not look at the queue.
func TestFairQueueKeyOfWrongType(t *testing.T) {
	ns := nodes(t, 3)
	const name = "fair-wrongtype"
	c := newTestClient(t, ns, nil)
	ctx := context.Background()
	key, _ := c.Keys(name)
	q, _ := c.keys(name).queue, c.keys(name).queueTimes
	for _, n := range ns {
		if err := n.Set(ctx, q, "not a queue", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range ns {
			n.Del(context.Background(), q)
		}
	})
	start := time.Now()
	_, err := c.Acquire(ctx, name, 10*time.Second, nil)
	if err == nil || !errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), "WRONGTYPE queue key") {
		t.Fatalf("fair Acquire over a queue key that is a string: %v; want ErrNotAcquired naming the WRONGTYPE queue key", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("fair Acquire took %v: it retried an error no retry cures", waited)
	}
	assertNoLockKey(t, ns, key)
	l, err := c.Acquire(ctx, name, 10*time.Second, &AcquireOptions{Barging: true})
	if err != nil {
		t.Fatalf("barging Acquire: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
