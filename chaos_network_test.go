package redlock_test

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// Chaos rows of faults in a client's links to the nodes: latency,
// blackholes, flapping.

// 7. Latency longer than the TTL on 3 of a client's nodes: its acquire
// fails, the keys it got on D and E are deleted at once, the keys the slow
// nodes set without telling it in time are gone after the TTL, and another
// client gets the lock.
func chaosLatency(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r07"
	const ttl = 500 * time.Millisecond
	const lat = 2 * ttl
	c1, c2 := e.client("c1"), e.client("c2")
	for _, i := range []int{0, 1, 2} {
		e.mustFault(i, c1.name, "latency "+lat.String(), func() error { return c1.net.Latency(i, lat) })
	}
	_, err := c1.acquire(within(t, 10*time.Second), name, ttl,
		&redlock.AcquireOptions{Retry: redlock.LimitRetry(redlock.ExponentialBackoff(10*time.Millisecond, 50*time.Millisecond), 3)})
	wantNotAcquired(t, row, "replies of A, B, C later than the TTL", err)
	e.assertNoKey(row+" (partial keys released)", name, 0, 1, 2)
	time.Sleep(2*lat + ttl)
	e.assertNoKey(row+" (after the TTL)", name)
	e.healNet(c1, "latency "+lat.String(), 0, 1, 2)
	l := mustAcquire(t, c2, name, ttl, 5*time.Second, nil, "after c1's failed attempts (liveness)")
	if !c2.increment(l, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l)
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 1)
	e.finish(row, rep, nil)
}

// 8. Blackhole 2 of a client's nodes: it acquires with the other three
// without waiting for the two, extends, and releases at the quorum without
// waiting for them either; the two are reported through its logger.
func chaosBlackholeMinority(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r08"
	const ttl = 2 * time.Second
	var logs syncBuffer
	c1opts := e.opts
	c1opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c1, c2 := e.clientWith("c1", &c1opts), e.client("c2")
	e.blackhole(c1, 3, 4)
	l, err := c1.acquire(within(t, 3*time.Second), name, ttl, nil)
	if err != nil {
		t.Fatalf("row %q: Acquire with D, E blackholed = %v; want the lock from A, B, C within 3s", row, err)
	}
	if !c1.increment(l, name) {
		t.Errorf("row %q: write of c1 rejected; want accepted", row)
	}
	_, err = c2.acquire(within(t, 5*time.Second), name, ttl, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	wantNotAcquired(t, row, "while c1 holds A, B, C", err)
	if err := c1.extend(within(t, 5*time.Second), l, ttl); err != nil {
		t.Errorf("row %q: Extend with D, E blackholed = %v; want nil", row, err)
	}
	err = c1.release(l)
	if got := nodesIn(err); len(got) != 0 && (!got[3] || !got[4] || len(got) != 2) {
		t.Errorf("row %q: Release error names nodes %v (%v); want none (it returns at quorum) or exactly 3 and 4", row, sortedNodes(got), err)
	}
	// Closing the client joins the stragglers, which report D and E.
	c1.lc.Close()
	if out := logs.String(); !strings.Contains(out, "node=3") || !strings.Contains(out, "node=4") {
		t.Errorf("row %q: c1's log after Close:\n%s\nwant the blackholed nodes 3 and 4 reported as stragglers", row, out)
	}
	e.healNet(c1, "blackhole", 3, 4)
	l = mustAcquire(t, c2, name, ttl, 5*time.Second, nil, "after c1's release")
	if !c2.increment(l, name) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l)
	rep := e.check()
	assertClean(t, row, rep)
	e.finish(row, rep, nil)
}

// syncBuffer is a bytes.Buffer safe for a logger's goroutines and a test.
type syncBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func sortedNodes(m map[int]bool) []int {
	var s []int
	for i := range m {
		s = append(s, i)
	}
	sort.Ints(s)
	return s
}

// 11. Blackhole during release and during extend. A release whose deletes
// are lost ends the hold locally and names the nodes; the keys expire and
// the next client gets the lock. An extend that cannot reach a majority
// ends the hold at once (Lost), before its deadline.
func chaosBlackholeReleaseExtend(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const ttl = time.Second
	c1, c2 := e.client("c1"), e.client("c2")

	const rel = "r11-release"
	l := mustAcquire(t, c1, rel, ttl, 5*time.Second, nil, "healthy cluster")
	c1.increment(l, rel)
	e.blackhole(c1, 0, 1, 2)
	err := c1.release(l)
	if got := nodesIn(err); !got[0] || !got[1] || !got[2] || len(got) != 3 {
		t.Errorf("row %q: Release error names nodes %v (%v); want exactly 0, 1, 2", row, sortedNodes(got), err)
	}
	l2 := mustAcquire(t, c2, rel, ttl, 10*time.Second, nil, "after the lost release's keys expired (liveness)")
	if !c2.increment(l2, rel) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	e.healNet(c1, "blackhole", 0, 1, 2)

	const ext = "r11-extend"
	l = mustAcquire(t, c1, ext, 2*ttl, 5*time.Second, nil, "healed")
	c1.increment(l, ext)
	e.blackhole(c1, 3, 4)
	if err := c1.extend(within(t, 5*time.Second), l, 2*ttl); err != nil {
		t.Errorf("row %q: Extend with D, E blackholed = %v; want nil", row, err)
	}
	e.blackhole(c1, 2)
	e.majorityGone(ext)
	err = c1.extend(within(t, 5*time.Second), l, 2*ttl)
	if !errors.Is(err, redlock.ErrLost) {
		t.Errorf("row %q: Extend with C, D, E blackholed = %v; want an error matching ErrLost", row, err)
	}
	wantLost(t, row, l, time.Second)
	l2 = mustAcquire(t, c2, ext, ttl, 10*time.Second, nil, "after c1 lost it (liveness)")
	if !c2.increment(l2, ext) {
		t.Errorf("row %q: write of c2 rejected; want accepted", row)
	}
	c2.release(l2)
	e.healNet(c1, "blackhole", 2, 3, 4)
	c1.release(l)

	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 4)
	e.finish(row, rep, nil)
}

// 13. Paths flapping (down, up) during retry loops: no overlap, no key left
// after the TTL, and a client gets the lock once the paths are healed.
func chaosFlapping(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r13"
	const ttl = time.Second
	cs := e.clients(4)
	stop := make(chan struct{})
	flapped := make(chan struct{})
	go func() {
		defer close(flapped)
		downs := map[[2]int]bool{}
		for {
			select {
			case <-stop:
				for k := range downs {
					c, i := cs[k[0]], k[1]
					e.heal(i, c.name, "down", func() error { return c.net.Heal(i) })
				}
				return
			case <-time.After(30*time.Millisecond + rand.N(70*time.Millisecond)):
			}
			c, i := rand.N(len(cs)), rand.N(5)
			k := [2]int{c, i}
			if downs[k] {
				delete(downs, k)
				e.heal(i, cs[c].name, "down", func() error { return cs[c].net.Heal(i) })
			} else {
				downs[k] = true
				e.fault(i, cs[c].name, "down", func() error { return cs[c].net.Down(i) })
			}
		}
	}()
	runWorkers(3*time.Second, cs, name, name, ttl, 500*time.Millisecond, 20*time.Millisecond, nil)
	close(stop)
	<-flapped
	time.Sleep(ttl + 200*time.Millisecond)
	e.assertNoKey(row+" (after the TTL)", name)
	l := mustAcquire(t, cs[0], name, ttl, 5*time.Second, nil, "after healing (liveness)")
	if !cs[0].increment(l, name) {
		t.Errorf("row %q: write after healing rejected; want accepted", row)
	}
	cs[0].release(l)
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, 2)
	e.finish(row, rep, nil)
}

// nodesIn returns the nodes named by the *redlock.NodeErrors in err's tree.
func nodesIn(err error) map[int]bool {
	m := map[int]bool{}
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ne, ok := err.(*redlock.NodeError); ok {
			m[ne.Node] = true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return m
}
