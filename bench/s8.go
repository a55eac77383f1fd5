package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// S8: a read-heavy load on one name. contenderWorkers workers, each with
// its own Client (as separate processes); each critical section is a read
// with probability s8Reads, else a write, and lasts s8Hold. The read-write
// contender takes reads on the shared side (AcquireShared) and writes on
// the exclusive one; the plain lock takes both exclusively, which
// serializes the readers. Every critical section checks its side's rule
// (no writer beside anyone; readers together); breaches go to violations.

const (
	s8Reads = 0.9
	s8Hold  = 2 * time.Millisecond
)

// sharedLocker is a locker with a shared side.
type sharedLocker interface {
	locker
	lockShared(ctx context.Context, key string) (held, error)
}

// redlockRW is the read-write contender: reads on the shared side.
type redlockRW struct{ *redlockLocker }

func openRedlockRW(addrs []string) (locker, error) {
	l, err := openRedlock(false)(addrs)
	if err != nil {
		return nil, err
	}
	return redlockRW{l.(*redlockLocker)}, nil
}

func (l redlockRW) lockShared(ctx context.Context, key string) (held, error) {
	lk, err := l.c.AcquireShared(ctx, key, ttl, l.wait)
	if err != nil {
		return nil, err
	}
	return redlockHeld{lk}, nil
}

var _ sharedLocker = redlockRW{}

// readHeavy runs S8 on ls (one locker per worker) for d.
func readHeavy(ctx context.Context, ls []locker, key string, d time.Duration, violations *atomic.Int64, cw *window) metrics {
	var readers, writers atomic.Int32
	var mu sync.Mutex
	var rwaits, wwaits []time.Duration
	var reads, writes, lockErr, unlockErr atomic.Int64
	var wg sync.WaitGroup
	cw.start()
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	for w := range contenderWorkers {
		wg.Add(1)
		go func() { // owner: readHeavy; stopped by dctx, joined below
			defer wg.Done()
			l := ls[w%len(ls)]
			sl, shared := l.(sharedLocker)
			r := rand.New(rand.NewPCG(uint64(w), 8))
			var mr, mw []time.Duration
			for {
				read := r.Float64() < s8Reads
				t0 := time.Now()
				var h held
				var err error
				if read && shared {
					h, err = sl.lockShared(dctx, key)
				} else {
					h, err = l.lock(dctx, key)
				}
				if err != nil {
					if dctx.Err() != nil {
						break
					}
					lockErr.Add(1)
					continue
				}
				if read {
					mr = append(mr, time.Since(t0))
					if readers.Add(1); writers.Load() != 0 {
						violations.Add(1)
					}
					time.Sleep(s8Hold)
					readers.Add(-1)
					reads.Add(1)
				} else {
					mw = append(mw, time.Since(t0))
					if writers.Add(1) != 1 || readers.Load() != 0 {
						violations.Add(1)
					}
					time.Sleep(s8Hold)
					writers.Add(-1)
					writes.Add(1)
				}
				if err := h.release(context.Background()); err != nil {
					unlockErr.Add(1)
				}
			}
			mu.Lock()
			rwaits, wwaits = append(rwaits, mr...), append(wwaits, mw...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cw.stop()
	return metrics{
		"reads_per_s":     float64(reads.Load()) / elapsed.Seconds(),
		"writes_per_s":    float64(writes.Load()) / elapsed.Seconds(),
		"read_wait_p50":   pct(rwaits, 50),
		"read_wait_p999":  pct(rwaits, 99.9),
		"write_wait_p50":  pct(wwaits, 50),
		"write_wait_p999": pct(wwaits, 99.9),
		"ops":             float64(reads.Load() + writes.Load()),
		"lock_err":        float64(lockErr.Load()),
		"unlock_err":      float64(unlockErr.Load()),
	}
}

// s8Scenario is S8 for the plain lock and the read-write lock.
func s8Scenario(cl *cluster, f *flags, violations *atomic.Int64) scenario {
	return scenario{
		id: "S8", title: fmt.Sprintf("read-heavy: %d workers with their own Clients on one name, %.0f%% reads, each critical section %v", contenderWorkers, s8Reads*100, s8Hold),
		fault: healthy, duration: &f.s8,
		applies: func(c contender) bool { return c.name == "redlock (fenced)" || c.rw },
		columns: append([]column{
			{"reads_per_s", "reads/s", kRate}, {"writes_per_s", "writes/s", kRate},
			{"read_wait_p50", "read wait p50", kDur}, {"read_wait_p999", "read wait p99.9", kDur},
			{"write_wait_p50", "write wait p50", kDur}, {"write_wait_p999", "write wait p99.9", kDur},
			{"lock_err", "lock errors", kCount}, {"unlock_err", "unlock errors", kCount},
		}, costCols("CS")...),
		measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
			return withLocker(ctx, cl, healthy, c, addrs, prefix, contenderWorkers, true, func(ls []locker, w *window) (metrics, error) {
				return readHeavy(ctx, ls, prefix+"rw", d, violations, w), ctx.Err()
			})
		},
	}
}
