package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// 17. Fair handoff under faults (issue 10): six clients, each its own Client
// (as six processes), contend for one name in the default fair mode, with
// fenced increments. While they do, B is blackholed for every client, then D
// is paused for a third of the TTL, then E is killed and restarted with its
// data. The waiting order only decides who tries first: no overlap, fences
// in order, nothing stale accepted; every client makes progress; no queue
// key is left once the contention is over.
func chaosFairContention(t *testing.T, row string) {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r17"
	const ttl = time.Second
	cs := e.clients(6)
	faults := make(chan struct{})
	go func() {
		defer close(faults)
		step := func(d time.Duration) { time.Sleep(d) }
		step(800 * time.Millisecond)
		for _, c := range cs {
			e.fault(1, c.name, "blackhole", func() error { return c.net.Blackhole(1) })
		}
		step(1500 * time.Millisecond)
		for _, c := range cs {
			e.heal(1, c.name, "blackhole", func() error { return c.net.Heal(1) })
		}
		e.fault(3, "", "pause", func() error { return e.cl.Pause(3) })
		step(ttl / 3)
		e.heal(3, "", "pause", func() error { return e.cl.Unpause(3) })
		step(300 * time.Millisecond)
		e.fault(4, "", "kill", func() error { return e.cl.Kill(4) })
		step(time.Second)
		e.heal(4, "", "restart", func() error { return e.cl.Restart(4) })
	}()
	runWorkers(6*time.Second, cs, name, name, ttl, 3*time.Second, 5*time.Millisecond, nil)
	<-faults

	per := map[string]int{}
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.Acquire && ev.Lock == name && ev.Token != "" {
			per[ev.Client]++
		}
	}
	for _, c := range cs {
		if per[c.name] == 0 {
			t.Errorf("row %q: client %s never acquired in 6s of fair contention (per client: %v)", row, c.name, per)
		}
	}
	// Waiters left the queue when they gave up; entries of the last ones
	// expire. Nothing may stay behind.
	time.Sleep(ttl + 1500*time.Millisecond)
	lockKey, _ := e.directKeys(name)
	for i, nd := range e.cl.Clients() {
		for _, k := range []string{lockKey, lockKey + ":q", lockKey + ":qt"} {
			if n, err := nd.Exists(context.Background(), k).Result(); err != nil || n != 0 {
				t.Errorf("row %q: node %d: EXISTS %s = %d, %v after the contention; want 0", row, i, k, n, err)
			}
		}
	}
	rep := e.check()
	assertClean(t, row, rep)
	wantAcquisitions(t, row, rep, len(cs))
	e.finish(row, rep, nil)
}
