package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos rows of node faults: kills, restarts with and without their data,
// docker pause, CLIENT PAUSE; and control b, a single node that restarts
// empty.

// 1. No faults: several clients contend; nothing may go wrong.
func chaosBaseline(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	runWorkers(2*time.Second, e.clients(4), "r01", "r01", time.Second, time.Second, 20*time.Millisecond, nil)
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 4)
	if rep.RejectedWrites != 0 {
		t.Errorf("row %q: rejected writes = %d; want 0 without faults", row, rep.RejectedWrites)
	}
	e.finish(row, rep, nil)
}

// nodesOf returns the nodes of the *redlock.NodeError values joined in err.
func nodesOf(err error) []int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []int
		for _, e := range j.Unwrap() {
			out = append(out, nodesOf(e)...)
		}
		return out
	}
	var ne *redlock.NodeError
	if errors.As(err, &ne) {
		return []int{ne.Node}
	}
	return nil
}

// 2. Kill 2 of 5 mid-lease: the lock survives on the other three, extend
// works, nobody else gets it, and work goes on with three nodes.
func chaosKillMinority(t *testing.T, row string) {
	logs := new(redlock.LogSink)
	e := newEnv(t, 5, memFenced, &redlock.Options{Logger: slog.New(logs)})
	cs := e.clients(3)
	c1, c2 := cs[0], cs[1]
	const name = "r02"
	l := mustAcquire(t, c1, name, 3*time.Second, 5*time.Second, nil, "healthy cluster")
	c1.increment(l, name)
	for _, i := range []int{3, 4} {
		e.mustFault(i, "", "kill", func() error { return e.cl.Kill(i) })
	}
	if err := c1.extend(within(t, 5*time.Second), l, 3*time.Second); err != nil {
		t.Errorf("row %q: Extend with 2 of 5 nodes killed = %v; want nil", row, err)
	}
	if !c1.increment(l, name) {
		t.Errorf("row %q: write of the holder after the kills rejected; want accepted", row)
	}
	_, err := c2.acquire(within(t, 5*time.Second), name, time.Second, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	wantNotAcquired(t, row, "while c1 holds it on A, B, C", err)
	// Release returns at the quorum of A, B, C; the failures of D and E are
	// in its error if they came first, else logged as stragglers.
	err = c1.release(l)
	failed := nodesOf(err)
	if slices.ContainsFunc(failed, func(i int) bool { return i < 3 }) {
		t.Errorf("row %q: Release with D, E killed = %v; want no error from A, B, C", row, err)
	}
	for _, i := range []int{3, 4} {
		reported := func() bool {
			return slices.Contains(failed, i) || slices.Contains(logs.Nodes(redlock.MsgStraggler), i)
		}
		deadline := time.Now().Add(e.opts.NodeTimeout + time.Second)
		for !reported() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !reported() {
			t.Errorf("row %q: Release with D, E killed = %v, stragglers logged for nodes %v; want node %d's failure in one of them",
				row, err, logs.Nodes(redlock.MsgStraggler), i)
		}
	}
	runWorkers(1500*time.Millisecond, cs, name, name, time.Second, time.Second, 20*time.Millisecond, nil)
	for _, i := range []int{3, 4} {
		e.mustHeal(i, "", "kill", func() error { return e.cl.Restart(i) })
	}
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 3)
	e.finish(row, rep, nil)
}

// 3. Kill 3 of 5 mid-lease: holders are told before their deadline (a plain
// hold at its deadline, an auto-extended one when its extend fails), nobody
// acquires while the majority is down, and after the restart locks work
// again with larger fences.
func chaosKillMajority(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	c1, c2, c3 := e.client("c1"), e.client("c2"), e.client("c3")
	const plain, auto = "r03-plain", "r03-auto"
	const ttl = 1500 * time.Millisecond
	lp := mustAcquire(t, c1, plain, ttl, 5*time.Second, nil, "healthy cluster")
	la := mustAcquire(t, c2, auto, ttl, 5*time.Second, &redlock.AcquireOptions{AutoExtend: true}, "healthy cluster")
	c1.increment(lp, plain)
	c2.increment(la, auto)
	for _, i := range []int{0, 1, 2} {
		e.mustFault(i, "", "kill", func() error { return e.cl.Kill(i) })
	}
	e.majorityGone(plain)
	e.majorityGone(auto)
	for _, name := range []string{plain, auto} {
		_, err := c3.acquire(within(t, 2*ttl), name, ttl, nil)
		wantNotAcquired(t, row, "with 3 of 5 nodes killed", err)
	}
	wantLost(t, row, lp, 2*ttl)
	wantLost(t, row, la, 2*ttl)
	for _, l := range []*redlock.Lock{lp, la} {
		if err := l.Release(context.Background()); !errors.Is(err, redlock.ErrLost) {
			t.Errorf("row %q: Release of lost %q = %v; want an error matching ErrLost", row, l.Name(), err)
		}
	}
	for _, i := range []int{0, 1, 2} {
		e.mustHeal(i, "", "kill", func() error { return e.cl.Restart(i) })
	}
	for _, name := range []string{plain, auto} {
		l := mustAcquire(t, c3, name, ttl, 5*time.Second, nil, "after the restart (liveness)")
		if !c3.increment(l, name) {
			t.Errorf("row %q: write after the restart rejected; want accepted", row)
		}
		c3.release(l)
	}
	rep := e.check()
	assertClean(t, row, rep)
	lost := 0
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.Lost && (ev.Token == lp.Token() || ev.Token == la.Token()) {
			lost++
		}
	}
	if lost != 2 {
		t.Errorf("row %q: Lost events of the two holders = %d; want 2", row, lost)
	}
	e.finish(row, rep, nil)
}

// 4a. Amnesia with immediate rejoin: c1 holds A, B, C; C restarts empty and
// c2, cut off from A and B, takes C, D, E at once. Mutual exclusion is
// broken (expected: the checker reports the overlap); fencing must still
// reject c1's stale write. For c2's fence to exceed c1's, D and E's counters
// must have reached c1's fence: a contender that tried while c1 held the lock
// incremented them, as contenders do.
func chaosAmnesiaImmediate(t *testing.T, row string) {
	e := newEnv(t, 5, redisFenced, nil)
	const name = "r04a"
	e.warmUp(name, 3)
	c1, c2, c3 := e.client("c1"), e.client("c2"), e.client("c3")
	l1 := e.holdABC(c1, name, 10*time.Second)
	v1, err := c1.read(l1, name)
	if err != nil {
		t.Fatalf("fenced read of the holder: %v", err)
	}
	_, err = c3.acquire(within(t, 5*time.Second), name, time.Second, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	wantNotAcquired(t, row, "contender while c1 holds A, B, C", err)
	for _, i := range []int{3, 4} {
		if !waitFor(2*time.Second, func() bool { return e.fenceCounter(name, i) >= l1.Fence() }) {
			t.Fatalf("fence counter on node %d = %d after the contender; want >= c1's fence %d", i, e.fenceCounter(name, i), l1.Fence())
		}
	}
	e.mustFault(2, "", "amnesia-restart", func() error { return e.cl.RestartEmpty(2) })
	e.mustHeal(2, "", "amnesia-restart", func() error { return nil }) // back at once, empty
	e.down(c2, 0, 1)
	l2 := mustAcquire(t, c2, name, 10*time.Second, 5*time.Second, nil, "C (empty), D, E free")
	if l2.Fence() <= l1.Fence() {
		t.Errorf("row %q: fence of c2 = %d; want > c1's %d", row, l2.Fence(), l1.Fence())
	}
	if !c2.increment(l2, name) {
		t.Errorf("row %q: write of the new holder c2 rejected; want accepted", row)
	}
	if c1.write(l1, name, v1+1) {
		t.Errorf("row %q: stale write of c1 (fence %d) accepted after c2's (fence %d); want rejected", row, l1.Fence(), l2.Fence())
	}
	c2.release(l2)
	c1.release(l1)
	e.healNet(c1, "down", 3, 4)
	e.healNet(c2, "down", 0, 1)
	rep := e.check()
	if len(rep.Overlaps) == 0 {
		t.Errorf("row %q: overlaps = 0; want the double grant amnesia allows to be reported", row)
	}
	assertFencedSafe(t, row, rep)
	e.finish(row+" (overlap expected)", rep, nil)
}

// 4b. Amnesia with rejoin delayed by more than the TTL: c1 holds A, B, C; C
// dies and comes back empty after the TTL. c2, cut off from A and B, waits
// throughout and only gets the lock once c1's lease is over: no overlap.
func chaosAmnesiaDelayed(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r04b"
	const ttl = time.Second
	e.warmUp(name, 3)
	c1, c2 := e.client("c1"), e.client("c2")
	l1 := e.holdABC(c1, name, ttl)
	c1.increment(l1, name)
	e.mustFault(2, "", "amnesia-restart", func() error { return e.cl.Kill(2) })
	e.down(c2, 0, 1)
	var (
		l2  *redlock.Lock
		err error
		wg  sync.WaitGroup
	)
	ctx := within(t, 15*time.Second)
	wg.Add(1)
	go func() {
		defer wg.Done()
		l2, err = c2.acquire(ctx, name, ttl, nil)
	}()
	time.Sleep(ttl + 500*time.Millisecond)
	e.mustHeal(2, "", "amnesia-restart", func() error { return e.cl.RestartEmpty(2) })
	wg.Wait()
	if err != nil {
		t.Fatalf("row %q: Acquire by c2 after C rejoined = %v; want the lock (liveness)", row, err)
	}
	if !c2.increment(l2, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	c1.release(l1)
	e.healNet(c1, "down", 3, 4)
	e.healNet(c2, "down", 0, 1)
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 2)
	e.finish(row, rep, nil)
}

// 5. Pause nodes (docker pause): one node for less than the TTL, then two
// nodes for longer than the TTL, while a holder extends and others contend.
// The holder keeps the lock on the other three; nobody overlaps.
func chaosPauseNodes(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	cs := e.clients(3)
	c1, c2 := cs[0], cs[1]
	const ttl = 1500 * time.Millisecond

	// One node, shorter than the TTL.
	const short = "r05-short"
	l := mustAcquire(t, c1, short, 2*ttl, 5*time.Second, nil, "healthy cluster")
	c1.increment(l, short)
	e.mustFault(4, "", "pause", func() error { return e.cl.Pause(4) })
	time.Sleep(ttl / 4)
	if err := c1.extend(within(t, 5*time.Second), l, 2*ttl); err != nil {
		t.Errorf("row %q: Extend with E paused = %v; want nil", row, err)
	}
	_, err := c2.acquire(within(t, 5*time.Second), short, ttl, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	wantNotAcquired(t, row, "while c1 holds it, E paused", err)
	if !c1.increment(l, short) {
		t.Errorf("row %q: write of the holder with E paused rejected; want accepted", row)
	}
	e.mustHeal(4, "", "pause", func() error { return e.cl.Unpause(4) })
	c1.release(l)

	// Two nodes, longer than the TTL: c1 auto-extends on A, B, C while
	// c2 and c3 contend, then everyone works on.
	const long = "r05-long"
	l = mustAcquire(t, c1, long, ttl, 5*time.Second, &redlock.AcquireOptions{AutoExtend: true}, "healthy cluster")
	c1.increment(l, long)
	for _, i := range []int{3, 4} {
		e.mustFault(i, "", "pause", func() error { return e.cl.Pause(i) })
	}
	runWorkers(2*ttl, cs[1:], long, long, ttl, 500*time.Millisecond, 20*time.Millisecond, nil)
	if err := l.Err(); err != nil {
		t.Errorf("row %q: Err() of the auto-extended hold with D, E paused for 2 TTLs = %v; want nil", row, err)
	}
	if !c1.increment(l, long) {
		t.Errorf("row %q: write of the holder after 2 TTLs with D, E paused rejected; want accepted", row)
	}
	for _, i := range []int{3, 4} {
		e.mustHeal(i, "", "pause", func() error { return e.cl.Unpause(i) })
	}
	c1.release(l)
	runWorkers(time.Second, cs, long, long, ttl, time.Second, 20*time.Millisecond, nil)

	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 4)
	e.finish(row, rep, nil)
}

// 12. CLIENT PAUSE on A, B, C during an acquire. A third of the TTL: the
// acquire succeeds, and the time the paused nodes took comes off its
// validity (the deadline, start + validity, must still be ahead when the
// acquire returns, so a pause past half the TTL fails it). Longer than the
// TTL: the acquire fails and leaves no key.
func chaosClientPause(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const ttl = 2 * time.Second
	// c1 waits for the paused nodes as long as a lease allows.
	c1 := e.clientWith("c1", &redlock.Options{NodeTimeout: 10 * time.Second})
	c2 := e.client("c2")

	const short = "r12-short"
	const d = ttl / 3
	p0 := time.Now()
	for _, i := range []int{0, 1, 2} {
		e.mustFault(i, "", "client-pause "+d.String(), func() error { return e.cl.ClientPause(i, d) })
	}
	start := time.Now()
	l := mustAcquire(t, c1, short, ttl, 3*ttl, nil, "pause of a third of the TTL")
	for _, i := range []int{0, 1, 2} {
		e.mustHeal(i, "", "client-pause "+d.String(), func() error { return nil })
	}
	// The quorum needs one of A, B, C, which answer no earlier than p0+d:
	// validity = TTL - elapsed - drift <= start + TTL - d + (start-p0)
	// (+ slack for the time between start and Acquire's own clock read).
	bound := start.Add(ttl - d + start.Sub(p0) + 200*time.Millisecond)
	if u := l.ValidUntil(); u.After(bound) {
		t.Errorf("row %q: ValidUntil = start+%v; want <= start+%v: the %v the paused nodes took must come off the validity",
			row, u.Sub(start), bound.Sub(start), d)
	}
	if !c1.increment(l, short) {
		t.Errorf("row %q: write of c1 rejected; want accepted", row)
	}
	c1.release(l)

	// Paused for 2.5 TTLs: even if starting the pauses took a while, the
	// acquire waits at most a TTL for them.
	const long = "r12-long"
	const lttl = ttl / 2
	const dl = 5 * lttl / 2
	for _, i := range []int{0, 1, 2} {
		e.mustFault(i, "", "client-pause "+dl.String(), func() error { return e.cl.ClientPause(i, dl) })
	}
	pauseEnd := time.Now().Add(dl)
	_, err := c1.acquire(within(t, 3*ttl), long, lttl, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	wantNotAcquired(t, row, "A, B, C paused longer than the TTL", err)
	time.Sleep(time.Until(pauseEnd.Add(lttl + 500*time.Millisecond)))
	for _, i := range []int{0, 1, 2} {
		e.mustHeal(i, "", "client-pause "+dl.String(), func() error { return nil })
	}
	e.assertNoKey(row+" (after the pause and the TTL)", long)
	l2 := mustAcquire(t, c2, long, lttl, 5*time.Second, nil, "after the pause (liveness)")
	if !c2.increment(l2, long) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)

	rep := e.check()
	assertClean(t, row, rep)
	e.finish(row, rep, nil)
}

// Control b: a naive single-node lock (N = 1) whose node restarts empty.
// The second client gets the lock while the first holds it, with a lower
// fence; with an unfenced store both increments land on the same value.
// The checker must report the overlap, the stale write and the lost
// increment.
func controlSingleNodeAmnesia(t *testing.T, row string) {
	e := newEnv(t, 1, memUnfenced, nil)
	const name = "control-b"
	e.warmUp(name, 3)
	c1, c2 := e.client("c1"), e.client("c2")
	l1 := mustAcquire(t, c1, name, 10*time.Second, 5*time.Second, nil, "single node")
	v1, _ := c1.read(l1, name)
	e.mustFault(0, "", "amnesia-restart", func() error { return e.cl.RestartEmpty(0) })
	e.mustHeal(0, "", "amnesia-restart", func() error { return nil }) // back at once, empty
	l2 := mustAcquire(t, c2, name, 10*time.Second, 5*time.Second, nil, "node restarted empty")
	v2, _ := c2.read(l2, name)
	c1.write(l1, name, v1+1)
	c2.write(l2, name, v2+1)
	c2.release(l2)
	c1.release(l1)
	rep := e.check()
	caught := len(rep.Overlaps) > 0 && len(rep.StaleWrites) > 0 && len(rep.LostIncrements) > 0
	if !caught {
		t.Errorf("row %q: overlaps = %d, stale writes = %d, lost increments = %d; want all > 0 (the checker must catch a naive lock):\n%s",
			row, len(rep.Overlaps), len(rep.StaleWrites), len(rep.LostIncrements), rep)
	}
	e.finish(row, rep, &caught)
}
