package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
)

// Chaos row 19: leader election under a minority of nodes paused, then a
// leader cut off from every node past its lease.

var _ guard.Holder = (*redlock.Leadership)(nil)

// campaign has s campaign for name (recorded as the acquisition of its
// lock, with the watchdog's extends and the loss) and keeps the lock for
// waitHolds.
func (s *sim) campaign(ctx context.Context, name string, ttl time.Duration) (*redlock.Leadership, error) {
	ld, err := s.lc.Campaign(ctx, name, ttl, s.name)
	if err != nil {
		return nil, err
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, ld.Lock())
	s.e.mu.Unlock()
	return ld, nil
}

// mustCampaign is campaign that stops the test when s does not lead
// within wait.
func mustCampaign(t testing.TB, s *sim, name string, ttl, wait time.Duration, why string) *redlock.Leadership {
	t.Helper()
	ld, err := s.campaign(within(t, wait), name, ttl)
	if err != nil {
		t.Fatalf("%s: Campaign(%q) by %s = %v; want leadership", why, name, s.name, err)
	}
	return ld
}

// observer collects what Observe sends for name through c until stop is
// called, which returns the entries.
func observer(t testing.TB, c *redlock.Client, name string) (stop func() []redlock.LeaderInfo) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Observe(ctx, name, &redlock.ObserveOptions{Interval: 200 * time.Millisecond})
	if err != nil {
		cancel()
		t.Fatalf("Observe(%q) = %v; want a channel", name, err)
	}
	var (
		mu   sync.Mutex // protects seen
		seen []redlock.LeaderInfo
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for info := range ch {
			mu.Lock()
			seen = append(seen, info)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []redlock.LeaderInfo {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// wantTermsSeen fails the test unless the observed entries hold every term
// of terms, in that order, and never a term lower than one before it (an
// entry without a term, 0, aside).
func wantTermsSeen(t testing.TB, row string, seen []redlock.LeaderInfo, terms ...uint64) {
	t.Helper()
	var got []uint64
	for _, info := range seen {
		if info.Held && info.Term != 0 {
			if len(got) > 0 && info.Term < got[len(got)-1] {
				t.Errorf("row %q: Observe sent term %d after %d; want terms never to go back", row, info.Term, got[len(got)-1])
			}
			got = append(got, info.Term)
		}
	}
	i := 0
	for _, term := range got {
		if i < len(terms) && term == terms[i] {
			i++
		}
	}
	if i < len(terms) {
		t.Errorf("row %q: Observe sent the terms %v; want %v among them, in order", row, got, terms)
	}
}

// 19. Election under faults. A leader keeps its leadership while 2 of 5
// nodes are paused (the watchdog extends on the other 3), a rival's
// campaign waits, and a new campaign after the resignation wins with a
// higher term. Then the leader is cut off from every node (its extends
// stop, as in a process pause): it learns of its loss by its deadline, a
// rival leads with a higher term, Observe sees both, and the old leader's
// fenced write is rejected.
func chaosElection(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	c1, c2, c3 := e.client("c1"), e.client("c2"), e.client("c3")
	const name = "r19"
	const ttl = time.Second
	watch := observer(t, c3.lc, name)

	// A minority paused: the leadership lasts, a rival waits.
	ld1 := mustCampaign(t, c1, name, ttl, 5*time.Second, "healthy cluster")
	c1.increment(ld1.Lock(), name)
	for _, i := range []int{3, 4} {
		e.mustFault(i, "", "pause", func() error { return e.cl.Pause(i) })
	}
	_, err := c2.campaign(within(t, 3*ttl), name, ttl)
	wantNotAcquired(t, row, "a campaign while c1 leads, D, E paused", err)
	if err := ld1.Err(); err != nil {
		t.Errorf("row %q: Err() of the leader after 3 TTLs with D, E paused = %v; want nil", row, err)
	}
	if info, err := c3.lc.Leader(within(t, 5*time.Second), name); err != nil || !info.Held || info.Term != ld1.Term() || info.Value != "c1" {
		t.Errorf("row %q: Leader with D, E paused = %+v, %v; want c1 at term %d", row, info, err, ld1.Term())
	}
	if !c1.increment(ld1.Lock(), name) {
		t.Errorf("row %q: write of the leader with D, E paused rejected; want accepted", row)
	}
	if err := ld1.Resign(within(t, 5*time.Second)); err != nil {
		t.Errorf("row %q: Resign with D, E paused = %v; want nil", row, err)
	}
	ld2 := mustCampaign(t, c2, name, ttl, 5*time.Second, "A, B, C up")
	if ld2.Term() <= ld1.Term() {
		t.Errorf("row %q: term after c1 resigned = %d; want > %d", row, ld2.Term(), ld1.Term())
	}
	c2.increment(ld2.Lock(), name)
	// Long enough for Observe, whose reads wait the node timeout for D, E.
	time.Sleep(3 * e.opts.NodeTimeout)
	ld2.Resign(within(t, 5*time.Second))
	for _, i := range []int{3, 4} {
		e.mustHeal(i, "", "pause", func() error { return e.cl.Unpause(i) })
	}

	// The leader cut off past its lease: a new leader, the old one's
	// write rejected.
	ld3 := mustCampaign(t, c1, name, ttl, 5*time.Second, "healthy cluster")
	v, err := c1.read(ld3.Lock(), name)
	if err != nil {
		t.Fatalf("row %q: fenced read of the leader: %v", row, err)
	}
	e.down(c1, 0, 1, 2, 3, 4)
	e.majorityGone(name)
	deadline := ld3.ValidUntil() // no extend moves it any more
	select {
	case <-ld3.Done():
		if late := time.Since(deadline); late > chaosTolerance {
			t.Errorf("row %q: Done of the cut-off leader closed %v after its deadline; want by the deadline", row, late)
		}
		if !errors.Is(ld3.Err(), redlock.ErrLost) {
			t.Errorf("row %q: Err() of the cut-off leader = %v; want ErrLost", row, ld3.Err())
		}
	case <-time.After(time.Until(deadline) + 5*time.Second):
		t.Fatalf("row %q: Done of the cut-off leader not closed 5s after its deadline", row)
	}
	ld4 := mustCampaign(t, c2, name, ttl, 5*time.Second, "c1 cut off")
	if ld4.Term() <= ld3.Term() {
		t.Errorf("row %q: term after c1 was cut off = %d; want > %d", row, ld4.Term(), ld3.Term())
	}
	if !c2.increment(ld4.Lock(), name) {
		t.Errorf("row %q: write of the new leader rejected; want accepted", row)
	}
	e.healNet(c1, "down", 0, 1, 2, 3, 4)
	if c1.write(ld3.Lock(), name, v+1) {
		t.Errorf("row %q: write of the old leader (term %d) accepted after term %d; want rejected", row, ld3.Term(), ld4.Term())
	}
	time.Sleep(500 * time.Millisecond) // Observe reads the leader at least once more
	ld4.Resign(within(t, 5*time.Second))
	wantTermsSeen(t, row, watch(), ld1.Term(), ld2.Term(), ld3.Term(), ld4.Term())

	rep := e.check()
	assertClean(t, row, rep)
	assertFencedSafe(t, row, rep)
	if rep.RejectedWrites != 1 {
		t.Errorf("row %q: rejected writes = %d; want 1 (the old leader's)", row, rep.RejectedWrites)
	}
	e.finish(row, rep, nil)
}
