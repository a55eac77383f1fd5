package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// Permits under node faults: a minority of the nodes down or paused leaves
// a held permit held and the semaphore working; a majority down ends every
// permit by its local deadline, honestly, and gives out none until the
// nodes are back; a permit nobody extends frees its slot at its TTL.
// These tests stop nodes, so they start a cluster of their own.

// nodeFault is a fault of a whole node, seen alike by every client, and
// what undoes it.
type nodeFault struct {
	name       string
	fault, end func(i int) error
}

// nodeFaults returns kill (then restart, with the node's data) and docker
// pause (then unpause) on cl.
func nodeFaults(cl *redlocktest.Cluster) []nodeFault {
	return []nodeFault{{"kill", cl.Kill, cl.Restart}, {"pause", cl.Pause, cl.Unpause}}
}

// inject applies f to nodes and returns what undoes it, which also runs
// when the test ends if nobody called it; a fault that cannot be made
// stops the test.
func (f nodeFault) inject(t *testing.T, nodes ...int) (heal func()) {
	t.Helper()
	healed := false
	heal = func() {
		if healed {
			return
		}
		healed = true
		for _, i := range nodes {
			if err := f.end(i); err != nil {
				t.Errorf("undo %s of node %d: %v", f.name, i, err)
			}
		}
	}
	t.Cleanup(heal)
	for _, i := range nodes {
		if err := f.fault(i); err != nil {
			t.Fatalf("%s node %d: %v", f.name, i, err)
		}
	}
	return heal
}

// doneAt waits up to the permit's deadline plus slack for it to end, and
// returns when it did; it fails the test (and returns the zero time) if
// the permit is still held then.
func doneAt(t *testing.T, p *Permit, slack time.Duration) time.Time {
	t.Helper()
	select {
	case <-p.Done():
		return time.Now()
	case <-time.After(time.Until(p.ValidUntil()) + slack):
		t.Errorf("Done of the permit (slot %d) not closed %v after its deadline; want closed by it", p.Slot(), slack)
		return time.Time{}
	}
}

// wantLostBy fails the test unless p ended with ErrLost no later than
// tolerance after its local deadline (read after the end: the last
// successful extend's).
func wantLostBy(t *testing.T, what string, p *Permit, at time.Time, tolerance time.Duration) {
	t.Helper()
	if at.IsZero() {
		return
	}
	if late := at.Sub(p.ValidUntil()); late > tolerance {
		t.Errorf("%s: Done closed %v after the local deadline; want by the deadline (tolerance %v)", what, late, tolerance)
	}
	if err := p.Err(); !errors.Is(err, ErrLost) {
		t.Errorf("%s: Err() after Done = %v; want ErrLost", what, err)
	}
}

// lossTolerance is how late a loss may be signalled after the deadline:
// timers and scheduling on a loaded two-core box under -race.
const lossTolerance = 250 * time.Millisecond

// TestSemaphoreMinorityFault: 2 of 5 nodes killed, or paused, partway
// through an auto-extended permit: the permit stays held past several TTLs
// (the watchdog extends on the other three), another client still takes
// the second permit, and a third is refused as held, not as unreachable.
func TestSemaphoreMinorityFault(t *testing.T) {
	cl := redlocktest.Start(t, 5, nil)
	for _, f := range nodeFaults(cl) {
		t.Run(f.name, func(t *testing.T) {
			const ttl = time.Second
			holder, other := newTestClient(t, cl.Clients(), nil), newTestClient(t, cl.Clients(), nil)
			name := permitName(t)
			ctx := context.Background()
			p, err := holder.AcquirePermit(ctx, name, 2, ttl, &AcquireOptions{AutoExtend: true})
			if err != nil {
				t.Fatalf("AcquirePermit on a healthy cluster: %v", err)
			}
			defer p.Release(ctx)
			time.Sleep(ttl / 3) // partway through the lease
			heal := f.inject(t, 3, 4)
			select {
			case <-p.Done():
				t.Fatalf("the permit ended with 2 of 5 nodes %s: %v; want it kept by the watchdog", f.name, p.Err())
			case <-time.After(3*ttl + ttl/2):
			}
			if err := p.Err(); err != nil {
				t.Errorf("Err() after 3.5 TTLs with 2 of 5 nodes %s = %v; want nil (still held)", f.name, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			q, err := other.AcquirePermit(wctx, name, 2, ttl, nil)
			cancel()
			if err != nil {
				t.Fatalf("AcquirePermit of the second permit with 2 of 5 nodes %s = %v; want it", f.name, err)
			}
			if q.Slot() == p.Slot() || q.Fence() <= p.Fence() {
				t.Errorf("second permit: slot %d, fence %d; want another slot than %d and a fence above %d",
					q.Slot(), q.Fence(), p.Slot(), p.Fence())
			}
			_, err = other.TryAcquirePermit(ctx, name, 2, ttl, nil)
			if !errors.Is(err, ErrHeld) {
				t.Errorf("TryAcquirePermit of a third permit (limit 2) with 2 of 5 nodes %s = %v; want ErrHeld", f.name, err)
			}
			if err := q.Release(ctx); err != nil {
				t.Errorf("Release of the second permit with 2 of 5 nodes %s = %v; want nil", f.name, err)
			}
			if err := p.Release(ctx); err != nil {
				t.Errorf("Release of the auto-extended permit with 2 of 5 nodes %s = %v; want nil", f.name, err)
			}
			heal()
		})
	}
}

// TestSemaphoreMajorityFault: 3 of 5 nodes killed partway through two
// permits, one auto-extended and one not: each ends no later than its local
// deadline, with ErrLost; no permit is given out while the majority is
// down; after the restart one is, with a larger fence.
func TestSemaphoreMajorityFault(t *testing.T) {
	cl := redlocktest.Start(t, 5, nil)
	const ttl = 1500 * time.Millisecond
	holder, other := newTestClient(t, cl.Clients(), nil), newTestClient(t, cl.Clients(), nil)
	name := permitName(t)
	ctx := context.Background()
	auto, err := holder.AcquirePermit(ctx, name, 2, ttl, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatalf("AcquirePermit (auto-extended): %v", err)
	}
	plain, err := holder.AcquirePermit(ctx, name, 2, ttl, nil)
	if err != nil {
		t.Fatalf("AcquirePermit (plain): %v", err)
	}
	time.Sleep(ttl / 3)
	heal := nodeFaults(cl)[0].inject(t, 0, 1, 2)

	// Each permit's end, watched on its own: the two deadlines differ.
	type end struct {
		what string
		p    *Permit
		at   chan time.Time
	}
	ends := []end{{"auto-extended permit", auto, make(chan time.Time, 1)}, {"plain permit", plain, make(chan time.Time, 1)}}
	for _, e := range ends {
		go func() { e.at <- doneAt(t, e.p, 5*time.Second) }()
	}
	_, err = other.TryAcquirePermit(ctx, name, 2, ttl, nil)
	if !errors.Is(err, ErrNotAcquired) {
		t.Errorf("TryAcquirePermit with 3 of 5 nodes killed = %v; want ErrNotAcquired", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*ttl)
	q, err := other.AcquirePermit(wctx, name, 2, ttl, nil)
	cancel()
	if err == nil {
		q.Release(ctx)
		t.Errorf("AcquirePermit with 3 of 5 nodes killed = a permit (slot %d); want none", q.Slot())
	}
	for _, e := range ends {
		wantLostBy(t, e.what, e.p, <-e.at, lossTolerance)
	}
	heal()

	wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q, err = other.AcquirePermit(wctx, name, 2, ttl, nil)
	if err != nil {
		t.Fatalf("AcquirePermit after the restart = %v; want a permit", err)
	}
	defer q.Release(ctx)
	if most := max(auto.Fence(), plain.Fence()); q.Fence() <= most {
		t.Errorf("fence after the restart = %d; want above the lost permits' %d", q.Fence(), most)
	}
}

// TestSemaphoreExpiredPermitFreesSlot: a holder that crashed (it neither
// extends nor releases) keeps its slot no longer than its TTL: a waiter
// gets that slot once it expires, while the holder's other, longer permit
// stays held.
func TestSemaphoreExpiredPermitFreesSlot(t *testing.T) {
	const ttl = 700 * time.Millisecond
	ns := nodes(t, 5)
	crashed, waiter := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	name := permitName(t)
	ctx := context.Background()
	long, err := crashed.AcquirePermit(ctx, name, 2, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Release(ctx)
	start := time.Now()
	short, err := crashed.AcquirePermit(ctx, name, 2, ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := waiter.AcquirePermit(wctx, name, 2, 5*time.Second, nil)
	got := time.Now()
	if err != nil {
		t.Fatalf("waiting AcquirePermit while a permit expires = %v; want the expired permit's slot", err)
	}
	defer p.Release(ctx)
	if p.Slot() != short.Slot() {
		t.Errorf("waiter got slot %d; want the expired permit's slot %d", p.Slot(), short.Slot())
	}
	if got.Before(short.ValidUntil()) {
		t.Errorf("waiter got the slot %v before the expired permit's deadline; want after it", short.ValidUntil().Sub(got))
	}
	// The slot's keys expire ttl after the acquisition began; the waiter
	// is told by the nodes' TTLs, not by a release.
	if d := got.Sub(start); d > ttl+time.Second {
		t.Errorf("waiter got the slot %v after the expired permit was taken (TTL %v); want within about the TTL", d, ttl)
	}
	select {
	case <-short.Done():
		if !errors.Is(short.Err(), ErrLost) {
			t.Errorf("Err() of the expired permit = %v; want ErrLost", short.Err())
		}
	default:
		t.Errorf("Done of the expired permit not closed after its slot was taken; want closed at its deadline")
	}
	if err := long.Err(); err != nil {
		t.Errorf("Err() of the holder's long permit = %v; want nil (still held)", err)
	}
	if p.Fence() <= long.Fence() || p.Fence() <= short.Fence() {
		t.Errorf("waiter's fence %d; want above the earlier permits' %d and %d", p.Fence(), long.Fence(), short.Fence())
	}
}
