package redlock

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The semaphore's waiting order (DESIGN §5, §6): waiters get freed permits
// in the order they came, and a call that comes later does not take a
// freed permit before a waiter.

// permitWon is what a waiting AcquirePermit returned.
type permitWon struct {
	who int
	p   *Permit
	err error
}

// waitPermit starts an AcquirePermit of name through c in a goroutine that
// sends its outcome on out; the caller joins it with wg.
func waitPermit(ctx context.Context, wg *sync.WaitGroup, c *Client, who int, name string, limit int, out chan<- permitWon) {
	wg.Go(func() {
		p, err := c.AcquirePermit(ctx, name, limit, 20*time.Second, nil)
		out <- permitWon{who, p, err}
	})
}

// waitWaiting waits up to 5s until n calls wait for a permit of name, as
// InspectPermits counts them (the gate's holder and its queue), and stops
// the test otherwise.
func waitWaiting(t *testing.T, c *Client, name string, limit, n int) {
	t.Helper()
	var last int
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st, err := c.InspectPermits(context.Background(), name, limit)
		if err == nil && st.Waiting == n {
			return
		}
		if err == nil {
			last = st.Waiting
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("InspectPermits(%q).Waiting = %d after 5s; want %d", name, last, n)
}

// nextWon returns the next permit won, or stops the test after 10s.
func nextWon(t *testing.T, got <-chan permitWon, why string) permitWon {
	t.Helper()
	select {
	case g := <-got:
		if g.err != nil {
			t.Fatalf("%s: waiter %d: AcquirePermit = %v; want a permit", why, g.who, g.err)
		}
		return g
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no waiter got a permit within 10s", why)
		return permitWon{}
	}
}

// TestSemaphoreWaitersInArrivalOrder: with every permit held, three waiters
// (each its own Client) arrive in a known order; the permits are then
// released one by one, and the waiters get them in their arrival order.
func TestSemaphoreWaitersInArrivalOrder(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			ns := nodes(t, 5)
			name := permitName(t)
			holder := newTestClient(t, ns, nil)
			var held []*Permit // to release, oldest first
			for range limit {
				p, err := holder.AcquirePermit(context.Background(), name, limit, 20*time.Second, nil)
				if err != nil {
					t.Fatalf("AcquirePermit: %v", err)
				}
				held = append(held, p)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := make(chan permitWon, 3)
			for w := range 3 {
				waitPermit(ctx, &wg, newTestClient(t, ns, nil), w, name, limit, got)
				waitWaiting(t, holder, name, limit, w+1)
				time.Sleep(100 * time.Millisecond)
			}
			var order []int
			for i := range 3 {
				p := held[0]
				held = held[1:]
				if err := p.Release(context.Background()); err != nil {
					t.Fatalf("Release %d: %v", i, err)
				}
				g := nextWon(t, got, fmt.Sprintf("after release %d", i))
				order = append(order, g.who)
				if g.p.Slot() != p.Slot() {
					t.Errorf("waiter %d got slot %d; want the slot %d just freed", g.who, g.p.Slot(), p.Slot())
				}
				held = append(held, g.p)
			}
			for _, p := range held {
				p.Release(context.Background())
			}
			if fmt.Sprint(order) != "[0 1 2]" {
				t.Errorf("waiters got the permits in the order %v; want their arrival order [0 1 2]", order)
			}
		})
	}
}

// TestSemaphoreNewcomerWaitsBehindWaiter: a waiter waits for the one permit
// of a semaphore; then a newcomer tries again and again, and another
// newcomer waits. When the permit is freed, the waiter gets it: no try
// succeeds meanwhile, and the waiting newcomer gets a permit only after the
// waiter released its own.
func TestSemaphoreNewcomerWaitsBehindWaiter(t *testing.T) {
	ns := nodes(t, 5)
	name := permitName(t)
	holder, first, late, trier := newTestClient(t, ns, nil), newTestClient(t, ns, nil),
		newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	ctx := context.Background()
	p, err := holder.AcquirePermit(ctx, name, 1, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := make(chan permitWon, 2)
	waitPermit(wctx, &wg, first, 0, name, 1, got)
	waitWaiting(t, holder, name, 1, 1)

	// The newcomer that tries: from before the release until the waiter
	// has the permit, every try must fail.
	stop := make(chan struct{})
	var barged []*Permit // written by the trier's goroutine until stop, read after the join
	var tries int
	trierDone := make(chan struct{})
	var once sync.Once
	stopTrier := func() { once.Do(func() { close(stop); <-trierDone }) }
	defer stopTrier()
	go func() {
		defer close(trierDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			tries++
			if q, err := trier.TryAcquirePermit(ctx, name, 1, time.Second, nil); err == nil {
				barged = append(barged, q)
				q.Release(ctx)
			}
		}
	}()
	waitPermit(wctx, &wg, late, 1, name, 1, got)
	waitWaiting(t, holder, name, 1, 2)
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := nextWon(t, got, "after the release")
	stopTrier()
	if g.who != 0 {
		t.Errorf("the freed permit went to waiter %d; want the first waiter, 0 (waiting longest)", g.who)
	}
	if len(barged) > 0 {
		t.Errorf("%d of %d tries by a newcomer got the permit while a waiter waited for it; want none", len(barged), tries)
	}
	select {
	case h := <-got:
		t.Errorf("waiter %d got a permit (%v) while waiter %d holds the only one", h.who, h.err, g.who)
		if h.p != nil {
			h.p.Release(ctx)
		}
	case <-time.After(300 * time.Millisecond):
	}
	if err := g.p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h := nextWon(t, got, "after the first waiter's release")
	if h.who != 1 {
		t.Errorf("the permit went to waiter %d; want the late waiter, 1", h.who)
	}
	h.p.Release(ctx)
}
