package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos row 20: a semaphore (limit 2) under minority faults. Its control
// (control e, a semaphore that counts per node) is in
// chaos_semaphore_naive_test.go.

var _ guard.Holder = (*redlock.Permit)(nil)

// acquirePermit has s take a permit of name (recorded as a hold of name
// with the semaphore's limit, with its extends and its loss).
func (s *sim) acquirePermit(ctx context.Context, name string, limit int, ttl time.Duration, o *redlock.AcquireOptions) (*redlock.Permit, error) {
	return s.lc.AcquirePermit(ctx, name, limit, ttl, o)
}

// releasePermit releases p (recorded).
func (s *sim) releasePermit(p *redlock.Permit) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Release(ctx)
}

// slotResource is the downstream resource of a semaphore's slot: with up
// to limit holders at once, each slot is guarded on its own.
func slotResource(name string, slot int) string { return fmt.Sprintf("%s:slot%d", name, slot) }

// incrementSlot adds one to the counter of p's slot: a fenced read, then
// a fenced write, both recorded. It reports whether the write was accepted.
func (s *sim) incrementSlot(p *redlock.Permit) bool {
	return s.incrementAs(p, slotResource(p.Name(), p.Slot()))
}

// believed counts the permits the workers of a row hold at once, as they
// see it (from AcquirePermit's return to Release), and the most seen.
type believed struct{ now, most atomic.Int32 }

func (b *believed) add(d int32) {
	n := b.now.Add(d)
	for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
	}
}

// permitWork runs the semaphore's critical section until ctx ends: take a
// permit of name (waiting at most wait), increment its slot's counter over
// up to hold, release.
func (s *sim) permitWork(ctx context.Context, b *believed, name string, limit int, ttl, wait, hold time.Duration) {
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, wait)
		p, err := s.acquirePermit(actx, name, limit, ttl, nil)
		cancel()
		if err != nil {
			continue
		}
		b.add(1)
		time.Sleep(rand.N(hold))
		s.incrementSlot(p)
		b.add(-1)
		s.releasePermit(p)
	}
}

// counterexampleCuts cuts the paths of three clients as DESIGN §6's
// counterexample needs (c1 reaches A, B, C; c2 C, D, E; c3 A, B, D): each
// reaches a majority, and any two share a node. It returns what heals them.
func counterexampleCuts(e *chaosEnv, cs []*sim) (heal func()) {
	e.t.Helper()
	cuts := [][]int{{3, 4}, {0, 1}, {2, 4}}
	for i, c := range cs[:3] {
		e.down(c, cuts[i]...)
	}
	return func() {
		for i, c := range cs[:3] {
			e.healNet(c, "down", cuts[i]...)
		}
	}
}

// semaphoreFaults injects minority faults while the workers run: D and E
// killed and restarted, B and C paused for a TTL, then each client's paths
// flapping, never more than two of them down at once.
func semaphoreFaults(e *chaosEnv, cs []*sim, ttl time.Duration) {
	time.Sleep(500 * time.Millisecond)
	for _, i := range []int{3, 4} {
		e.fault(i, "", "kill", func() error { return e.cl.Kill(i) })
	}
	time.Sleep(1500 * time.Millisecond)
	for _, i := range []int{3, 4} {
		e.heal(i, "", "restart", func() error { return e.cl.Restart(i) })
	}
	time.Sleep(500 * time.Millisecond)
	for _, i := range []int{1, 2} {
		e.fault(i, "", "pause", func() error { return e.cl.Pause(i) })
	}
	time.Sleep(ttl)
	for _, i := range []int{1, 2} {
		e.heal(i, "", "pause", func() error { return e.cl.Unpause(i) })
	}
	down := make([]map[int]bool, len(cs))
	for k := range down {
		down[k] = map[int]bool{}
	}
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		time.Sleep(30*time.Millisecond + rand.N(70*time.Millisecond))
		k, i := rand.N(len(cs)), rand.N(5)
		c := cs[k]
		switch {
		case down[k][i]:
			delete(down[k], i)
			e.heal(i, c.name, "down", func() error { return c.net.Heal(i) })
		case len(down[k]) < 2:
			down[k][i] = true
			e.fault(i, c.name, "down", func() error { return c.net.Down(i) })
		}
	}
	for k, c := range cs {
		for i := range down[k] {
			e.heal(i, c.name, "down", func() error { return c.net.Heal(i) })
		}
	}
}

// 20. A semaphore under minority faults. First the cuts of DESIGN §6's
// counterexample: c1 and c2 take the two permits, each on its own
// majority, and c3, which reaches a majority too, is refused (a per-node
// count would grant it: control e). Then five clients contend for the two
// permits, each incrementing its slot's fenced counter, while D and E are
// killed and restarted, B and C paused, and every client's paths flap.
// Never more than two permits believed at once, and two reached; fences in
// order; nothing stale accepted, no increment lost, no late loss.
func chaosSemaphore(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name, limit = "r20", 2
	const ttl = time.Second
	cs := e.clients(5)
	var b believed

	// Held for longer than the phase takes, through slow first dials.
	const heldTTL = 10 * time.Second
	heal := counterexampleCuts(e, cs)
	var held []*redlock.Permit
	for _, c := range cs[:2] {
		p, err := c.acquirePermit(within(t, 5*time.Second), name, limit, heldTTL, nil)
		if err != nil {
			t.Fatalf("row %q: AcquirePermit by %s through a majority of its own = %v; want a permit", row, c.name, err)
		}
		b.add(1)
		held = append(held, p)
	}
	_, err := cs[2].acquirePermit(within(t, 5*time.Second), name, limit, heldTTL, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	if !errors.Is(err, redlock.ErrHeld) {
		t.Errorf("row %q: a third permit by c3 (A, B, D) while c1 and c2 hold two = %v; want ErrHeld", row, err)
	}
	for i, p := range held {
		if !cs[i].incrementSlot(p) {
			t.Errorf("row %q: write of %s under its permit (slot %d) rejected; want accepted", row, cs[i].name, p.Slot())
		}
		b.add(-1)
		cs[i].releasePermit(p)
	}
	heal()

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() { c.permitWork(ctx, &b, name, limit, ttl, 1500*time.Millisecond, 50*time.Millisecond) })
	}
	semaphoreFaults(e, cs, ttl)
	wg.Wait()
	cancel()

	p, err := cs[0].acquirePermit(within(t, 5*time.Second), name, limit, ttl, nil)
	if err != nil {
		t.Fatalf("row %q: AcquirePermit after healing = %v; want a permit (liveness)", row, err)
	}
	if !cs[0].incrementSlot(p) {
		t.Errorf("row %q: write after healing rejected; want accepted", row)
	}
	cs[0].releasePermit(p)

	rep := e.check()
	if m := b.most.Load(); m != limit {
		t.Errorf("row %q: most permits held at once by the clients' count = %d; want the limit %d", row, m, limit)
	}
	assertClean(t, row, rep)
	assertFencedSafe(t, row, rep)
	wantPermitsTaken(t, row, e.rec.Events(), name, limit, len(cs))
	e.finish(row, rep, nil)
}

// wantPermitsTaken fails the test unless the history holds at least n
// permits of name, each recorded with the semaphore's limit.
func wantPermitsTaken(t testing.TB, row string, events []history.Event, name string, limit, n int) {
	t.Helper()
	got := 0
	for _, ev := range events {
		if ev.Kind == history.Acquire && ev.Lock == name {
			if ev.Limit != limit {
				t.Errorf("row %q: a permit of %q recorded with Limit %d; want %d", row, name, ev.Limit, limit)
			}
			got++
		}
	}
	if got < n {
		t.Errorf("row %q: permits taken = %d; want >= %d", row, got, n)
	}
}
