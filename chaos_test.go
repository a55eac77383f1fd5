package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos tests: real faults injected into real Redis nodes partway through a
// lease, every client's view recorded, and the history checked by
// history.Check. Each row of TestChaos asserts its own invariant; the
// negative controls show that the same checker reports violations when the
// protection is taken away. TestChaosSoak runs many clients under random
// faults for $REDLOCK_CHAOS_DURATION (20s by default).
//
// The rows live in files by fault family: chaos_nodes_test.go (kill,
// amnesia, docker pause, CLIENT PAUSE), chaos_holder_test.go (the holder
// paused), chaos_network_test.go (latency, blackholes, flapping),
// chaos_clock_test.go, chaos_fence_test.go, chaos_cleanup_test.go,
// chaos_fair_test.go, chaos_handover_test.go, chaos_election_test.go and
// chaos_semaphore_test.go (its control in chaos_semaphore_naive_test.go), each control beside its
// row. The harness: chaos_env_test.go (nodes and faults), chaos_sim_test.go
// (clients), chaos_store_test.go (the downstream counter) and
// chaos_report_test.go (check, timeline, summary); the soak is in
// chaos_soak_test.go.
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
		{"19-election-faults", chaosElection},
		{"20-semaphore-faults", chaosSemaphore},
		{"21-stray-acquire", chaosStrayAcquire},
		{"control-a-06-unfenced", controlHolderPauseUnfenced},
		{"control-a-09-unfenced", controlClockJumpUnfenced},
		{"control-b-single-node-amnesia", controlSingleNodeAmnesia},
		{"control-c-16-shared-values", controlDelayedCleanupShared},
		{"control-d-18-unconditional-extend", controlHandoverUnconditional},
		{"control-e-20-naive-permits", controlSemaphoreNaive},
		{"control-f-21-any-attempt-extend", controlStrayAcquireAnyAttempt},
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
