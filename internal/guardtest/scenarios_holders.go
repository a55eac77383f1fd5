package guardtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock/guard"
)

// Writers with random fences race; the stored fence never goes down, every
// write with the largest fence is accepted, and the store ends with the
// largest fence and a value written with it.
func testConcurrentWriters(t *testing.T, s Store) {
	const res = "concurrent"
	s.Create(t, res)
	const writers, writes = 16, 8
	type result struct {
		fence uint64
		value string
		err   error
	}
	var (
		results = make(chan result, writers*writes)
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The watcher samples the stored fence until the writers are done.
	stop := make(chan struct{})
	watcherErr := make(chan error, 1)
	go func() {
		var last uint64
		for {
			_, f, err := s.Stored(ctx, res)
			if err == nil && f < last {
				err = fmt.Errorf("stored fence went down from %d to %d", last, f)
			}
			if err != nil {
				watcherErr <- err
				return
			}
			last = f
			select {
			case <-stop:
				watcherErr <- nil
				return
			default:
			}
		}
	}()

	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				f := 1 + rand.Uint64N(40)
				v := fmt.Sprintf("w%d-%d-f%d", w, i, f)
				results <- result{f, v, s.Write(ctx, res, HolderAt(f), v)}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-watcherErr; err != nil {
		t.Errorf("watcher: %v", err)
	}
	close(results)

	var maxTried, maxAccepted uint64
	withMax := map[string]bool{} // values written with the largest fence
	var all []result
	for r := range results {
		all = append(all, r)
		maxTried = max(maxTried, r.fence)
		switch {
		case r.err == nil:
			maxAccepted = max(maxAccepted, r.fence)
		case !errors.Is(r.err, guard.ErrStaleFence):
			t.Errorf("write(%q, fence %d) = %v; want nil or guard.ErrStaleFence", r.value, r.fence, r.err)
		}
	}
	for _, r := range all {
		if r.fence == maxTried {
			withMax[r.value] = true
			if r.err != nil {
				t.Errorf("write(%q, fence %d) = %v; want nil: no fence was higher", r.value, r.fence, r.err)
			}
		}
	}
	v, f, err := s.Stored(t.Context(), res)
	if err != nil {
		t.Fatalf("stored: %v", err)
	}
	if f != maxAccepted || f != maxTried {
		t.Errorf("stored fence = %d; want %d, the largest accepted and tried", f, maxAccepted)
	}
	if !withMax[v] {
		t.Errorf("stored value = %q; want one written with fence %d", v, f)
	}
}

// A real lock: holder A's lease ends on the nodes (as after a long pause),
// B acquires it and reads; A, still believing it holds the lock, writes:
// rejected, and B's write goes through.
func testExpiredHolder(t *testing.T, s Store, name string, nodes []redis.UniversalClient) {
	const res = "expired-holder"
	s.Create(t, res)
	// Two clients, as two processes: one client queues its own Acquire
	// calls of a name until the earlier lock ends locally.
	ca, cb := newTestClient(t, nodes), newTestClient(t, nodes)
	key, _ := ca.Keys(name)
	a, err := ca.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire a = %v", err)
	}
	defer a.Release(t.Context())
	if err := s.Write(t.Context(), res, a, "a1"); err != nil {
		t.Fatalf("a's write(fence %d) = %v; want nil", a.Fence(), err)
	}
	for _, nd := range nodes {
		nd.PExpire(t.Context(), key, time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	b, err := cb.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire b = %v", err)
	}
	defer b.Release(t.Context())
	if b.Fence() <= a.Fence() {
		t.Fatalf("b.Fence() = %d; want more than a's %d", b.Fence(), a.Fence())
	}
	if v, err := s.Read(t.Context(), res, b); v != "a1" || err != nil {
		t.Fatalf("b's read(fence %d) = %q, %v; want %q, nil", b.Fence(), v, err, "a1")
	}
	if a.Err() != nil {
		t.Fatalf("a.Err() = %v; want nil (a still believes it holds the lock)", a.Err())
	}
	err = s.Write(t.Context(), res, a, "a2")
	AssertStale(t, fmt.Sprintf("a's write(fence %d) after b's read", a.Fence()), err, res, a.Fence(), b.Fence())
	if err := s.Write(t.Context(), res, b, "b1"); err != nil {
		t.Errorf("b's write(fence %d) = %v; want nil", b.Fence(), err)
	}
	AssertStored(t, s, res, "b1", b.Fence())
}
