package redlock_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

var chaosDurationFlag = flag.Duration("chaos.duration", 0,
	"how long TestChaosSoak runs (default $REDLOCK_CHAOS_DURATION, else 20s)")

// chaosDuration is the soak's duration: the -chaos.duration flag, else
// $REDLOCK_CHAOS_DURATION, else 20s (the short soak CI runs).
func chaosDuration(tb testing.TB) time.Duration {
	tb.Helper()
	if *chaosDurationFlag > 0 {
		return *chaosDurationFlag
	}
	if s := os.Getenv("REDLOCK_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			tb.Fatalf("REDLOCK_CHAOS_DURATION=%q: want a positive duration such as 10m", s)
		}
		return d
	}
	return 20 * time.Second
}

// TestChaosSoak mixes every kind of hold under one stream of random faults:
// nodes killed and restarted with their data, paused, paused by CLIENT
// PAUSE, their clocks jumping forward; clients' paths going down,
// blackholed or slow; clients stopping past their lease between read and
// write. Each kind (soakKinds) has clients of its own on a name of its own
// and a fenced counter downstream, and is checked on its own: no stale
// write accepted, no increment lost, fences never backwards, no two
// holders (a plain lock's overlap is allowed only when a clock jumped:
// Redlock's own assumption broken, and fencing is what keeps its store
// right then), no more permits than the limit, no two leaders. Once
// everything is healed each kind must be taken again (liveness). Its
// duration is -chaos.duration, else $REDLOCK_CHAOS_DURATION, else 20s.
func TestChaosSoak(t *testing.T) {
	from := summary.mark()
	t.Cleanup(func() { summary.print(t, from) }) // runs last, even after a failure
	d := chaosDuration(t)
	// A short per-node timeout: a paused or blackholed node costs every
	// attempt that much.
	e := newEnvFor(t, d, 5, redisFenced, &redlock.Options{NodeTimeout: 200 * time.Millisecond})
	kinds := soakKinds()
	var all []*sim
	for _, k := range kinds {
		if k.start != nil {
			k.sims = k.start(e)
		} else {
			k.sims = e.clients(k.clients)
		}
		all = append(all, k.sims...)
	}
	key, _ := e.directKeys(kinds[0].name)

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, k := range kinds {
		for i, s := range k.sims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k.work(ctx, s, i)
			}()
		}
	}
	inj := &injector{e: e, cs: all, key: key}
	wg.Add(1)
	go func() {
		defer wg.Done()
		inj.run(ctx)
	}()
	wg.Wait()
	inj.healAll()

	for _, k := range kinds {
		k.after(t, k.sims[0])
	}

	opts := e.checkOptions()
	events := e.rec.Events()
	rep := history.Check(withoutShares(events), opts)
	row := fmt.Sprintf("soak %v, %d clients of %d kinds", d, len(all), len(kinds))
	if rep.Faults == 0 {
		t.Errorf("row %q: faults injected = 0; want some", row)
	}
	t.Logf("%s: %d faults (%d clock jumps)", row, rep.Faults, inj.clockJumps)
	t.Logf("%-10s %8s %6s %7s %6s %8s %7s %7s %6s %6s %7s", "kind", "acquired", "failed", "extends", "lost",
		"accepted", "refused", "overlap", "permit", "fence", "stale+lost")
	for _, k := range kinds {
		kr := history.Check(k.events(events), k.options(opts))
		counts := map[history.Kind]int{}
		for _, ev := range k.events(events) {
			counts[ev.Kind]++
		}
		t.Logf("%-10s %8d %6d %7d %6d %8d %7d %7d %6d %6d %7d", k.kind, kr.Acquisitions, counts[history.AcquireFail],
			counts[history.Extend], counts[history.Lost], kr.AcceptedWrites, kr.RejectedWrites, len(kr.Overlaps),
			len(kr.Permits), len(kr.FenceOrder)+len(kr.FenceTies), len(kr.StaleWrites)+len(kr.LostIncrements))
		k.assert(t, row, kr, inj.clockJumps)
	}
	e.finish(row, rep, nil)
}

// soakKind is one kind of hold in the soak: its clients, on a name of its
// own, and how they work, are checked and are taken again after healing.
type soakKind struct {
	kind    string // in the report: plain, reentrant, permit, leader
	name    string // the name its clients take
	clients int
	sims    []*sim
	// start, if set, starts the kind's clients (else e.clients(clients)).
	start func(e *chaosEnv) []*sim
	// work runs client i's critical section until ctx ends.
	work func(ctx context.Context, s *sim, i int)
	// after takes the name once more, everything healed (liveness).
	after func(t *testing.T, s *sim)
	// overlapsOnClockJumps: the kind's holds may overlap when a node's
	// clock jumped (only the plain lock's key jumps, injector.key).
	overlapsOnClockJumps bool
}

// soakKinds are the kinds the soak mixes: the plain lock (half the clients
// with a watchdog and a 400ms hold, half brief and once in 10 holds paused
// past the lease), a re-entrant lock held with a nested share, a
// semaphore of 2 permits, an election, the two sides of a read-write
// lock (chaos_soak_rw_test.go) and sets of two names taken in both orders
// (soakSetKind, chaos_multi_test.go).
func soakKinds() []*soakKind {
	const ttl = time.Second
	plain := &soakKind{kind: "plain", name: "soak", clients: 6, overlapsOnClockJumps: true}
	plain.work = func(ctx context.Context, s *sim, i int) {
		// Half the clients hold briefly; the others work for up to 400ms
		// (more than TTL/3) under an auto-extended lease.
		o := &redlock.AcquireOptions{AutoExtend: i%2 == 1}
		s.pauseOneIn = 10
		hold := 50 * time.Millisecond
		if o.AutoExtend {
			hold = 400 * time.Millisecond
		}
		s.work(ctx, plain.name, plain.name, ttl, 2*time.Second, hold, o)
	}
	plain.after = func(t *testing.T, s *sim) {
		l := mustAcquire(t, s, plain.name, ttl, 10*time.Second, nil, "everything healed (liveness)")
		if !s.increment(l, plain.name) {
			t.Errorf("soak: write after healing rejected; want accepted")
		}
		s.release(l)
	}

	reentrant := &soakKind{kind: "reentrant", name: "soak-reentrant", clients: 2}
	reentrant.work = func(ctx context.Context, s *sim, _ int) {
		for ctx.Err() == nil {
			s.reentrantWork(ctx, reentrant.name, ttl)
		}
	}
	reentrant.after = func(t *testing.T, s *sim) {
		if !s.reentrantWork(within(t, 10*time.Second), reentrant.name, ttl) {
			t.Errorf("soak: re-entrant lock not taken and written after healing; want both")
		}
	}

	permit := &soakKind{kind: "permit", name: "soak-permits", clients: 3}
	const limit = 2
	var b believed
	permit.work = func(ctx context.Context, s *sim, _ int) {
		s.permitWork(ctx, &b, permit.name, limit, ttl, 2*time.Second, 100*time.Millisecond)
	}
	permit.after = func(t *testing.T, s *sim) {
		p, err := s.acquirePermit(within(t, 10*time.Second), permit.name, limit, ttl, nil)
		if err != nil {
			t.Errorf("soak: permit after healing: %v; want one", err)
			return
		}
		if !s.incrementSlot(p) {
			t.Errorf("soak: permit's write after healing rejected; want accepted")
		}
		s.releasePermit(p)
	}

	leader := &soakKind{kind: "leader", name: "soak-leader", clients: 2}
	leader.work = func(ctx context.Context, s *sim, _ int) {
		for ctx.Err() == nil {
			s.leaderWork(ctx, leader.name, ttl, 2*time.Second)
		}
	}
	leader.after = func(t *testing.T, s *sim) {
		if !s.leaderWork(within(t, 10*time.Second), leader.name, ttl, 10*time.Second) {
			t.Errorf("soak: no leadership and accepted write after healing; want both")
		}
	}
	return []*soakKind{plain, reentrant, permit, leader, soakReadWriteKind(ttl), soakSetKind()}
}

// owns reports whether ev belongs to the kind: its holds, the writes to
// its resources (the name, or "<name>:..." for a permit's slot), and every
// fault.
func (k *soakKind) owns(ev history.Event) bool {
	switch ev.Kind {
	case history.Fault, history.Heal, history.MajorityGone:
		return true
	}
	return ev.Lock == k.name || strings.HasPrefix(ev.Lock, k.name+":")
}

// events is the kind's part of the history. A re-entrant share (a hold
// made by Reenter, recorded under shareToken) is a view of its lease, not
// another owner: it is left out, its lease's own events judge the lease.
func (k *soakKind) events(all []history.Event) []history.Event {
	var evs []history.Event
	for _, ev := range withoutShares(all) {
		if k.owns(ev) {
			evs = append(evs, ev)
		}
	}
	return evs
}

// withoutShares is the history without the re-entrant shares' events
// (soakKind.events says why).
func withoutShares(all []history.Event) []history.Event {
	var evs []history.Event
	for _, ev := range all {
		if !strings.Contains(ev.Token, "/") {
			evs = append(evs, ev)
		}
	}
	return evs
}

// options are opts with the kind's counters only.
func (k *soakKind) options(opts *history.CheckOptions) *history.CheckOptions {
	o := *opts
	o.Counters = map[string]int64{}
	for r, v := range opts.Counters {
		if r == k.name || strings.HasPrefix(r, k.name+":") {
			o.Counters[r] = v
		}
	}
	return &o
}

// assert fails the test for any violation in the kind's report rep.
func (k *soakKind) assert(t *testing.T, row string, rep *history.Report, clockJumps int) {
	t.Helper()
	row += ", " + k.kind
	for what, n := range map[string]int{
		"stale writes accepted": len(rep.StaleWrites), "lost increments": len(rep.LostIncrements),
		"fence-order violations": len(rep.FenceOrder), "fence ties": len(rep.FenceTies),
		"permits over the limit": len(rep.Permits),
	} {
		if n != 0 {
			t.Errorf("row %q: %s = %d; want 0:\n%s", row, what, n, rep)
		}
	}
	if n := len(rep.Overlaps); n != 0 && (!k.overlapsOnClockJumps || clockJumps == 0) {
		t.Errorf("row %q: overlaps = %d (clock jumps: %d); want 0:\n%s", row, n, clockJumps, rep)
	}
	wantAcquisitions(t, row, rep, 2)
}

// reentrantWork takes name as a re-entrant lock with a watchdog, enters it
// again (a nested share), increments its counter through the outer hold,
// and releases both, inner first. It reports whether the increment was
// accepted.
func (s *sim) reentrantWork(ctx context.Context, name string, ttl time.Duration) bool {
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l, err := s.acquire(actx, name, ttl, &redlock.AcquireOptions{Reentrant: true, AutoExtend: true})
	if err != nil {
		return false
	}
	defer s.release(l)
	inner, err := l.Reenter(actx, ttl, nil)
	if err != nil {
		return false
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, inner)
	s.e.mu.Unlock()
	time.Sleep(rand.N(100 * time.Millisecond))
	s.release(inner)
	return s.increment(l, name)
}

// leaderWork campaigns for name (waiting at most wait), and while it leads
// for up to 300ms, writes its counter once with its term as the fence;
// then resigns. It reports whether it led and its write was accepted.
func (s *sim) leaderWork(ctx context.Context, name string, ttl, wait time.Duration) bool {
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ld, err := s.campaign(actx, name, ttl)
	if err != nil {
		return false
	}
	time.Sleep(rand.N(300 * time.Millisecond))
	ok := s.increment(ld.Lock(), name)
	s.release(ld.Lock())
	return ok
}

// activeFault is a fault of the soak waiting to be healed.
type activeFault struct {
	node   int
	client int // index in the injector's clients, or -1 for a node fault
	detail string
	at     time.Time // when to heal it
	heal   func() error
}

// injector injects random faults into a soak and heals each after a short
// while. At most two nodes have a node fault at a time, so a majority of
// the nodes stays up. Amnesia is left out: a node restarting empty
// legitimately breaks fencing (see control b).
type injector struct {
	e   *chaosEnv
	cs  []*sim
	key string

	active     []activeFault // only the run goroutine touches it
	clockJumps int           // read after run returned
}

// run injects faults until ctx ends, then returns with faults still active
// (healAll heals them).
func (in *injector) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100*time.Millisecond + rand.N(300*time.Millisecond)):
		}
		in.healDue(time.Now())
		in.inject()
	}
}

// nodeFaulted reports whether node i has an active node fault, and how many
// nodes do.
func (in *injector) nodeFaulted(i int) (bool, int) {
	n, hit := 0, false
	for _, f := range in.active {
		if f.client < 0 {
			n++
			hit = hit || f.node == i
		}
	}
	return hit, n
}

func (in *injector) inject() {
	e := in.e
	heal := time.Now().Add(200*time.Millisecond + rand.N(1300*time.Millisecond))
	i := rand.N(5)
	faulted, nodeFaults := in.nodeFaulted(i)
	nodeOK := !faulted && nodeFaults < 2
	switch k := rand.N(7); {
	case k == 0 && nodeOK:
		if e.fault(i, "", "kill", func() error { return e.cl.Kill(i) }) == nil {
			in.active = append(in.active, activeFault{i, -1, "kill", heal, func() error { return e.cl.Restart(i) }})
		}
	case k == 1 && nodeOK:
		if e.fault(i, "", "pause", func() error { return e.cl.Pause(i) }) == nil {
			in.active = append(in.active, activeFault{i, -1, "pause", heal, func() error { return e.cl.Unpause(i) }})
		}
	case k == 2 && nodeOK:
		d := 50*time.Millisecond + rand.N(450*time.Millisecond)
		detail := "client-pause " + d.String()
		if e.fault(i, "", detail, func() error { return e.cl.ClientPause(i, d) }) == nil {
			in.active = append(in.active, activeFault{i, -1, detail, time.Now().Add(d), func() error { return nil }})
		}
	case k == 3:
		// Forward jumps of the clocks of 1 to 3 nodes: the lock key
		// expires there. With 3, the holder's quorum is gone whatever
		// nodes it holds: someone else may get the lock (an overlap) and
		// only fencing keeps the store right.
		for _, j := range rand.Perm(5)[:1+rand.N(3)] {
			if hit, _ := in.nodeFaulted(j); hit {
				continue
			}
			if e.fault(j, "", "clock-jump", func() error { return e.cl.ClockJump(j, in.key) }) == nil {
				in.clockJumps++
				e.heal(j, "", "clock-jump", func() error { return nil })
			}
		}
	case k >= 4:
		c := rand.N(len(in.cs))
		for _, f := range in.active {
			if f.client == c && f.node == i {
				return
			}
		}
		n := in.cs[c].net
		var detail string
		var f func() error
		switch rand.N(3) {
		case 0:
			detail, f = "down", func() error { return n.Down(i) }
		case 1:
			detail, f = "blackhole", func() error { return n.Blackhole(i) }
		default:
			d := 50*time.Millisecond + rand.N(350*time.Millisecond)
			detail, f = "latency "+d.String(), func() error { return n.Latency(i, d) }
		}
		if e.fault(i, in.cs[c].name, detail, f) == nil {
			in.active = append(in.active, activeFault{i, c, detail, heal, func() error { return n.Heal(i) }})
		}
	}
}

// healDue heals the faults due by now.
func (in *injector) healDue(now time.Time) {
	kept := in.active[:0]
	for _, f := range in.active {
		if f.at.After(now) {
			kept = append(kept, f)
			continue
		}
		in.healOne(f)
	}
	in.active = kept
}

// healAll heals every active fault.
func (in *injector) healAll() {
	for _, f := range in.active {
		in.healOne(f)
	}
	in.active = nil
}

func (in *injector) healOne(f activeFault) {
	client := ""
	if f.client >= 0 {
		client = in.cs[f.client].name
	}
	if f.client < 0 && f.at.After(time.Now()) && f.detail != "kill" && f.detail != "pause" {
		// A CLIENT PAUSE ends by itself.
		time.Sleep(time.Until(f.at))
	}
	in.e.heal(f.node, client, f.detail, f.heal)
}

// The soak's per-kind check leaves out only the re-entrant shares: two
// owners of a kind's name that overlap are still caught, as is a write of
// one kind's counter lost, while a share inside its own lease is not an
// owner (the negative control of the soak's filtering; no nodes needed).
func TestChaosSoakKindCheckCatches(t *testing.T) {
	k := &soakKind{kind: "reentrant", name: "soak-reentrant"}
	ms := time.Millisecond
	events := []history.Event{
		{Kind: history.Acquire, Client: "a", Lock: k.name, Token: "A", Fence: 1, Start: 0, At: 1 * ms, Until: 100 * ms},
		{Kind: history.Acquire, Client: "a", Lock: k.name, Token: shareToken("A", "h1"), Fence: 1, Start: 2 * ms, At: 3 * ms, Until: 100 * ms},
		{Kind: history.Release, Client: "a", Lock: k.name, Token: shareToken("A", "h1"), At: 4 * ms},
		{Kind: history.Acquire, Client: "b", Lock: k.name, Token: "B", Fence: 2, Start: 5 * ms, At: 6 * ms, Until: 100 * ms},
		{Kind: history.Acquire, Client: "c", Lock: "soak", Token: "C", Fence: 1, Start: 0, At: 1 * ms, Until: 100 * ms},
		{Kind: history.Release, Client: "a", Lock: k.name, Token: "A", At: 50 * ms},
		{Kind: history.Release, Client: "b", Lock: k.name, Token: "B", At: 60 * ms},
		{Kind: history.Release, Client: "c", Lock: "soak", Token: "C", At: 60 * ms},
	}
	for i := range events {
		events[i].Node = -1
	}
	rep := history.Check(k.events(events), k.options(&history.CheckOptions{}))
	if len(rep.Overlaps) != 1 {
		t.Errorf("overlaps of A and B = %d; want 1 (two owners of one name caught):\n%s", len(rep.Overlaps), rep)
	}
	if len(rep.FenceTies) != 0 {
		t.Errorf("fence ties = %d; want 0 (A's share is A's lease, not another owner):\n%s", len(rep.FenceTies), rep)
	}
	if rep.Acquisitions != 2 {
		t.Errorf("acquisitions of %s = %d; want 2 (the plain lock's and the share's left out)", k.name, rep.Acquisitions)
	}
	// Without the filter, the share ties A's fence: what the soak leaves out.
	if all := history.Check(events, &history.CheckOptions{}); len(all.FenceTies) == 0 {
		t.Errorf("the unfiltered history shows no fence tie; the share should tie its lease's fence:\n%s", all)
	}
}
