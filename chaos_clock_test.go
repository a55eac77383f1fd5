package redlock_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos rows of clock faults: a node's clock jumping forward (the key
// expires early there) or back.

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
