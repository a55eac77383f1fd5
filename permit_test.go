package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// permitName returns a semaphore name of its own for test t.
func permitName(t testing.TB) string {
	return fmt.Sprintf("sem-%s-%d", t.Name(), time.Now().UnixNano())
}

// TestSemaphoreNeverMoreThanLimit: N+k contenders through separate Clients
// take permits of one semaphore in turn; never more than limit hold one at
// once, each permit's slot is its own, every contender gets its turns.
func TestSemaphoreNeverMoreThanLimit(t *testing.T) {
	const limit, contenders, rounds = 2, 5, 4
	ns := nodes(t, 5)
	name := permitName(t)
	var holding, most atomic.Int32
	var slots [limit]atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, contenders*rounds)
	for i := range contenders {
		c := newTestClient(t, ns, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				p, err := c.AcquirePermit(ctx, name, limit, 2*time.Second, nil)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("contender %d: AcquirePermit: %w", i, err)
					return
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if s := slots[p.Slot()].Add(1); s != 1 {
					errs <- fmt.Errorf("contender %d: slot %d held by %d permits at once", i, p.Slot(), s)
				}
				if p.Fence()%MaxPermits != uint64(p.Slot()) {
					errs <- fmt.Errorf("contender %d: fence %d does not name slot %d (fence mod MaxPermits)", i, p.Fence(), p.Slot())
				}
				time.Sleep(20 * time.Millisecond)
				slots[p.Slot()].Add(-1)
				holding.Add(-1)
				if err := p.Release(context.Background()); err != nil {
					errs <- fmt.Errorf("contender %d: Release: %w", i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := most.Load(); m > limit || m < limit {
		t.Errorf("most permits held at once = %d; want exactly the limit %d (never more, and reached)", m, limit)
	}
}

// TestSemaphoreFences: permits taken one after another get increasing
// fences; permits held together never share one.
func TestSemaphoreFences(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := permitName(t)
	ctx := context.Background()
	var prev uint64
	var held []*Permit
	for i := range 3 {
		p, err := c.AcquirePermit(ctx, name, 3, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("AcquirePermit %d: %v", i, err)
		}
		if p.Fence() <= prev {
			t.Errorf("permit %d: fence %d not above the previous permit's %d", i, p.Fence(), prev)
		}
		prev = p.Fence()
		held = append(held, p)
	}
	seen := map[int]bool{}
	for _, p := range held {
		if seen[p.Slot()] {
			t.Errorf("slot %d held by two permits", p.Slot())
		}
		seen[p.Slot()] = true
		if err := p.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
	}
	p, err := c.AcquirePermit(ctx, name, 3, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquirePermit after the releases: %v", err)
	}
	defer p.Release(ctx)
	if p.Fence() <= prev {
		t.Errorf("permit after the releases: fence %d not above %d", p.Fence(), prev)
	}
}

// TestSemaphoreFenceAcrossLimits: a permit taken after another's
// acquisition completed has a larger fence whatever the two limits were,
// each permit taken once the one before it expired (its limit record with
// it). The fence was counter × limit + slot: limit 4 then limit 1 went
// from 4+slot to 2.
func TestSemaphoreFenceAcrossLimits(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := permitName(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	var prev *Permit
	for _, limit := range []int{4, 1, 3, MaxPermits, 2, 1} {
		p, err := c.AcquirePermit(ctx, name, limit, ttl, nil)
		if err != nil {
			t.Fatalf("AcquirePermit(limit %d) once the previous permit expired: %v", limit, err)
		}
		if prev != nil && p.Fence() <= prev.Fence() {
			t.Errorf("limit %d, slot %d: fence %d not above the fence %d of the permit before it (limit %d, slot %d)",
				limit, p.Slot(), p.Fence(), prev.Fence(), prev.Limit(), prev.Slot())
		}
		if p.Fence()%MaxPermits != uint64(p.Slot()) {
			t.Errorf("limit %d: fence %d does not name slot %d (fence mod MaxPermits)", limit, p.Fence(), p.Slot())
		}
		prev = p
		time.Sleep(ttl + 200*time.Millisecond) // the permit and its limit record expire
	}
}

// TestSemaphoreAllHeldIsQuorumError: a call that finds every permit held
// fails with a *QuorumError, like every other failed acquire, matching
// ErrNotAcquired and ErrHeld (and ctx's error when it ended the wait). It
// was a joined error with no QuorumError in it.
func TestSemaphoreAllHeldIsQuorumError(t *testing.T) {
	ns := nodes(t, 3)
	a, b := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	name := permitName(t)
	ctx := context.Background()
	for range 2 {
		p, err := a.AcquirePermit(ctx, name, 2, 20*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(ctx)
	}
	_, err := b.TryAcquirePermit(ctx, name, 2, time.Second, nil)
	var qe *QuorumError
	if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) || !errors.Is(err, ErrHeld) {
		t.Errorf("TryAcquirePermit with every permit held = %v; want a *QuorumError matching ErrNotAcquired and ErrHeld", err)
	} else if qe.Held == 0 || qe.Name != name {
		t.Errorf("TryAcquirePermit with every permit held: QuorumError %+v; want the name and the nodes that hold the permits", *qe)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = b.AcquirePermit(wctx, name, 2, time.Second, nil)
	if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) || !errors.Is(err, ErrHeld) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AcquirePermit whose ctx ended with every permit held = %v; want a *QuorumError matching ErrNotAcquired, ErrHeld and ctx's error", err)
	}
}

// TestSemaphoreFull: with every permit held, a try fails at once with
// ErrHeld, and a waiting call gets the permit the holder releases.
func TestSemaphoreFull(t *testing.T) {
	ns := nodes(t, 3)
	a, b := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	name := permitName(t)
	ctx := context.Background()
	var held []*Permit
	for range 2 {
		p, err := a.AcquirePermit(ctx, name, 2, 10*time.Second, nil)
		if err != nil {
			t.Fatalf("AcquirePermit: %v", err)
		}
		held = append(held, p)
	}
	_, err := b.TryAcquirePermit(ctx, name, 2, 10*time.Second, nil)
	if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquirePermit with both permits held = %v; want ErrNotAcquired and ErrHeld", err)
	}
	got := make(chan *Permit, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p, err := b.AcquirePermit(wctx, name, 2, 10*time.Second, nil)
		if err != nil {
			t.Errorf("waiting AcquirePermit: %v", err)
		}
		got <- p
	}()
	time.Sleep(300 * time.Millisecond) // b waits
	freed := held[1].Slot()
	start := time.Now()
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	p := <-got
	if p == nil {
		return
	}
	t.Logf("handoff after release: %v", time.Since(start))
	if p.Slot() != freed {
		t.Errorf("waiter got slot %d; want the freed slot %d", p.Slot(), freed)
	}
	_ = p.Release(ctx)
	_ = held[0].Release(ctx)
}

// TestSemaphoreBadInput: the limit and the options a permit cannot take
// are refused before anything is sent.
func TestSemaphoreBadInput(t *testing.T) {
	// Nodes nobody listens on: nothing may be sent to them.
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rc.Close() })
	c := newTestClient(t, []redis.UniversalClient{rc}, nil)
	ctx := context.Background()
	for _, limit := range []int{0, -1, MaxPermits + 1} {
		if _, err := c.AcquirePermit(ctx, "s", limit, time.Second, nil); err == nil {
			t.Errorf("limit %d: AcquirePermit = nil error; want the limit refused", limit)
		}
	}
	for _, o := range []*AcquireOptions{{Reentrant: true}, {Barging: true}, {Retry: DefaultRetry()}} {
		var err error
		if o.Retry != nil {
			_, err = c.TryAcquirePermit(ctx, "s", 2, time.Second, o)
		} else {
			_, err = c.AcquirePermit(ctx, "s", 2, time.Second, o)
		}
		if err == nil || errors.Is(err, ErrNotAcquired) {
			t.Errorf("options %+v: error = %v; want the option refused", *o, err)
		}
	}
}

// TestSemaphoreLeavesOnlyTheCounter: once every permit is released (one
// of them after a waiter queued at the gate) and their TTL has passed,
// the nodes keep the semaphore's fence counter and nothing else.
func TestSemaphoreLeavesOnlyTheCounter(t *testing.T) {
	ns := nodes(t, 3)
	a, b := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	name := permitName(t)
	ctx := context.Background()
	const ttl = 700 * time.Millisecond
	p, err := a.AcquirePermit(ctx, name, 1, ttl, &AcquireOptions{Metadata: "job 1"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		q, err := b.AcquirePermit(ctx, name, 1, ttl, nil)
		if err == nil {
			err = q.Release(ctx)
		}
		got <- err
	}()
	waitUntil(t, "the second call waits at the gate", func() bool {
		st, err := a.InspectPermits(ctx, name, 1)
		return err == nil && st.Waiting == 1
	})
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	time.Sleep(ttl + queueTTL + 200*time.Millisecond)
	sk := semKeysOf(a.opts.KeyPrefix, name)
	for i, n := range ns {
		keys, err := n.Keys(ctx, sk.base+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0] != sk.fence {
			t.Errorf("node %d: keys left %v; want only the fence counter %s", i, keys, sk.fence)
		}
	}
}

// What an uncontended permit's take and release call on a node, on a
// semaphore nobody else uses: permit.lua's limit record, gate and counter
// checks, acquire.lua's common case, the record written for the slot's TTL
// just given (no PTTL), and a release that announces nothing (no gate
// held: TestSlotReleaseAnnouncedWhileGateHeld).
func TestPermitCycleCommands(t *testing.T) {
	ns := nodes(t, 1)
	c := newTestClient(t, ns, nil)
	if err := ns[0].ConfigResetStat(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	p, err := c.TryAcquirePermit(t.Context(), "permit-commands", 4, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"get": 3, "exists": 2, "set": 2, "incr": 1, "del": 1}
	if got := commandCalls(t, ns[0]); !sameCalls(got, want) {
		t.Errorf("commands of an uncontended permit's take and release = %v; want %v", got, want)
	}
}
