package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos tests: real faults injected into real Redis nodes partway through a
// lease, every client's view recorded, and the history checked by
// history.Check. Each row of TestChaos asserts its own invariant; the
// negative controls show that the same checker reports violations when the
// protection is taken away. TestChaosSoak runs many clients under random
// faults for $REDLOCK_CHAOS_DURATION (20s by default).
//
// Nodes are named A..E = 0..4 in the comments.

func TestChaos(t *testing.T) {
	from := summary.mark()
	t.Cleanup(func() { summary.print(t, from) }) // after every row, failed or not
	rows := []struct {
		name string
		run  func(t *testing.T, row string)
	}{
		{"01-baseline", chaosBaseline},
		{"02-kill-2-of-5", chaosKillMinority},
		{"03-kill-3-of-5", chaosKillMajority},
		{"04a-amnesia-immediate", chaosAmnesiaImmediate},
		{"04b-amnesia-delayed", chaosAmnesiaDelayed},
		{"05-pause-nodes", chaosPauseNodes},
		{"06-holder-pause", chaosHolderPause},
		{"07-latency-over-ttl", chaosLatency},
		{"08-blackhole-2", chaosBlackholeMinority},
		{"09-clock-jump", chaosClockJump},
		{"10-clock-backward", chaosClockBackward},
		{"11-blackhole-release-extend", chaosBlackholeReleaseExtend},
		{"12-client-pause", chaosClientPause},
		{"13-flapping", chaosFlapping},
		{"14-fence-divergent-counters", chaosFenceDivergence},
		{"15-fence-tie", chaosFenceTie},
		{"16-delayed-cleanup", chaosDelayedCleanup},
		{"17-fair-contention-faults", chaosFairContention},
		{"18-handover-faults", chaosHandover},
		{"control-a-06-unfenced", controlHolderPauseUnfenced},
		{"control-a-09-unfenced", controlClockJumpUnfenced},
		{"control-b-single-node-amnesia", controlSingleNodeAmnesia},
		{"control-c-16-shared-values", controlDelayedCleanupShared},
		{"control-d-18-unconditional-extend", controlHandoverUnconditional},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.run(t, r.name) })
	}
}

// within returns a context that ends after d, or when the test ends.
func within(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// mustAcquire acquires name through c, waiting at most wait, or stops the
// test: the row's scenario depends on it.
func mustAcquire(t testing.TB, c *sim, name string, ttl, wait time.Duration, o *redlock.AcquireOptions, why string) *redlock.Lock {
	t.Helper()
	l, err := c.acquire(within(t, wait), name, ttl, o)
	if err != nil {
		t.Fatalf("%s: Acquire(%q) by %s = %v; want the lock", why, name, c.name, err)
	}
	return l
}

// wantNotAcquired fails the test unless err says the lock was not acquired.
func wantNotAcquired(t testing.TB, row, why string, err error) {
	t.Helper()
	if err == nil || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("row %q: %s: Acquire = %v; want an error matching ErrNotAcquired", row, why, err)
	}
}

// wantLost waits up to d for l to end and fails the test unless it was lost.
func wantLost(t testing.TB, row string, l *redlock.Lock, d time.Duration) {
	t.Helper()
	select {
	case <-l.Done():
		if err := l.Err(); !errors.Is(err, redlock.ErrLost) {
			t.Errorf("row %q: Err() of %q after Done = %v; want ErrLost", row, l.Name(), err)
		}
	case <-time.After(d):
		t.Errorf("row %q: Done of %q not closed within %v; want it closed by its deadline", row, l.Name(), d)
	}
}

// assertClean fails the test if rep has any violation.
func assertClean(t testing.TB, row string, rep *history.Report) {
	t.Helper()
	if !rep.OK() {
		t.Errorf("row %q: checker found violations; want none:\n%s", row, rep)
	}
}

// assertFencedSafe fails the test if the downstream store took a stale
// write, lost an increment, or a fence went backwards: what fencing must
// guarantee even where mutual exclusion breaks.
func assertFencedSafe(t testing.TB, row string, rep *history.Report) {
	t.Helper()
	if n := len(rep.StaleWrites); n != 0 {
		t.Errorf("row %q: stale writes accepted = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.LostIncrements); n != 0 {
		t.Errorf("row %q: lost increments = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.FenceOrder); n != 0 {
		t.Errorf("row %q: fence-order violations = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.LateLoss); n != 0 {
		t.Errorf("row %q: late losses = %d; want 0:\n%s", row, n, rep)
	}
}

// wantAcquisitions fails the test if fewer than n acquisitions happened.
func wantAcquisitions(t testing.TB, row string, rep *history.Report, n int) {
	t.Helper()
	if rep.Acquisitions < n {
		t.Errorf("row %q: acquisitions = %d; want >= %d", row, rep.Acquisitions, n)
	}
}

// clients starts n simulated clients c1..cn.
func (e *chaosEnv) clients(n int) []*sim {
	cs := make([]*sim, n)
	for i := range cs {
		cs[i] = e.client(fmt.Sprintf("c%d", i+1))
	}
	return cs
}

// down cuts c's paths to nodes, recording each as a fault.
func (e *chaosEnv) down(c *sim, nodes ...int) {
	e.t.Helper()
	for _, i := range nodes {
		e.mustFault(i, c.name, "down", func() error { return c.net.Down(i) })
	}
}

// blackhole blackholes c's paths to nodes.
func (e *chaosEnv) blackhole(c *sim, nodes ...int) {
	e.t.Helper()
	for _, i := range nodes {
		e.mustFault(i, c.name, "blackhole", func() error { return c.net.Blackhole(i) })
	}
}

// healNet heals c's faulty paths to nodes, recording each with detail.
func (e *chaosEnv) healNet(c *sim, detail string, nodes ...int) {
	e.t.Helper()
	for _, i := range nodes {
		e.mustHeal(i, c.name, detail, func() error { return c.net.Heal(i) })
	}
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

// holdABC has c acquire name with its paths to D and E down, so that it
// holds the lock on exactly A, B and C. Its paths stay down.
func (e *chaosEnv) holdABC(c *sim, name string, ttl time.Duration) *redlock.Lock {
	e.t.Helper()
	e.down(c, 3, 4)
	return mustAcquire(e.t, c, name, ttl, 5*time.Second, nil, "A, B, C reachable")
}

// fenceCounter reads name's fence counter on node i directly.
func (e *chaosEnv) fenceCounter(name string, i int) uint64 {
	e.t.Helper()
	_, fk := e.directKeys(name)
	v, err := e.cl.Client(i).Get(within(e.t, 5*time.Second), fk).Uint64()
	if err != nil {
		e.t.Fatalf("GET %s on node %d: %v", fk, i, err)
	}
	return v
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

// holderPause is rows 6 and control a: c1 reads under its lock, then its
// process stops past its validity (a GC pause) before writing; meanwhile
// c2 takes the lock and increments. It reports whether c1's stale write was
// accepted.
func holderPause(t *testing.T, fenced bool) (*chaosEnv, *history.Report, bool) {
	st := memFenced
	if !fenced {
		st = memUnfenced
	}
	e := newEnv(t, 5, st, nil)
	const name = "r06"
	const ttl = time.Second
	c1, c2 := e.client("c1"), e.client("c2")
	l1 := mustAcquire(t, c1, name, ttl, 5*time.Second, nil, "healthy cluster")
	v1, err := c1.read(l1, name)
	if err != nil {
		t.Fatalf("fenced read of the holder: %v", err)
	}
	// The pause outlasts the lease and the keys' TTL on the nodes.
	var (
		wg sync.WaitGroup
		l2 *redlock.Lock
	)
	ctx := within(t, 5*time.Second)
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Meanwhile, c2 gets the lock once c1's keys have expired.
		l2, _ = c2.acquire(ctx, name, ttl, nil)
		if l2 != nil && !c2.increment(l2, name) {
			t.Errorf("write of the new holder c2 rejected; want accepted")
		}
	}()
	c1.pausePast(l1)
	wg.Wait()
	if l2 == nil {
		t.Fatalf("Acquire by c2 while c1 was paused past its lease failed; want the lock")
	}
	accepted := c1.write(l1, name, v1+1)
	c2.release(l2)
	if err := c1.release(l1); !errors.Is(err, redlock.ErrLost) {
		t.Errorf("Release by the paused holder = %v; want an error matching ErrLost", err)
	}
	return e, e.check(), accepted
}

// 6. The holder pauses past its validity before writing: fencing rejects
// its write; the believed holds do not overlap (Done fired at the deadline).
func chaosHolderPause(t *testing.T, row string) {
	e, rep, accepted := holderPause(t, true)
	if accepted {
		t.Errorf("row %q: write of the paused holder accepted; want rejected by its stale fence", row)
	}
	assertClean(t, row, rep)
	if rep.RejectedWrites != 1 {
		t.Errorf("row %q: rejected writes = %d; want 1 (the paused holder's)", row, rep.RejectedWrites)
	}
	e.finish(row, rep, nil)
}

// Control a (row 6): the same pause with a store that does not check fences.
// The checker must report the stale write and the lost increment.
func controlHolderPauseUnfenced(t *testing.T, row string) {
	e, rep, accepted := holderPause(t, false)
	assertUnfencedCaught(t, row, e, rep, accepted)
}

// assertUnfencedCaught checks a negative control run against a store that
// does not check fences: it took every write, and the checker reported the
// stale write and the lost increment.
func assertUnfencedCaught(t *testing.T, row string, e *chaosEnv, rep *history.Report, accepted bool) {
	t.Helper()
	caught := len(rep.StaleWrites) > 0 && len(rep.LostIncrements) > 0
	if !accepted {
		t.Errorf("row %q: the unfenced store rejected a write; want it to take everything", row)
	}
	if !caught {
		t.Errorf("row %q: stale writes = %d, lost increments = %d; want both > 0 (the checker must catch an unfenced store):\n%s",
			row, len(rep.StaleWrites), len(rep.LostIncrements), rep)
	}
	e.finish(row, rep, &caught)
}

// 7. Latency longer than the TTL on 3 of a client's nodes: its acquire
// fails, the keys it got on D and E are deleted at once, the keys the slow
// nodes set without telling it in time are gone after the TTL, and another
// client gets the lock.
func chaosLatency(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r07"
	const ttl = 500 * time.Millisecond
	const lat = 2 * ttl
	c1, c2 := e.client("c1"), e.client("c2")
	for _, i := range []int{0, 1, 2} {
		e.mustFault(i, c1.name, "latency "+lat.String(), func() error { return c1.net.Latency(i, lat) })
	}
	_, err := c1.acquire(within(t, 10*time.Second), name, ttl,
		&redlock.AcquireOptions{Retry: redlock.LimitRetry(redlock.ExponentialBackoff(10*time.Millisecond, 50*time.Millisecond), 3)})
	wantNotAcquired(t, row, "replies of A, B, C later than the TTL", err)
	e.assertNoKey(row+" (partial keys released)", name, 0, 1, 2)
	time.Sleep(2*lat + ttl)
	e.assertNoKey(row+" (after the TTL)", name)
	e.healNet(c1, "latency "+lat.String(), 0, 1, 2)
	l := mustAcquire(t, c2, name, ttl, 5*time.Second, nil, "after c1's failed attempts (liveness)")
	if !c2.increment(l, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l)
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 1)
	e.finish(row, rep, nil)
}

// 8. Blackhole 2 of a client's nodes: it acquires with the other three
// without waiting for the two, extends, and releases at the quorum without
// waiting for them either; the two are reported through its logger.
func chaosBlackholeMinority(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r08"
	const ttl = 2 * time.Second
	var logs syncBuffer
	c1opts := e.opts
	c1opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c1, c2 := e.clientWith("c1", &c1opts), e.client("c2")
	e.blackhole(c1, 3, 4)
	l, err := c1.acquire(within(t, 3*time.Second), name, ttl, nil)
	if err != nil {
		t.Fatalf("row %q: Acquire with D, E blackholed = %v; want the lock from A, B, C within 3s", row, err)
	}
	if !c1.increment(l, name) {
		t.Errorf("row %q: write of c1 rejected; want accepted", row)
	}
	_, err = c2.acquire(within(t, 5*time.Second), name, ttl, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	wantNotAcquired(t, row, "while c1 holds A, B, C", err)
	if err := c1.extend(within(t, 5*time.Second), l, ttl); err != nil {
		t.Errorf("row %q: Extend with D, E blackholed = %v; want nil", row, err)
	}
	err = c1.release(l)
	if got := nodesIn(err); len(got) != 0 && (!got[3] || !got[4] || len(got) != 2) {
		t.Errorf("row %q: Release error names nodes %v (%v); want none (it returns at quorum) or exactly 3 and 4", row, sortedNodes(got), err)
	}
	// Closing the client joins the stragglers, which report D and E.
	c1.lc.Close()
	if out := logs.String(); !strings.Contains(out, "node=3") || !strings.Contains(out, "node=4") {
		t.Errorf("row %q: c1's log after Close:\n%s\nwant the blackholed nodes 3 and 4 reported as stragglers", row, out)
	}
	e.healNet(c1, "blackhole", 3, 4)
	l = mustAcquire(t, c2, name, ttl, 5*time.Second, nil, "after c1's release")
	if !c2.increment(l, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l)
	rep := e.check()
	assertClean(t, row, rep)
	e.finish(row, rep, nil)
}

func sortedNodes(m map[int]bool) []int {
	var s []int
	for i := range m {
		s = append(s, i)
	}
	sort.Ints(s)
	return s
}

// clockJump is row 9 and its control, after Kleppmann: c1 holds A, B, C;
// C's clock jumps forward and the key expires there; c2, cut off from A and
// B, takes C, D, E. Both believe they hold the lock (the checker reports the
// overlap). c2 increments; then c1 writes what it read before. It reports
// whether c1's write was accepted.
func clockJump(t *testing.T, fenced bool) (*chaosEnv, *history.Report, bool) {
	st := redisFenced
	if !fenced {
		st = redisUnfenced
	}
	e := newEnv(t, 5, st, nil)
	const name = "r09"
	e.warmUp(name, 3)
	c1, c2 := e.client("c1"), e.client("c2")
	l1 := e.holdABC(c1, name, 10*time.Second)
	v1, err := c1.read(l1, name)
	if err != nil {
		t.Fatalf("fenced read of the holder: %v", err)
	}
	key, _ := e.directKeys(name)
	e.mustFault(2, "", "clock-jump", func() error { return e.cl.ClockJump(2, key) })
	e.mustHeal(2, "", "clock-jump", func() error { return nil }) // a jump is over at once
	e.down(c2, 0, 1)
	l2 := mustAcquire(t, c2, name, 10*time.Second, 5*time.Second, nil, "C (key expired), D, E free")
	if l2.Fence() <= l1.Fence() {
		t.Errorf("fence of c2 = %d; want > c1's %d: C's counter survives the jump", l2.Fence(), l1.Fence())
	}
	if !c2.increment(l2, name) {
		t.Errorf("write of the new holder c2 rejected; want accepted")
	}
	accepted := c1.write(l1, name, v1+1)
	c2.release(l2)
	c1.release(l1)
	e.healNet(c1, "down", 3, 4)
	e.healNet(c2, "down", 0, 1)
	return e, e.check(), accepted
}

// 9. Clock jump: the double grant happens (expected); fencing keeps the
// store correct.
func chaosClockJump(t *testing.T, row string) {
	e, rep, accepted := clockJump(t, true)
	if accepted {
		t.Errorf("row %q: write of c1 after c2's accepted; want rejected by its lower fence", row)
	}
	if len(rep.Overlaps) == 0 {
		t.Errorf("row %q: overlaps = 0; want the double grant of the clock jump reported", row)
	}
	assertFencedSafe(t, row, rep)
	e.finish(row+" (overlap expected)", rep, nil)
}

// Control a (row 9): the same clock jump with a store that does not check
// fences: the checker must report the stale write and the lost increment.
func controlClockJumpUnfenced(t *testing.T, row string) {
	e, rep, accepted := clockJump(t, false)
	assertUnfencedCaught(t, row, e, rep, accepted)
}

// clockBackward is the fault of row 10, which the test makes itself.
const clockBackward history.FaultKind = "clock-backward"

// 10. Backward clock jump on 2 nodes: their copies of the key outlive the
// TTL. The holder crashes without releasing; liveness only: another client
// gets the lock from the other three once their keys expire.
func chaosClockBackward(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r10"
	const ttl = time.Second
	c1, c2 := e.client("c1"), e.client("c2")
	l1 := mustAcquire(t, c1, name, ttl, 5*time.Second, nil, "healthy cluster")
	c1.increment(l1, name)
	key, _ := e.directKeys(name)
	for _, i := range []int{2, 3} {
		// A clock running backwards keeps the key; the same as a longer TTL.
		e.mustFault(i, "", "clock-backward", func() error {
			return e.cl.Client(i).PExpire(within(t, 5*time.Second), key, time.Minute).Err()
		})
		e.testFault(clockBackward, i, "", true)
	}
	// c1 crashes: it never releases; its lease runs out at its deadline.
	l2, err := c2.acquire(within(t, 10*time.Second), name, ttl, nil)
	if err != nil {
		t.Fatalf("row %q: Acquire by c2 while C, D keep the crashed holder's key = %v; want the lock from A, B, E (liveness)", row, err)
	}
	if !c2.increment(l2, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	wantLost(t, row, l1, 5*time.Second)
	for _, i := range []int{2, 3} {
		e.mustHeal(i, "", "clock-backward", func() error { return e.cl.Client(i).Del(within(t, 5*time.Second), key).Err() })
		e.testFault(clockBackward, i, "", false)
	}
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 2)
	e.finish(row, rep, nil)
}

// 11. Blackhole during release and during extend. A release whose deletes
// are lost ends the hold locally and names the nodes; the keys expire and
// the next client gets the lock. An extend that cannot reach a majority
// ends the hold at once (Lost), before its deadline.
func chaosBlackholeReleaseExtend(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const ttl = time.Second
	c1, c2 := e.client("c1"), e.client("c2")

	const rel = "r11-release"
	l := mustAcquire(t, c1, rel, ttl, 5*time.Second, nil, "healthy cluster")
	c1.increment(l, rel)
	e.blackhole(c1, 0, 1, 2)
	err := c1.release(l)
	if got := nodesIn(err); !got[0] || !got[1] || !got[2] || len(got) != 3 {
		t.Errorf("row %q: Release error names nodes %v (%v); want exactly 0, 1, 2", row, sortedNodes(got), err)
	}
	l2 := mustAcquire(t, c2, rel, ttl, 10*time.Second, nil, "after the lost release's keys expired (liveness)")
	if !c2.increment(l2, rel) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	e.healNet(c1, "blackhole", 0, 1, 2)

	const ext = "r11-extend"
	l = mustAcquire(t, c1, ext, 2*ttl, 5*time.Second, nil, "healed")
	c1.increment(l, ext)
	e.blackhole(c1, 3, 4)
	if err := c1.extend(within(t, 5*time.Second), l, 2*ttl); err != nil {
		t.Errorf("row %q: Extend with D, E blackholed = %v; want nil", row, err)
	}
	e.blackhole(c1, 2)
	e.majorityGone(ext)
	err = c1.extend(within(t, 5*time.Second), l, 2*ttl)
	if !errors.Is(err, redlock.ErrLost) {
		t.Errorf("row %q: Extend with C, D, E blackholed = %v; want an error matching ErrLost", row, err)
	}
	wantLost(t, row, l, time.Second)
	l2 = mustAcquire(t, c2, ext, ttl, 10*time.Second, nil, "after c1 lost it (liveness)")
	if !c2.increment(l2, ext) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	e.healNet(c1, "blackhole", 2, 3, 4)
	c1.release(l)

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

// 13. Paths flapping (down, up) during retry loops: no overlap, no key left
// after the TTL, and a client gets the lock once the paths are healed.
func chaosFlapping(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r13"
	const ttl = time.Second
	cs := e.clients(4)
	stop := make(chan struct{})
	flapped := make(chan struct{})
	go func() {
		defer close(flapped)
		downs := map[[2]int]bool{}
		for {
			select {
			case <-stop:
				for k := range downs {
					c, i := cs[k[0]], k[1]
					e.heal(i, c.name, "down", func() error { return c.net.Heal(i) })
				}
				return
			case <-time.After(30*time.Millisecond + rand.N(70*time.Millisecond)):
			}
			c, i := rand.N(len(cs)), rand.N(5)
			k := [2]int{c, i}
			if downs[k] {
				delete(downs, k)
				e.heal(i, cs[c].name, "down", func() error { return cs[c].net.Heal(i) })
			} else {
				downs[k] = true
				e.fault(i, cs[c].name, "down", func() error { return cs[c].net.Down(i) })
			}
		}
	}()
	runWorkers(3*time.Second, cs, name, name, ttl, 500*time.Millisecond, 20*time.Millisecond, nil)
	close(stop)
	<-flapped
	time.Sleep(ttl + 200*time.Millisecond)
	e.assertNoKey(row+" (after the TTL)", name)
	l := mustAcquire(t, cs[0], name, ttl, 5*time.Second, nil, "after healing (liveness)")
	if !cs[0].increment(l, name) {
		t.Errorf("row %q: write after healing rejected; want accepted", row)
	}
	cs[0].release(l)
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 2)
	e.finish(row, rep, nil)
}

// 14. Fence counters that diverged (DESIGN §3, phase 2): c3, cut off from
// A, B, C, keeps trying, and each attempt increments D and E's counters. c1
// then acquires on all five: its fence comes from D or E, a minority. D and E
// die, and c2 acquires on A, B, C. Its fence must still exceed c1's: that is
// what writing c1's fence back to a majority is for.
func chaosFenceDivergence(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r14"
	const ttl = time.Second
	e.warmUp(name, 2)
	c1, c2, c3 := e.client("c1"), e.client("c2"), e.client("c3")
	e.down(c3, 0, 1, 2)
	_, err := c3.acquire(within(t, 10*time.Second), name, ttl,
		&redlock.AcquireOptions{Retry: redlock.LimitRetry(redlock.ExponentialBackoff(5*time.Millisecond, 20*time.Millisecond), 3)})
	wantNotAcquired(t, row, "c3 cut off from A, B, C", err)
	if !waitFor(2*time.Second, func() bool { return e.fenceCounter(name, 3) > e.fenceCounter(name, 0)+1 }) {
		t.Fatalf("fence counters of D = %d, A = %d after c3's attempts; want D ahead by 2 or more",
			e.fenceCounter(name, 3), e.fenceCounter(name, 0))
	}
	l1 := mustAcquire(t, c1, name, ttl, 5*time.Second, nil, "all nodes")
	c1.increment(l1, name)
	c1.release(l1)
	for _, i := range []int{3, 4} {
		e.mustFault(i, "", "kill", func() error { return e.cl.Kill(i) })
	}
	l2 := mustAcquire(t, c2, name, ttl, 5*time.Second, nil, "A, B, C")
	if l2.Fence() <= l1.Fence() {
		t.Errorf("row %q: fence of c2 on A, B, C = %d; want > %d, c1's (from D or E)", row, l2.Fence(), l1.Fence())
	}
	if !c2.increment(l2, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	for _, i := range []int{3, 4} {
		e.mustHeal(i, "", "kill", func() error { return e.cl.Restart(i) })
	}
	e.healNet(c3, "down", 0, 1, 2)
	rep := e.check()
	assertClean(t, row, rep)
	e.finish(row, rep, nil)
}

// 15. Fence tie: two overlapping holds get the same fence. The counters have
// diverged (A, E at 100; B, C, D at 1). c1, cut off from D and E, its
// replies from C 400ms late, acquires A, B, C: its script runs on C at once
// (C's counter 2), but c1 hears of it only later. Meanwhile C's clock jumps
// past c1's key, and c2, cut off from A and B, acquires C, D, E: counters
// 3, 2, 101, fence 101, written back to C, D, E. Then c1's reply from C
// arrives: A 101, B 2, C 2, fence 101 too. Mutual exclusion is broken (a
// clock jumped while an acquisition was in flight: expected, the checker
// reports the overlap) and so is the uniqueness of fences (the checker
// reports the tie); the owner-aware guard must still let only one holder
// use fence 101 downstream.
//
// Deterministic: each fence is the max of INCRs that all ran before either
// write-back, whatever the timing, provided c2's INCR on C runs before
// c1's write-back reaches C. c1 sends that write-back only once C's late
// reply has come, so c2 has the 400ms of that latency, of which its own
// acquisition (no fault on its paths to C, D, E) needs a few
// milliseconds; the row checks that c2 was done first.
func chaosFenceTie(t *testing.T, row string) {
	e := newEnv(t, 5, redisFenced, nil)
	const name = "r15"
	const ttl = 10 * time.Second
	const latency = 400 * time.Millisecond
	c1 := e.clientWith("c1", &redlock.Options{NodeTimeout: time.Second})
	c2 := e.client("c2")
	lockKey, fenceKey := c1.lc.Keys(name)
	// Open every connection and load the scripts first (not recorded), so
	// that C's reply latency is c1's only delay.
	c1.warmUp(name)
	c2.warmUp(name)
	for i, v := range []int{100, 1, 1, 1, 100} {
		if err := e.cl.Client(i).Set(within(t, 5*time.Second), fenceKey, v, 0).Err(); err != nil {
			t.Fatalf("seeding the fence counter of node %d: %v", i, err)
		}
	}

	e.down(c1, 3, 4)
	e.mustFault(2, c1.name, "latency-400ms", func() error { return c1.net.Latency(2, latency) })
	type result struct {
		l   *redlock.Lock
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		l, err := c1.acquire(ctx, name, ttl, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
		done <- result{l, err, time.Now()}
	}()

	// c1's script has run on C once its key is there; the reply is late.
	if !waitFor(5*time.Second, func() bool { return e.cl.Client(2).Exists(ctx, lockKey).Val() == 1 }) {
		t.Fatalf("row %q: c1's key never appeared on C", row)
	}
	e.mustFault(2, "", "clock-jump", func() error { return e.cl.ClockJump(2, lockKey) })
	e.mustHeal(2, "", "clock-jump", func() error { return nil }) // a jump is over at once
	e.down(c2, 0, 1)
	l2 := mustAcquire(t, c2, name, ttl, 5*time.Second, &redlock.AcquireOptions{Retry: redlock.NoRetry()}, "C (key expired), D, E free")
	c2At := time.Now()
	r1 := <-done
	if r1.err != nil {
		t.Fatalf("row %q: c1's acquisition of A, B, C = %v; want the lock (C's reply was only late)", row, r1.err)
	}
	l1 := r1.l
	if r1.at.Before(c2At) {
		t.Fatalf("row %q: c1's acquisition returned before c2's (c2 took more than the %v window); the tie needs c2 first", row, latency)
	}
	if l1.Fence() != 101 || l2.Fence() != 101 || l1.Token() == l2.Token() {
		t.Fatalf("row %q: fences of c1, c2 = %d, %d; want both 101 (the tie), with different tokens", row, l1.Fence(), l2.Fence())
	}

	// Both read-modify-write, interleaved. c2 reaches the store first and
	// keeps fence 101; c1, at the same fence, is refused, read and write.
	v2, err := c2.read(l2, name)
	if err != nil {
		t.Errorf("row %q: read of c2, first at fence 101 = %v; want accepted", row, err)
	}
	v1, err := c1.read(l1, name)
	if !errors.Is(err, guard.ErrStaleFence) {
		t.Errorf("row %q: read of c1 at c2's fence 101 = %v; want ErrStaleFence", row, err)
	}
	if !c2.write(l2, name, v2+1) {
		t.Errorf("row %q: write of c2, first at fence 101, rejected; want accepted", row)
	}
	if c1.write(l1, name, v1+1) {
		t.Errorf("row %q: write of c1 at c2's fence 101 accepted; want rejected with ErrStaleFence", row)
	}
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.Write && ev.Client == c1.name && !strings.Contains(ev.Detail, "already held by another holder") {
			t.Errorf("row %q: c1's rejected access: %q; want it to say another holder holds fence 101", row, ev.Detail)
		}
	}
	if got, err := e.store.counters(); err != nil || got[name] != v2+1 {
		t.Errorf("row %q: stored counter = %v, %v; want %d, c2's increment only", row, got[name], err, v2+1)
	}

	c2.release(l2)
	c1.release(l1)
	e.healNet(c1, "down", 3, 4)
	e.mustHeal(2, c1.name, "latency-400ms", func() error { return c1.net.Heal(2) })
	e.healNet(c2, "down", 0, 1)
	rep := e.check()
	if len(rep.FenceTies) != 1 {
		t.Errorf("row %q: fence ties = %d; want 1, c1's and c2's holds at fence 101:\n%s", row, len(rep.FenceTies), rep)
	}
	if len(rep.Overlaps) == 0 {
		t.Errorf("row %q: overlaps = 0; want the double grant of the clock jump reported", row)
	}
	assertFencedSafe(t, row, rep)
	e.finish(row+" (overlap and tie expected)", rep, nil)
}

// 16. A delayed cleanup (issue 7.2), honest clocks, no node fault. c1's
// requests to A and B are held 1s in its process (a retransmitted packet,
// a slow path) while its node timeout is 100ms. Attempt 1 gets only C and
// fails; its cleanup of A and B is held as well. The paths heal, attempt 2
// takes A, B, C, and then the held acquire and cleanup of attempt 1 land on
// A and B. Each attempt writes its own value, so attempt 1's cleanup
// deletes nothing of attempt 2's: A and B still hold c1's lock and c2 is
// refused.
func chaosDelayedCleanup(t *testing.T, row string) {
	e, rep, l1, onAB, err2 := delayedCleanup(t, false)
	if !errors.Is(err2, redlock.ErrHeld) {
		t.Errorf("row %q: c2's Acquire after the delayed cleanup landed = %v; want ErrHeld (c1 still holds A, B, C)", row, err2)
	}
	for i, v := range onAB {
		if !strings.HasPrefix(v, l1.Token()+".") {
			t.Errorf("row %q: node %d: the lock key = %q once the held requests landed; want c1's value (token %s)", row, i, v, l1.Token())
		}
	}
	assertClean(t, row, rep)
	e.finish(row, rep, nil)
}

// Control c: row 16 with the old values, every attempt of a call writing
// the bare token. The held cleanup of attempt 1 deletes attempt 2's keys on
// A and B, c2 takes the lock while c1 still holds it, and the checker must
// report the overlap.
func controlDelayedCleanupShared(t *testing.T, row string) {
	e, rep, _, _, err2 := delayedCleanup(t, true)
	caught := err2 == nil && len(rep.Overlaps) > 0
	if !caught {
		t.Errorf("row %q: c2's Acquire = %v, overlaps = %d; want the lock and an overlap reported (the cleanup of attempt 1 deleted attempt 2's keys):\n%s",
			row, err2, len(rep.Overlaps), rep)
	}
	e.finish(row, rep, &caught)
}

// delayedCleanup runs the scenario of row 16 on A, B, C (with shared
// attempt values for the control) and returns c1's lock, the error of c2's
// try-lock once the held requests landed, the values of the lock key on A
// and B then, and the checked history.
func delayedCleanup(t *testing.T, shared bool) (e *chaosEnv, rep *history.Report, l1 *redlock.Lock, onAB []string, err2 error) {
	e = newEnv(t, 3, memFenced, nil)
	const name = "r16"
	const hold = time.Second
	c1 := e.clientWith("c1", &redlock.Options{NodeTimeout: 100 * time.Millisecond})
	if shared {
		redlock.SetSharedAttemptValue(c1.lc)
	}
	c2 := e.client("c2")
	// Open every connection and load the scripts on every node first (not
	// recorded): a held EVALSHA that finds no script does nothing.
	c1.warmUp(name)
	c2.warmUp(name)
	for i := 0; i < e.cl.Len(); i++ {
		if err := e.cl.Client(i).ScriptLoad(within(t, 5*time.Second), redlock.CleanupSource).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD of the cleanup script on node %d: %v", i, err)
		}
	}

	for _, i := range []int{0, 1} {
		e.mustFault(i, c1.name, "hold-1s", func() error { return c1.net.HoldRequests(i, hold) })
	}
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		// One retry, 400ms after attempt 1: after the heal, before the
		// held requests land.
		retry := func(attempt int) (time.Duration, bool) { return 400 * time.Millisecond, attempt == 1 }
		l, err := c1.acquire(ctx, name, 5*time.Second, &redlock.AcquireOptions{Retry: retry})
		done <- result{l, err}
	}()
	// Attempt 1 has failed once its acquire and cleanup to A and B are
	// held (at least 4 requests: the core may send a cleanup twice) and
	// its key on C is cleaned up; heal then, before attempt 2, 400ms later.
	lockKey, _ := e.directKeys(name)
	if !waitFor(5*time.Second, func() bool {
		return c1.net.Held() >= 4 && e.cl.Client(2).Exists(ctx, lockKey).Val() == 0
	}) {
		t.Fatalf("c1's attempt 1 never had its acquire and cleanup held on A, B and its key on C cleaned up (held: %d)", c1.net.Held())
	}
	e.healNet(c1, "hold-1s", 0, 1)
	r1 := <-done
	if r1.err != nil {
		t.Fatalf("c1's Acquire = %v; want the lock at attempt 2, on healed paths", r1.err)
	}
	if c1.net.Held() < 4 {
		t.Fatalf("held requests when c1's attempt 2 won = %d; want >= 4 (attempt 2 must win before attempt 1's requests land)", c1.net.Held())
	}
	if !waitFor(10*time.Second, func() bool { return c1.net.Held() == 0 }) {
		t.Fatalf("held requests 10s later = %d; want 0", c1.net.Held())
	}
	_, err2 = c2.acquire(within(t, 5*time.Second), name, 5*time.Second, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	l1 = r1.l
	vals := make([]string, 2)
	for i := range vals {
		vals[i] = e.cl.Client(i).Get(ctx, lockKey).Val()
	}
	if l1.Err() != nil {
		t.Errorf("c1's lock after the delayed requests landed: Err() = %v; want nil (still held, its TTL is 5s)", l1.Err())
	}
	c1.release(l1)
	return e, e.check(), l1, vals, err2
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

// TestChaosSoak runs many clients incrementing a fenced counter under one
// lock while random faults come and go: nodes killed and restarted with
// their data, paused, paused by CLIENT PAUSE, their clocks jumping forward;
// clients' paths going down, blackholed or slow; clients stopping past their
// lease between read and write. Its duration is
// -chaos.duration, else $REDLOCK_CHAOS_DURATION, else 20s. The store must
// end with no stale write accepted and no increment lost, fences must
// never go backwards, and once everything is healed a client must get the
// lock. Overlaps are allowed only when a clock jumped (Redlock's own
// assumption broken); fencing is what keeps the store right then.
func TestChaosSoak(t *testing.T) {
	from := summary.mark()
	t.Cleanup(func() { summary.print(t, from) }) // runs last, even after a failure
	d := chaosDuration(t)
	const (
		clients = 10
		ttl     = time.Second
		name    = "soak"
	)
	// A short per-node timeout: a paused or blackholed node costs every
	// attempt that much.
	e := newEnvFor(t, d, 5, redisFenced, &redlock.Options{NodeTimeout: 200 * time.Millisecond})
	cs := e.clients(clients)
	key, _ := e.directKeys(name)

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range cs {
		// Half the clients hold briefly; the others work for up to 400ms
		// (more than TTL/3) under an auto-extended lease.
		o := &redlock.AcquireOptions{AutoExtend: i%2 == 1}
		c.pauseOneIn = 10
		hold := 50 * time.Millisecond
		if o.AutoExtend {
			hold = 400 * time.Millisecond
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, name, name, ttl, 2*time.Second, hold, o)
		}()
	}
	inj := &injector{e: e, cs: cs, key: key}
	wg.Add(1)
	go func() {
		defer wg.Done()
		inj.run(ctx)
	}()
	wg.Wait()
	inj.healAll()

	l := mustAcquire(t, cs[0], name, ttl, 10*time.Second, nil, "everything healed (liveness)")
	if !cs[0].increment(l, name) {
		t.Errorf("soak: write after healing rejected; want accepted")
	}
	cs[0].release(l)

	rep := e.check()
	row := fmt.Sprintf("soak %v, %d clients", d, clients)
	if n := len(rep.StaleWrites); n != 0 {
		t.Errorf("row %q: stale writes accepted = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.LostIncrements); n != 0 {
		t.Errorf("row %q: lost increments = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.FenceOrder); n != 0 {
		t.Errorf("row %q: fence-order violations = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.Overlaps); n != 0 && inj.clockJumps == 0 {
		t.Errorf("row %q: overlaps = %d without any clock jump; want 0:\n%s", row, n, rep)
	}
	if rep.Faults == 0 {
		t.Errorf("row %q: faults injected = 0; want some", row)
	}
	wantAcquisitions(t, row, rep, 2)
	kinds := map[history.Kind]int{}
	for _, ev := range e.rec.Events() {
		kinds[ev.Kind]++
	}
	t.Logf("%s: %d faults (%d clock jumps), %d acquisitions, %d failed, %d extends, %d lost, %d writes accepted, %d rejected, %d overlaps, %d late losses",
		row, rep.Faults, inj.clockJumps, rep.Acquisitions, kinds[history.AcquireFail], kinds[history.Extend], kinds[history.Lost],
		rep.AcceptedWrites, rep.RejectedWrites, len(rep.Overlaps), len(rep.LateLoss))
	e.finish(row, rep, nil)
}

// activeFault is a fault of the soak waiting to be healed.
type activeFault struct {
	node   int
	client int // index in the injector's clients, or -1 for a node fault
	detail string
	at     time.Time // when to heal it
	heal   func() error
}

// injector injects random faults into a soak and heals each after a short
// while. At most two nodes have a node fault at a time, so a majority of
// the nodes stays up. Amnesia is left out: a node restarting empty
// legitimately breaks fencing (see control b).
type injector struct {
	e   *chaosEnv
	cs  []*sim
	key string

	active     []activeFault // only the run goroutine touches it
	clockJumps int           // read after run returned
}

// run injects faults until ctx ends, then returns with faults still active
// (healAll heals them).
func (in *injector) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100*time.Millisecond + rand.N(300*time.Millisecond)):
		}
		in.healDue(time.Now())
		in.inject()
	}
}

// nodeFaulted reports whether node i has an active node fault, and how many
// nodes do.
func (in *injector) nodeFaulted(i int) (bool, int) {
	n, hit := 0, false
	for _, f := range in.active {
		if f.client < 0 {
			n++
			hit = hit || f.node == i
		}
	}
	return hit, n
}

func (in *injector) inject() {
	e := in.e
	heal := time.Now().Add(200*time.Millisecond + rand.N(1300*time.Millisecond))
	i := rand.N(5)
	faulted, nodeFaults := in.nodeFaulted(i)
	nodeOK := !faulted && nodeFaults < 2
	switch k := rand.N(7); {
	case k == 0 && nodeOK:
		if e.fault(i, "", "kill", func() error { return e.cl.Kill(i) }) == nil {
			in.active = append(in.active, activeFault{i, -1, "kill", heal, func() error { return e.cl.Restart(i) }})
		}
	case k == 1 && nodeOK:
		if e.fault(i, "", "pause", func() error { return e.cl.Pause(i) }) == nil {
			in.active = append(in.active, activeFault{i, -1, "pause", heal, func() error { return e.cl.Unpause(i) }})
		}
	case k == 2 && nodeOK:
		d := 50*time.Millisecond + rand.N(450*time.Millisecond)
		detail := "client-pause " + d.String()
		if e.fault(i, "", detail, func() error { return e.cl.ClientPause(i, d) }) == nil {
			in.active = append(in.active, activeFault{i, -1, detail, time.Now().Add(d), func() error { return nil }})
		}
	case k == 3:
		// Forward jumps of the clocks of 1 to 3 nodes: the lock key
		// expires there. With 3, the holder's quorum is gone whatever
		// nodes it holds: someone else may get the lock (an overlap) and
		// only fencing keeps the store right.
		for _, j := range rand.Perm(5)[:1+rand.N(3)] {
			if hit, _ := in.nodeFaulted(j); hit {
				continue
			}
			if e.fault(j, "", "clock-jump", func() error { return e.cl.ClockJump(j, in.key) }) == nil {
				in.clockJumps++
				e.heal(j, "", "clock-jump", func() error { return nil })
			}
		}
	case k >= 4:
		c := rand.N(len(in.cs))
		for _, f := range in.active {
			if f.client == c && f.node == i {
				return
			}
		}
		n := in.cs[c].net
		var detail string
		var f func() error
		switch rand.N(3) {
		case 0:
			detail, f = "down", func() error { return n.Down(i) }
		case 1:
			detail, f = "blackhole", func() error { return n.Blackhole(i) }
		default:
			d := 50*time.Millisecond + rand.N(350*time.Millisecond)
			detail, f = "latency "+d.String(), func() error { return n.Latency(i, d) }
		}
		if e.fault(i, in.cs[c].name, detail, f) == nil {
			in.active = append(in.active, activeFault{i, c, detail, heal, func() error { return n.Heal(i) }})
		}
	}
}

// healDue heals the faults due by now.
func (in *injector) healDue(now time.Time) {
	kept := in.active[:0]
	for _, f := range in.active {
		if f.at.After(now) {
			kept = append(kept, f)
			continue
		}
		in.healOne(f)
	}
	in.active = kept
}

// healAll heals every active fault.
func (in *injector) healAll() {
	for _, f := range in.active {
		in.healOne(f)
	}
	in.active = nil
}

func (in *injector) healOne(f activeFault) {
	client := ""
	if f.client >= 0 {
		client = in.cs[f.client].name
	}
	if f.client < 0 && f.at.After(time.Now()) && f.detail != "kill" && f.detail != "pause" {
		// A CLIENT PAUSE ends by itself.
		time.Sleep(time.Until(f.at))
	}
	in.e.heal(f.node, client, f.detail, f.heal)
}

// syncBuffer is a bytes.Buffer safe for a logger's goroutines and a test.
type syncBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// 17. Fair handoff under faults (issue 10): six clients, each its own Client
// (as six processes), contend for one name in the default fair mode, with
// fenced increments. While they do, B is blackholed for every client, then D
// is paused for a third of the TTL, then E is killed and restarted with its
// data. The waiting order only decides who tries first: no overlap, fences
// in order, nothing stale accepted; every client makes progress; no queue
// key is left once the contention is over.
func chaosFairContention(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r17"
	const ttl = time.Second
	cs := e.clients(6)
	faults := make(chan struct{})
	go func() {
		defer close(faults)
		step := func(d time.Duration) { time.Sleep(d) }
		step(800 * time.Millisecond)
		for _, c := range cs {
			e.fault(1, c.name, "blackhole", func() error { return c.net.Blackhole(1) })
		}
		step(1500 * time.Millisecond)
		for _, c := range cs {
			e.heal(1, c.name, "blackhole", func() error { return c.net.Heal(1) })
		}
		e.fault(3, "", "pause", func() error { return e.cl.Pause(3) })
		step(ttl / 3)
		e.heal(3, "", "pause", func() error { return e.cl.Unpause(3) })
		step(300 * time.Millisecond)
		e.fault(4, "", "kill", func() error { return e.cl.Kill(4) })
		step(time.Second)
		e.heal(4, "", "restart", func() error { return e.cl.Restart(4) })
	}()
	runWorkers(6*time.Second, cs, name, name, ttl, 3*time.Second, 5*time.Millisecond, nil)
	<-faults

	per := map[string]int{}
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.Acquire && ev.Lock == name && ev.Token != "" {
			per[ev.Client]++
		}
	}
	for _, c := range cs {
		if per[c.name] == 0 {
			t.Errorf("row %q: client %s never acquired in 6s of fair contention (per client: %v)", row, c.name, per)
		}
	}
	// Waiters left the queue when they gave up; entries of the last ones
	// expire. Nothing may stay behind.
	time.Sleep(ttl + 1500*time.Millisecond)
	lockKey, _ := e.directKeys(name)
	for i, nd := range e.cl.Clients() {
		for _, k := range []string{lockKey, lockKey + ":q", lockKey + ":qt"} {
			if n, err := nd.Exists(context.Background(), k).Result(); err != nil || n != 0 {
				t.Errorf("row %q: node %d: EXISTS %s = %d, %v after the contention; want 0", row, i, k, n, err)
			}
		}
	}
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, len(cs))
	e.finish(row, rep, nil)
}
