package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos row 16 and control c: the cleanup of a failed attempt delayed past
// the next attempt.

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
