package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// events records what a Client reports, by kind.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (r *events) observe(_ context.Context, e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, e)
}

// mark returns how many events were reported so far.
func (r *events) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// of returns the events of kind k reported after mark.
func (r *events) of(k EventKind, mark int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.all[mark:] {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// TestTryAcquire: on real Redis, TryAcquire takes a free lock, and on a
// held one fails at once with the error Acquire with NoRetry gives: one
// attempt, no wait (as the observer reports it, not a timing).
func TestTryAcquire(t *testing.T) {
	ns := nodes(t, 3)
	holder := newTestClient(t, ns, nil)
	var rec events
	c := newTestClient(t, ns, &Options{NodeTimeout: time.Second, OnEvent: rec.observe})
	name := "try-acquire"

	l, err := c.TryAcquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("TryAcquire of a free lock = %v; want it", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	held, err := holder.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	m := rec.mark()
	_, err = c.TryAcquire(t.Context(), name, 10*time.Second, &AcquireOptions{AutoExtend: true})
	if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, ErrHeld) {
		t.Errorf("TryAcquire of a held lock = %v; want ErrNotAcquired and ErrHeld", err)
	}
	_, want := c.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Retry: NoRetry()})
	var qe, wqe *QuorumError
	// Both are decided once a majority is impossible: two of three nodes
	// held, the third answered in time or was not awaited.
	if !errors.As(err, &qe) || !errors.As(want, &wqe) || qe.Op != wqe.Op || qe.Quorum != wqe.Quorum ||
		qe.Attempts != wqe.Attempts || qe.Held < 2 || wqe.Held < 2 || qe.Agreed != 0 || wqe.Agreed != 0 {
		t.Errorf("TryAcquire's error %v; want the same as Acquire with NoRetry: %v", err, want)
	}
	acq := rec.of(EventAcquire, m)
	if len(acq) != 2 || acq[0].Attempts != 1 || acq[0].Err == nil {
		t.Errorf("TryAcquire reported %+v; want one failed acquire of 1 attempt", acq)
	}
	if w := rec.of(EventWait, m); len(w) != 0 {
		t.Errorf("TryAcquire reported waits %+v; want none", w)
	}

	// A Retry that would retry contradicts TryAcquire: refused before any
	// attempt. One that allows no retry is TryAcquire's own.
	m = rec.mark()
	_, err = c.TryAcquire(t.Context(), name, 10*time.Second, &AcquireOptions{Retry: DefaultRetry()})
	if err == nil || errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), "leave Retry nil") {
		t.Errorf("TryAcquire with a retrying policy = %v; want an error saying to leave Retry nil", err)
	}
	if n := len(rec.of(EventAcquire, m)); n != 0 {
		t.Errorf("TryAcquire with a retrying policy made %d calls; want none", n)
	}
	_, err = c.TryAcquire(t.Context(), name, 10*time.Second, &AcquireOptions{Retry: LimitRetry(DefaultRetry(), 1)})
	if !errors.Is(err, ErrHeld) {
		t.Errorf("TryAcquire with a one-attempt policy = %v; want ErrHeld", err)
	}
}

// TestTryCampaign: one try to lead: it leads a free election, and fails at
// once, without waiting for its context, while another leads.
func TestTryCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		ld, err := c.TryCampaign(t.Context(), "try-elect", time.Minute, "me:1")
		if err != nil {
			t.Fatalf("TryCampaign on a free election = %v; want leadership", err)
		}
		defer ld.Resign(context.Background())
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		start := time.Now()
		if _, err := c.TryCampaign(ctx, "try-elect", time.Minute, "me:2"); !errors.Is(err, ErrNotAcquired) {
			t.Errorf("TryCampaign while another leads = %v; want ErrNotAcquired", err)
		}
		if waited := time.Since(start); waited > time.Second {
			t.Errorf("TryCampaign while another leads returned after %v; want at once", waited)
		}
	})
}
