package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// TestMultiNoDeadlock: clients looping over sets that overlap in every
// order ({a,b}, {b,a}, {b,c}) and a plain lock on b, on 3 nodes of which
// one is paused for a while, all keep making progress, and no name is ever
// held twice at once.
func TestMultiNoDeadlock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own nodes")
	}
	redlocktest.RequireDocker(t)
	cl, err := redlocktest.New(3, nil)
	if err != nil {
		t.Fatalf("redlocktest.New: %v", err)
	}
	defer cl.Close()
	ns := cl.Clients()
	runMultiContention(t, ns, func() {
		time.Sleep(700 * time.Millisecond)
		if err := cl.Pause(2); err != nil {
			t.Errorf("Pause: %v", err)
		}
		time.Sleep(time.Second)
		if err := cl.Unpause(2); err != nil {
			t.Errorf("Unpause: %v", err)
		}
	}, 3*time.Second)
}

// runMultiContention runs the clients of TestMultiNoDeadlock on ns for d
// while fault runs, and checks progress and exclusion.
func runMultiContention(t *testing.T, ns []redis.UniversalClient, fault func(), d time.Duration) {
	t.Helper()
	const a, b, c = "md-a", "md-b", "md-c"
	work := [][]string{{a, b}, {b, a}, {b, c}, {b}}
	var (
		inside = map[string]*atomic.Int32{a: {}, b: {}, c: {}}
		double atomic.Int32
		counts = make([]atomic.Int32, len(work))
		wg     sync.WaitGroup
		errs   = make(chan error, len(work))
	)
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	for i, names := range work {
		cli := newTestClient(t, ns, &Options{NodeTimeout: 200 * time.Millisecond})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var release func() error
				if len(names) == 1 {
					l, err := cli.Acquire(ctx, names[0], 2*time.Second, nil)
					if err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					release = func() error { return l.Release(context.Background()) }
				} else {
					m, err := cli.AcquireMulti(ctx, names, 2*time.Second, nil)
					if err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					release = func() error { return m.Release(context.Background()) }
				}
				for _, n := range names {
					if inside[n].Add(1) != 1 {
						double.Add(1)
					}
				}
				time.Sleep(time.Millisecond)
				for _, n := range names {
					inside[n].Add(-1)
				}
				counts[i].Add(1)
				_ = release() // a node may be paused: Release returns at a quorum
			}
		}()
	}
	fault()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a client stopped: %v", err)
	}
	if n := double.Load(); n > 0 {
		t.Errorf("%d critical sections overlapped on a name", n)
	}
	for i := range counts {
		if counts[i].Load() == 0 {
			t.Errorf("client %d (%v) never held its names: starved or deadlocked", i, work[i])
		}
	}
	t.Logf("critical sections per client %v: %d %d %d %d", work, counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[3].Load())
}
