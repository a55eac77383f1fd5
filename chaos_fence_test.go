package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos rows of fences: counters that diverged, and a tie between two
// overlapping holds.

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
