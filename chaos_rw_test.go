package redlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// The read-write lock under faults: readers and writers of one name while
// nodes are killed, paused and every client's paths flap. Its control
// breaks the exclusion (the writers' keys are apart from the readers') and
// must be caught.

// acquireShared has s take name's shared side (recorded as a shared hold,
// with its extends and loss) and keeps it for waitHolds.
func (s *sim) acquireShared(ctx context.Context, name string, ttl time.Duration, o *redlock.AcquireOptions) (*redlock.Lock, error) {
	l, err := s.lc.AcquireShared(ctx, name, ttl, o)
	if err != nil {
		return nil, err
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, l)
	s.e.mu.Unlock()
	return l, nil
}

// readWork runs a reader until ctx ends: take name's shared side, read
// resource's counter, hold for up to hold, read it again: while the reader
// still believes it holds, no writer may have changed it (seen counts such
// changes).
func (s *sim) readWork(ctx context.Context, name, resource string, ttl, wait, hold time.Duration, reads, seen *atomic.Int64) {
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, wait)
		l, err := s.acquireShared(actx, name, ttl, nil)
		cancel()
		if err != nil {
			continue
		}
		reads.Add(1)
		before := s.counter(resource)
		time.Sleep(rand.N(hold))
		after := s.counter(resource)
		if after != before && time.Now().Before(l.ValidUntil()) {
			seen.Add(1)
		}
		s.release(l)
	}
}

// counter returns resource's counter as the store has it now (no fence:
// what a reader would see). It reads that resource only: the store's
// counters() is for the end of a run, when no write is half done (a
// resource written but not yet stored reads as "" there).
func (s *sim) counter(resource string) int64 {
	v, err := s.e.store.current(resource)
	if err != nil {
		s.e.t.Errorf("downstream store: %v", err)
	}
	return v
}

// TestReadWriteChaos runs the row and its control.
func TestReadWriteChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos")
	}
	t.Run("row", func(t *testing.T) { chaosReadWrite(t, "rw-faults", false) })
	t.Run("control-writers-apart", func(t *testing.T) { chaosReadWrite(t, "control-rw-writers-apart", true) })
}

// chaosReadWrite: four readers and two writers of one name on five nodes
// for 6s, the writers incrementing a fenced counter, while D and E are
// killed and restarted, B and C paused for a TTL, and every client's paths
// flap (semaphoreFaults). Clean: no exclusive hold overlaps another hold,
// no reader sees the counter change under it, fences in order, nothing
// stale accepted, no increment lost. The control gives the writers another
// key prefix (a writer that ignores the readers): the checker must report
// writers overlapping readers.
func chaosReadWrite(t *testing.T, row string, control bool) {
	e := newEnv(t, 5, memFenced, nil)
	const name, resource = "rw", "rw-counter"
	const ttl = time.Second
	readers := e.clients(4)
	wopts := e.opts
	if control {
		wopts.KeyPrefix = "apart:"
	}
	writers := []*sim{e.clientWith("w1", &wopts), e.clientWith("w2", &wopts)}
	var reads, seen atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Go(func() {
			r.readWork(ctx, name, resource, ttl, 1500*time.Millisecond, 80*time.Millisecond, &reads, &seen)
		})
	}
	for _, w := range writers {
		wg.Go(func() { w.work(ctx, name, resource, ttl, 1500*time.Millisecond, 50*time.Millisecond, nil) })
	}
	semaphoreFaults(e, append(readers, writers...), ttl)
	wg.Wait()
	cancel()

	rep := e.check()
	shared, exclusive := 0, 0
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.Acquire && ev.Lock == name {
			if ev.Shared {
				shared++
			} else {
				exclusive++
			}
		}
	}
	t.Logf("row %q: %d shared and %d exclusive acquisitions, %d reads; %d counter changes under a valid reader; %d overlaps",
		row, shared, exclusive, reads.Load(), seen.Load(), len(rep.Overlaps))
	if control {
		caught := len(rep.Overlaps) > 0
		if !caught {
			t.Errorf("row %q: writers apart from the readers and no overlap reported; want overlaps (the checker must be able to fail)", row)
		}
		e.finish(row, rep, &caught)
		return
	}
	if shared < 10 || exclusive < 5 {
		t.Errorf("row %q: %d shared and %d exclusive acquisitions; want at least 10 and 5", row, shared, exclusive)
	}
	if n := seen.Load(); n != 0 {
		t.Errorf("row %q: %d times a reader saw the counter change while it held; want 0", row, n)
	}
	assertClean(t, row, rep)
	assertFencedSafe(t, row, rep)
	e.finish(row, rep, nil)
}
