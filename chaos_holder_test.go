package redlock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos row 6 and control a: the holder itself paused past its lease.

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
