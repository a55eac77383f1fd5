package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of the lock's core promise on real Redis: one holder at a time, and
// only the holder's token extends or releases.

func TestMutualExclusion(t *testing.T) {
	// 32 goroutines in 4 clients (as if 4 processes): goroutines of one
	// client queue locally, the clients contend on the nodes.
	const clients = 4
	forEachN(t, func(t *testing.T, n int) {
		cs := make([]*Client, clients)
		for i := range cs {
			cs[i] = newTestClient(t, nodes(t, n), nil)
		}
		name := fmt.Sprintf("mutex-%d", n)
		const workers, rounds = 32, 5
		var (
			inside   atomic.Int32
			overlaps atomic.Int32
			mu       sync.Mutex // protects count, fences
			count    int
			fences   []uint64
			errs     = make(chan error, workers)
			wg       sync.WaitGroup
		)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			c := cs[w%clients]
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					l, err := c.Acquire(ctx, name, 5*time.Second, nil)
					if err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					mu.Lock()
					count++
					fences = append(fences, l.Fence())
					mu.Unlock()
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("worker: %v", err)
		}
		if got := overlaps.Load(); got != 0 {
			t.Errorf("%d overlapping holds; want 0", got)
		}
		if count != workers*rounds {
			t.Errorf("count = %d; want %d", count, workers*rounds)
		}
		for i := 1; i < len(fences); i++ {
			if fences[i] <= fences[i-1] {
				t.Errorf("fence %d = %d after %d; want fences to increase in the order of the holds", i, fences[i], fences[i-1])
				break
			}
		}
		key, _ := cs[0].Keys(name)
		assertNoLockKey(t, nodes(t, n), key)
	})
}

func TestOnlyHolderCanExtendOrRelease(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(t, n), nil)
		name := fmt.Sprintf("holder-%d", n)
		key, _ := c.Keys(name)
		a, err := c.Acquire(t.Context(), name, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire a = %v", err)
		}
		// a's lease ends on the nodes (as if its process had paused);
		// b takes the lock.
		for _, nd := range nodes(t, n) {
			nd.PExpire(t.Context(), key, time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		b, err := c.Acquire(t.Context(), name, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire b = %v", err)
		}
		if err := a.Extend(t.Context(), 5*time.Second); !errors.Is(err, ErrLost) {
			t.Errorf("a.Extend = %v; want ErrLost", err)
		}
		if err := a.Release(t.Context()); !errors.Is(err, ErrLost) {
			t.Errorf("a.Release = %v; want ErrLost (it was lost before)", err)
		}
		for i, nd := range nodes(t, n) {
			// b's Acquire returned at its quorum: give its last grants time to land.
			got, _ := nd.Get(t.Context(), key).Result()
			for deadline := time.Now().Add(2 * time.Second); got == "" && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				got, _ = nd.Get(t.Context(), key).Result()
			}
			if !strings.HasPrefix(got, b.Token()+".") {
				t.Errorf("node %d holds %q; want b's token %q untouched by a", i, got, b.Token())
			}
		}
		if err := b.Extend(t.Context(), 10*time.Second); err != nil {
			t.Errorf("b.Extend = %v", err)
		}
		if err := b.Release(t.Context()); err != nil {
			t.Errorf("b.Release = %v", err)
		}
		assertNoLockKey(t, nodes(t, n), key)
	})
}
