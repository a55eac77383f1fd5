package redlock_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
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

// TestChaosSoak runs many clients incrementing a fenced counter under one
// lock while random faults come and go: nodes killed and restarted with
// their data, paused, paused by CLIENT PAUSE, their clocks jumping forward;
// clients' paths going down, blackholed or slow; clients stopping past their
// lease between read and write. Its duration is
// -chaos.duration, else $REDLOCK_CHAOS_DURATION, else 20s. The store must
// end with no stale write accepted and no increment lost, fences must
// never go backwards, and once everything is healed a client must get the
// lock. Overlaps are allowed only when a clock jumped (Redlock's own
// assumption broken); fencing is what keeps the store right then. Beside
// them, readers and writers of a read-write lock on another name
// (chaos_soak_rw_test.go), reported per kind: no overlap with an exclusive
// hold there at all.
func TestChaosSoak(t *testing.T) {
	from := summary.mark()
	t.Cleanup(func() { summary.print(t, from) }) // runs last, even after a failure
	d := chaosDuration(t)
	const (
		clients = 10
		ttl     = time.Second
		name    = "soak"
	)
	// A short per-node timeout: a paused or blackholed node costs every
	// attempt that much.
	e := newEnvFor(t, d, 5, redisFenced, &redlock.Options{NodeTimeout: 200 * time.Millisecond})
	cs := e.clients(clients)
	key, _ := e.directKeys(name)

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range cs {
		// Half the clients hold briefly; the others work for up to 400ms
		// (more than TTL/3) under an auto-extended lease.
		o := &redlock.AcquireOptions{AutoExtend: i%2 == 1}
		c.pauseOneIn = 10
		hold := 50 * time.Millisecond
		if o.AutoExtend {
			hold = 400 * time.Millisecond
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, name, name, ttl, 2*time.Second, hold, o)
		}()
	}
	// The two sides of a read-write lock on a name of their own: readers
	// that hold for a while and check the counter does not change under
	// them, writers that increment it (issue 31).
	rw := startSoakReadWrite(ctx, e, &wg, ttl)
	inj := &injector{e: e, cs: append(append([]*sim{}, cs...), rw.clients...), key: key}
	wg.Add(1)
	go func() {
		defer wg.Done()
		inj.run(ctx)
	}()
	wg.Wait()
	inj.healAll()

	l := mustAcquire(t, cs[0], name, ttl, 10*time.Second, nil, "everything healed (liveness)")
	if !cs[0].increment(l, name) {
		t.Errorf("soak: write after healing rejected; want accepted")
	}
	cs[0].release(l)

	rep := e.check()
	row := fmt.Sprintf("soak %v, %d clients", d, clients)
	if n := len(rep.StaleWrites); n != 0 {
		t.Errorf("row %q: stale writes accepted = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.LostIncrements); n != 0 {
		t.Errorf("row %q: lost increments = %d; want 0:\n%s", row, n, rep)
	}
	if n := len(rep.FenceOrder); n != 0 {
		t.Errorf("row %q: fence-order violations = %d; want 0:\n%s", row, n, rep)
	}
	if n := overlapsOf(rep, name); n != 0 && inj.clockJumps == 0 {
		t.Errorf("row %q: overlaps = %d without any clock jump; want 0:\n%s", row, n, rep)
	}
	rw.check(t, row, rep, e.rec.Events())
	if rep.Faults == 0 {
		t.Errorf("row %q: faults injected = 0; want some", row)
	}
	wantAcquisitions(t, row, rep, 2)
	kinds := map[history.Kind]int{}
	for _, ev := range e.rec.Events() {
		kinds[ev.Kind]++
	}
	t.Logf("%s: %d faults (%d clock jumps), %d acquisitions, %d failed, %d extends, %d lost, %d writes accepted, %d rejected, %d overlaps, %d late losses",
		row, rep.Faults, inj.clockJumps, rep.Acquisitions, kinds[history.AcquireFail], kinds[history.Extend], kinds[history.Lost],
		rep.AcceptedWrites, rep.RejectedWrites, len(rep.Overlaps), len(rep.LateLoss))
	e.finish(row, rep, nil)
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
