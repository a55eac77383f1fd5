package redlock

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSemaphoreSplitKeepsGateKeys: a call waiting for a permit queues at
// the semaphore's gate, a lock with keys of its own (<prefix>{<name>}:permits
// and its queue), not those of its lease's name. When the gate's
// acquisition splits (acquisition.split, grant.go: an attempt failed while
// releases had granted the call the key on some nodes), the new call's
// lease must keep those keys. It was made again from the name alone, so the
// call went on to wait for, and take, a lock named "<name>:permits" that
// nobody else used: it believed it held the gate while another waiter did,
// both took the next freed permits, and a later waiter could get a permit
// before the one that waited longest (the limit held: each slot is a lock
// of its own). The chaos row 20 saw it as overlapping holds of the gate.
// A slot's lease keeps its permit spec the same way.
func TestSemaphoreSplitKeepsGateKeys(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := permitName(t)
	ctx := context.Background()
	sk := semKeysOf(c.opts.KeyPrefix, name)
	gate := sk.gate
	// The gate's lease and acquisition, as semCall.queue and acquireLease
	// make them.
	gl := c.newLease(name+":permits", time.Second, leaseSpec{form: formGate, keys: &gate})
	a := &acquisition{c: c, retry: DefaultRetry(), cl: newCall(ctx, gl)}
	a.w = newWaiter(gl, queueWait, c.clock.Now(), c.waker.id)
	a.split(ctx)
	if got := a.cl.ls.keys; got != gate {
		t.Errorf("gate acquisition after a split waits on lock key %q (queue %q); want the gate's %q (queue %q)",
			got.lock, got.queue, gate.lock, gate.queue)
	}
	slot := sk.slotKeys(1)
	p := &permitSpec{limitArg: "2", yield: "1", slot: 1}
	sl := c.newLease(name, time.Second, leaseSpec{form: formSlot, fenced: true, keys: &slot, permit: p})
	a = &acquisition{c: c, retry: DefaultRetry(), cl: newCall(ctx, sl)}
	a.w = newWaiter(sl, queueWait, c.clock.Now(), c.waker.id)
	a.split(ctx)
	if got := a.cl.ls; got.keys != slot || got.permit != p {
		t.Errorf("slot acquisition after a split: keys %q, permit %+v; want slot 1's %q and its permit spec", got.keys.lock, got.permit, slot.lock)
	}
}

// TestSplitKeepsEveryFieldOfTheLease: a split makes the new call's lease
// as a copy of the old one, with a new token only. The gate's lease is
// hidden from the observer (a semaphore reports its calls once, not its
// waiters' order): after a split, the gate's lock, its release and its
// events must stay hidden too, whatever else the lease carries.
func TestSplitKeepsEveryFieldOfTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []Event
		c, _ := newFakeClient(t, 3, &Options{OnEvent: func(_ context.Context, e Event) {
			mu.Lock()
			defer mu.Unlock()
			if e.Kind != EventNode { // each node's answer is reported, hidden or not
				seen = append(seen, e)
			}
		}})
		ctx := context.Background()
		sk := semKeysOf(c.opts.KeyPrefix, "split-fields")
		gl := c.newLease("split-fields:permits", time.Second, leaseSpec{form: formGate, keys: &sk.gate})
		a := &acquisition{c: c, retry: NoRetry(), cl: newCall(ctx, gl)}
		a.w = newWaiter(gl, queueBarge, c.clock.Now(), c.waker.id)
		a.split(ctx)
		if a.cl.ls.token == gl.token {
			t.Fatalf("the split's lease has the old token; want a new one")
		}
		l, _, err := a.run(ctx)
		if err != nil {
			t.Fatalf("the split call's attempt = %v; want the free gate", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range seen {
			t.Errorf("the observer saw %v of %q after a split of the hidden gate; want nothing", e.Kind, e.Name)
		}
	})
}
