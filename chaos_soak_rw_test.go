package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// The read-write part of TestChaosSoak: readers and writers of a name of
// their own under the soak's faults (the clock jumps hit the plain lock's
// key only, so here no overlap is allowed at all).

const soakRWName = "soak-rw"

type soakReadWrite struct {
	clients     []*sim
	reads, seen atomic.Int64
}

// startSoakReadWrite starts 4 readers and 2 writers of soakRWName until
// ctx ends, in wg.
func startSoakReadWrite(ctx context.Context, e *chaosEnv, wg *sync.WaitGroup, ttl time.Duration) *soakReadWrite {
	rw := &soakReadWrite{}
	for i := range 6 {
		c := e.client("rw" + string(rune('a'+i)))
		rw.clients = append(rw.clients, c)
		if i < 4 {
			wg.Go(func() {
				c.readWork(ctx, soakRWName, soakRWName, ttl, 2*time.Second, 100*time.Millisecond, &rw.reads, &rw.seen)
			})
		} else {
			wg.Go(func() { c.work(ctx, soakRWName, soakRWName, ttl, 2*time.Second, 50*time.Millisecond, nil) })
		}
	}
	return rw
}

// overlapsOf counts rep's overlaps of lock name.
func overlapsOf(rep *history.Report, name string) int {
	n := 0
	for _, v := range rep.Overlaps {
		if len(v.Events) > 0 && v.Events[0].Lock == name {
			n++
		}
	}
	return n
}

// check fails the soak if a hold of the read-write name overlapped an
// exclusive one or a reader saw the counter change under it, and reports
// per kind.
func (rw *soakReadWrite) check(t *testing.T, row string, rep *history.Report, events []history.Event) {
	t.Helper()
	type counts struct{ acquired, failed, lost int }
	kinds := map[string]*counts{"plain": {}, "reader": {}, "writer": {}}
	shared := map[string]bool{} // token -> a reader's
	for _, ev := range events {
		k := "plain"
		if ev.Lock == soakRWName {
			k = "writer"
			if ev.Shared || shared[ev.Token] {
				k = "reader"
			}
		}
		switch ev.Kind {
		case history.Acquire:
			if ev.Shared {
				shared[ev.Token] = true
			}
			kinds[k].acquired++
		case history.AcquireFail:
			kinds[k].failed++
		case history.Lost:
			kinds[k].lost++
		}
	}
	for _, k := range []string{"plain", "reader", "writer"} {
		c := kinds[k]
		t.Logf("%s: %s: %d acquisitions, %d failed, %d lost", row, k, c.acquired, c.failed, c.lost)
	}
	t.Logf("%s: read-write: %d reads, %d overlaps with an exclusive hold, %d counter changes under a valid reader",
		row, rw.reads.Load(), overlapsOf(rep, soakRWName), rw.seen.Load())
	if n := overlapsOf(rep, soakRWName); n != 0 {
		t.Errorf("row %q: read-write: %d overlaps with an exclusive hold; want 0:\n%s", row, n, rep)
	}
	if n := rw.seen.Load(); n != 0 {
		t.Errorf("row %q: read-write: a reader saw the counter change under it %d times; want 0", row, n)
	}
	if kinds["reader"].acquired == 0 || kinds["writer"].acquired == 0 {
		t.Errorf("row %q: read-write: %d reader and %d writer acquisitions; want some of each", row, kinds["reader"].acquired, kinds["writer"].acquired)
	}
}
