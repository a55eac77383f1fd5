package redlock

import (
	"context"
	"testing"
	"time"
)

// TestSemaphoreEvents: an AcquirePermit call is reported once, as one
// EventAcquire with the semaphore's limit (its slot attempts are not
// reported as lock acquisitions of their own), with a pair of EventWait
// when it waited; the gate its waiters queue at is never reported; the
// permit's release is.
func TestSemaphoreEvents(t *testing.T) {
	ns := nodes(t, 3)
	var ea, eb events
	a := newTestClient(t, ns, &Options{NodeTimeout: time.Second, OnEvent: ea.observe})
	b := newTestClient(t, ns, &Options{NodeTimeout: time.Second, OnEvent: eb.observe})
	name := permitName(t)
	ctx := context.Background()
	p, err := a.AcquirePermit(ctx, name, 1, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if acq := ea.of(EventAcquire, 0); len(acq) != 1 || acq[0].Limit != 1 || acq[0].Token != p.Token() || acq[0].Fence != p.Fence() || acq[0].Err != nil {
		t.Errorf("events of an uncontended AcquirePermit: %+v; want one EventAcquire with Limit 1, the permit's token and fence", acq)
	}
	got := make(chan *Permit, 1)
	go func() {
		q, err := b.AcquirePermit(ctx, name, 1, 10*time.Second, nil)
		if err != nil {
			t.Errorf("waiting AcquirePermit: %v", err)
		}
		got <- q
	}()
	waitUntil(t, "b waits at the gate", func() bool {
		st, err := a.InspectPermits(ctx, name, 1)
		return err == nil && st.Waiting == 1
	})
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if q == nil {
		return
	}
	defer q.Release(ctx)
	if rel := ea.of(EventRelease, 0); len(rel) != 1 || rel[0].Token != p.Token() || rel[0].Name != name {
		t.Errorf("release events: %+v; want the permit's", rel)
	}
	acq, wait := eb.of(EventAcquire, 0), eb.of(EventWait, 0)
	if len(acq) != 1 || acq[0].Err != nil || acq[0].Token != q.Token() || acq[0].Limit != 1 || acq[0].Attempts < 2 {
		t.Errorf("the waiter's acquire events: %+v; want one, with its token, Limit 1 and its slot attempts (>= 2)", acq)
	}
	if len(wait) != 2 || !wait[0].Waiting || wait[1].Waiting || wait[1].Err != nil {
		t.Errorf("the waiter's wait events: %+v; want a start and a stop", wait)
	}
	for _, r := range []*events{&ea, &eb} {
		r.mu.Lock()
		for _, e := range r.all {
			if e.Kind != EventNode && e.Name != name {
				t.Errorf("event %v of %q; want only the semaphore's own name (the gate is not reported)", e.Kind, e.Name)
			}
		}
		r.mu.Unlock()
	}
}
