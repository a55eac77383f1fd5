package redlock

import (
	"context"
	"testing"
	"time"
)

// TestSemaphoreBugGateSplitLosesGateKeys shows a bug in the semaphore's
// waiting order; it fails until the bug is fixed.
//
// A call waiting for a permit queues at the semaphore's gate: a lock whose
// lease semCall.queue makes for the name "<name>:permits" and then points
// at the gate's keys (<prefix>{<name>}:permits and its queue). When the
// gate's acquisition splits (acquisition.split, grant.go: an attempt failed
// while releases had granted the call the key on some nodes), the new
// call's lease is made again from the name alone, with newLease: its keys
// are those of a lock named "<name>:permits", <prefix>{<name>:permits}.
// From then on the call waits for, and takes, a lock nobody else uses: it
// believes it holds the gate while another waiter does, and both take the
// next freed permits, so a later waiter can get a permit before the one
// that waited longest. (The limit holds: each slot is a lock of its own.)
// The chaos row 20 records it as overlapping holds of "<name>:permits"
// within seconds of contention among five clients, faults or not; the
// stray key also contends with any lock a user names "<name>:permits".
//
// A split must keep the lease's keys (and whatever else the caller set on
// the lease after newLease).
func TestSemaphoreBugGateSplitLosesGateKeys(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := permitName(t)
	ctx := context.Background()
	gate := semKeysOf(c.opts.KeyPrefix, name).gate
	// The gate's lease and acquisition, as semCall.queue and acquireLease
	// make them.
	gl := c.newLease(name+":permits", time.Second, leaseSpec{})
	gl.keys = gate
	a := &acquisition{c: c, retry: DefaultRetry(), cl: newCall(ctx, gl)}
	a.w = newWaiter(gl, queueWait, c.clock.Now(), c.waker.id)
	a.split(ctx)
	if got := a.cl.ls.keys; got != gate {
		t.Errorf("gate acquisition after a split waits on lock key %q (queue %q); want the gate's %q (queue %q)",
			got.lock, got.queue, gate.lock, gate.queue)
	}
}
