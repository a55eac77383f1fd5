package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// soakReadWriteKind is the read-write lock's kind in TestChaosSoak: 4
// readers that hold for up to 100ms and check that the counter does not
// change under them, and 2 writers that increment it (fenced), on a name
// of their own. The checker lets readers overlap each other and share a
// fence, never an exclusive hold (the clock jumps hit the plain lock's key
// only: no overlap is allowed here at all).
func soakReadWriteKind(ttl time.Duration) *soakKind {
	rw := &soakKind{kind: "readwrite", name: "soak-rw", clients: 6}
	var reads, seen atomic.Int64
	rw.work = func(ctx context.Context, s *sim, i int) {
		if i < 4 {
			s.readWork(ctx, rw.name, rw.name, ttl, 2*time.Second, 100*time.Millisecond, &reads, &seen)
			return
		}
		s.work(ctx, rw.name, rw.name, ttl, 2*time.Second, 50*time.Millisecond, nil)
	}
	rw.after = func(t *testing.T, s *sim) {
		t.Logf("soak: readwrite: %d reads, %d counter changes under a valid reader", reads.Load(), seen.Load())
		if n := seen.Load(); n != 0 {
			t.Errorf("soak: readwrite: a reader saw the counter change under it %d times; want 0", n)
		}
		r, err := s.acquireShared(within(t, 10*time.Second), rw.name, ttl, nil)
		if err != nil {
			t.Errorf("soak: readwrite: AcquireShared after healing = %v; want a reader", err)
		} else {
			s.release(r)
		}
		l := mustAcquire(t, s, rw.name, ttl, 10*time.Second, nil, "everything healed (liveness)")
		if !s.increment(l, rw.name) {
			t.Errorf("soak: readwrite: write after healing rejected; want accepted")
		}
		s.release(l)
	}
	return rw
}
