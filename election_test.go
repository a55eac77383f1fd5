package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// TestElectionTurns: three candidates campaign in a loop, each leading in
// turn as the previous one resigns. Never two believed leaders at once
// (the history checker, and a count of the leaders inside), terms strictly
// increase in the order of the leaderships, Leader reads each leader with
// its term, and Observe sees every term, in order.
func TestElectionTurns(t *testing.T) {
	e := newEnv(t, 5, memFenced, nil)
	cs := e.clients(3)
	const name = "elect-turns"
	const ttl = time.Second
	watch := observer(t, e.directClient(), name)
	reader := e.directClient()
	var (
		inside atomic.Int32
		mu     sync.Mutex // protects terms
		terms  []uint64   // in the order the leaderships began
		wg     sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ld, err := c.campaign(ctx, name, ttl)
				if err != nil {
					continue
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%s leads with %d believed leaders; want 1", c.name, n)
				}
				mu.Lock()
				terms = append(terms, ld.Term())
				mu.Unlock()
				c.increment(ld.Lock(), name)
				info, err := reader.Leader(context.Background(), name)
				if err != nil || !info.Held || info.Term != ld.Term() || info.Value != c.name {
					t.Errorf("Leader while %s leads at term %d = %+v, %v; want it", c.name, ld.Term(), info, err)
				}
				time.Sleep(150 * time.Millisecond) // long enough for Observe's read
				inside.Add(-1)
				if err := ld.Resign(context.Background()); err != nil {
					t.Errorf("Resign of %s = %v; want nil", c.name, err)
				}
			}
		}()
	}
	wg.Wait()
	if len(terms) < 6 {
		t.Errorf("%d leaderships in 4s; want at least 6", len(terms))
	}
	for i := 1; i < len(terms); i++ {
		if terms[i] <= terms[i-1] {
			t.Errorf("terms %v: term %d after %d; want strictly increasing", terms, terms[i], terms[i-1])
			break
		}
	}
	time.Sleep(300 * time.Millisecond)
	wantTermsSeen(t, "turns", watch(), terms...)
	rep := e.check()
	assertClean(t, "turns", rep)
	wantAcquisitions(t, "turns", rep, len(terms))
	e.finish(t.Name(), rep, nil)
}

// TestElectionLeader: Leader and Remaining of one leader, its record as
// Inspect reads it, then none after Resign; Done at the local deadline when
// the extends stop.
func TestElectionLeader(t *testing.T) {
	e := newEnv(t, 3, memFenced, nil)
	c1 := e.client("c1")
	lc := e.directClient()
	const name = "elect-leader"
	const ttl = 2 * time.Second
	ld := mustCampaign(t, c1, name, ttl, 5*time.Second, "healthy cluster")
	info, err := lc.Leader(within(t, 5*time.Second), name)
	if err != nil || !info.Held || info.Value != "c1" || info.Term != ld.Term() || info.Name != name {
		t.Fatalf("Leader = %+v, %v; want c1 at term %d", info, err, ld.Term())
	}
	if info.Remaining <= 0 || info.Remaining > ttl {
		t.Errorf("Leader().Remaining = %v; want in (0, %v]", info.Remaining, ttl)
	}
	// Inspect reads the term apart from the value, on every node (the
	// announce waited for a quorum; the last node comes a moment later).
	if !waitFor(5*time.Second, func() bool {
		st, err := lc.Inspect(within(t, 5*time.Second), name)
		if err != nil {
			return false
		}
		for _, ns := range st.Nodes {
			if ns.Metadata != "c1" || ns.Term != ld.Term() {
				return false
			}
		}
		return true
	}) {
		t.Errorf("Inspect's nodes never all showed Metadata \"c1\" and Term %d", ld.Term())
	}
	if err := ld.Resign(within(t, 5*time.Second)); err != nil {
		t.Fatalf("Resign = %v; want nil", err)
	}
	if !errors.Is(ld.Err(), redlock.ErrReleased) {
		t.Errorf("Err() after Resign = %v; want ErrReleased", ld.Err())
	}
	info, err = lc.Leader(within(t, 5*time.Second), name)
	if err != nil || info.Held {
		t.Errorf("Leader after Resign = %+v, %v; want Held false", info, err)
	}

	// Cut off from every node: the watchdog's extends fail, Done closes at
	// the deadline.
	ld = mustCampaign(t, c1, name, ttl, 5*time.Second, "healthy cluster")
	e.down(c1, 0, 1, 2)
	e.majorityGone(name)
	deadline := ld.ValidUntil()
	select {
	case <-ld.Done():
		if late := time.Since(deadline); late > chaosTolerance {
			t.Errorf("Done closed %v after the deadline; want by it", late)
		}
	case <-time.After(time.Until(deadline) + 5*time.Second):
		t.Fatalf("Done not closed 5s after the deadline")
	}
	if !errors.Is(ld.Err(), redlock.ErrLost) {
		t.Errorf("Err() after the deadline = %v; want ErrLost", ld.Err())
	}
	// A quorum unreachable: the leader is unknown.
	_, err = c1.lc.Leader(within(t, 5*time.Second), name)
	if !errors.Is(err, redlock.ErrLeaderUnknown) {
		t.Errorf("Leader with every node down = %v; want ErrLeaderUnknown", err)
	}
	rep := e.check()
	assertClean(t, "leader", rep)
	e.finish(t.Name(), rep, nil)
}

// TestObserveLostAnnounce (issue 28, item 2): c1 takes the election's lock
// through a path that announces nothing (a plain Acquire with its value as
// metadata: what the nodes keep of a Campaign whose announce was lost) at
// fence 1, while a grant of C that lands after the acquisition was decided
// leaves C's counter at 3 (C was 2 ahead: two attempts only C granted).
// Observe reports c1 without a term that is not its fence; and c2, who
// leads next at term 2 (C out of its reach), is reported with its term,
// though it is below C's counter.
func TestObserveLostAnnounce(t *testing.T) {
	e := newEnv(t, 3, memFenced, nil)
	c1, c2, c3 := e.client("c1"), e.client("c2"), e.client("c3")
	const name = "elect-lost-announce"
	const ttl = 5 * time.Second
	reader := e.directClient()
	watch := observer(t, reader, name)

	// C's counter 2 ahead: c3's attempts reach C alone. They carry
	// metadata, as c1's will, so that C has the script of that form when
	// c1's held request reaches it (a held EVALSHA of a script the node
	// lacks does nothing).
	e.down(c3, 0, 1)
	for range 2 {
		_, err := c3.lc.TryAcquire(within(t, 5*time.Second), name, ttl, &redlock.AcquireOptions{Metadata: "c3"})
		wantNotAcquired(t, "lost announce", "a try-lock that reaches C alone", err)
	}
	e.healNet(c3, "down", 0, 1)
	if got := e.fenceCounter(name, 2); got != 2 {
		t.Fatalf("C's counter after two attempts only C granted = %d; want 2", got)
	}

	// c1 wins on A and B at fence 1; its request to C lands later.
	e.mustFault(2, c1.name, "hold", func() error { return c1.net.HoldRequests(2, 2*e.opts.NodeTimeout) })
	l1 := mustAcquire(t, c1, name, ttl, 5*time.Second, &redlock.AcquireOptions{Metadata: "c1"}, "A, B reachable")
	if !waitFor(10*time.Second, func() bool { return c1.net.Held() == 0 }) {
		t.Fatalf("c1's request to C still held after 10s")
	}
	e.healNet(c1, "hold", 2)
	lockKey, _ := e.directKeys(name)
	if v := e.cl.Client(2).Get(within(t, 5*time.Second), lockKey).Val(); !strings.HasPrefix(v, l1.Token()+".") || l1.Fence() != 1 || e.fenceCounter(name, 2) != 3 {
		t.Fatalf("C holds %q at counter %d, c1's fence %d; want c1's key at counter 3, fence 1", v, e.fenceCounter(name, 2), l1.Fence())
	}
	time.Sleep(time.Second) // Observe reads c1, unannounced, for longer than its interval
	if err := c1.release(l1); err != nil {
		t.Fatalf("Release of c1 = %v", err)
	}

	// c2 leads at term 2, on A and B.
	e.down(c2, 2)
	ld2 := mustCampaign(t, c2, name, ttl, 5*time.Second, "A, B reachable")
	if ld2.Term() != 2 {
		t.Fatalf("c2's term = %d; want 2 (A's and B's counters were 1)", ld2.Term())
	}
	if info, err := reader.Leader(within(t, 5*time.Second), name); err != nil || !info.Held || info.Value != "c2" || info.Term != 2 {
		t.Errorf("Leader while c2 leads = %+v, %v; want c2 at term 2", info, err)
	}
	time.Sleep(time.Second) // Observe reads c2
	if err := ld2.Resign(within(t, 5*time.Second)); err != nil {
		t.Errorf("Resign of c2 = %v", err)
	}

	var c1Seen, c2Seen bool
	seen := watch()
	for _, info := range seen {
		switch {
		case !info.Held:
		case info.Value == "c1" && (info.Term == 0 || info.Term == l1.Fence()):
			c1Seen = true
		case info.Value == "c2" && info.Term == ld2.Term():
			c2Seen = true
		default:
			t.Errorf("Observe sent %+v; want c1 without a term or at %d, or c2 at %d", info, l1.Fence(), ld2.Term())
		}
	}
	if !c1Seen || !c2Seen {
		t.Errorf("Observe sent %+v; want c1 (no term, or %d), then c2 at term %d", seen, l1.Fence(), ld2.Term())
	}
	rep := e.check()
	assertClean(t, "lost announce", rep)
	e.finish(t.Name(), rep, nil)
}
