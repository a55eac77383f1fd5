package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The measured loops: one goroutine, many goroutines on distinct keys, and workers contending for one key.

// sequential: one goroutine, a fresh key per pair; lock and unlock timed
// apart (S1, S4, S5).
func sequential(ctx context.Context, l locker, prefix string, d time.Duration, w *window) metrics {
	var lockLat, unlockLat []time.Duration
	var lockErr, unlockErr int
	w.start()
	end := time.Now().Add(d)
	for i := 0; ctx.Err() == nil && time.Now().Before(end); i++ {
		key := prefix + strconv.Itoa(i)
		t0 := time.Now()
		h, err := l.tryLock(ctx, key)
		t1 := time.Now()
		if err != nil {
			lockErr++
			continue
		}
		lockLat = append(lockLat, t1.Sub(t0))
		if err := h.release(ctx); err != nil {
			unlockErr++ // a release that reports a dead node still counts its time
		}
		unlockLat = append(unlockLat, time.Since(t1))
	}
	w.stop()
	return metrics{
		"lock_p50": pct(lockLat, 50), "lock_p99": pct(lockLat, 99),
		"unlock_p50": pct(unlockLat, 50), "unlock_p99": pct(unlockLat, 99),
		"n": float64(len(lockLat)), "ops": float64(len(lockLat)), "lock_err": float64(lockErr), "unlock_err": float64(unlockErr),
	}
}

// parallel: s2Workers goroutines, each on its own keys, pairs per second
// and the allocations of the whole process per pair (S2).
func parallel(ctx context.Context, l locker, prefix string, d time.Duration, w *window) metrics {
	const keysPerWorker = 64
	keys := make([][]string, s2Workers)
	for w := range keys {
		for k := range keysPerWorker {
			keys[w] = append(keys[w], fmt.Sprintf("%sw%d:%d", prefix, w, k))
		}
	}
	var counts pairCounts
	var wg sync.WaitGroup
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	w.start()
	start := time.Now()
	end := start.Add(d)
	for w := range s2Workers {
		wg.Add(1)
		go func() { // owner: parallel; joined below
			defer wg.Done()
			counts.run(ctx, l, end, func(i int) (string, bool) { return keys[w][i%keysPerWorker], true })
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	w.stop()
	runtime.ReadMemStats(&m1)
	p := float64(max(counts.pairs.Load(), 1))
	return metrics{
		"pairs_per_s":   float64(counts.pairs.Load()) / elapsed.Seconds(),
		"allocs_per_op": float64(m1.Mallocs-m0.Mallocs) / p,
		"bytes_per_op":  float64(m1.TotalAlloc-m0.TotalAlloc) / p,
		"lock_err":      float64(counts.lockErr.Load()),
		"unlock_err":    float64(counts.unlockErr.Load()),
		"pairs":         float64(counts.pairs.Load()),
		"ops":           float64(counts.pairs.Load()),
	}
}

// pairCounts counts try-lock + unlock pairs and their errors, over the
// goroutines of S2 or S7.
type pairCounts struct{ pairs, lockErr, unlockErr atomic.Int64 }

// contended: contenderWorkers workers on one key, worker w using ls[w %
// len(ls)] (S3: one locker shared; S6: one each), hold time 0. Every
// critical section checks that nobody else is inside; overlaps are counted
// in violations.
func contended(ctx context.Context, ls []locker, key string, d time.Duration, violations *atomic.Int64, cw *window) metrics {
	var inCS atomic.Int32
	var mu sync.Mutex
	var waits []time.Duration
	var warm []time.Duration  // waits but each worker's first: no cold start in them
	var maxOpen time.Duration // waits still in progress at the end
	counts := make([]int, contenderWorkers)
	var lockErr, unlockErr atomic.Int64
	var wg sync.WaitGroup
	cw.start()
	dctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	for w := range contenderWorkers {
		wg.Add(1)
		go func() { // owner: contended; stopped by dctx, joined below
			defer wg.Done()
			l := ls[w%len(ls)]
			var mine []time.Duration
			for {
				t0 := time.Now()
				h, err := l.lock(dctx, key)
				if err != nil {
					if dctx.Err() != nil {
						mu.Lock()
						maxOpen = max(maxOpen, time.Since(t0))
						mu.Unlock()
						break
					}
					lockErr.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
				if inCS.Add(1) != 1 {
					violations.Add(1)
				}
				runtime.Gosched() // give an overlapping holder a chance to be seen
				inCS.Add(-1)
				if err := h.release(context.Background()); err != nil {
					unlockErr.Add(1)
				}
				counts[w]++
			}
			mu.Lock()
			waits = append(waits, mine...)
			if len(mine) > 1 {
				warm = append(warm, mine[1:]...)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cw.stop()
	total, lo, hi := 0, counts[0], counts[0]
	for _, n := range counts {
		total += n
		lo, hi = min(lo, n), max(hi, n)
	}
	m := metrics{
		"cs_per_s":       float64(total) / elapsed.Seconds(),
		"wait_p50":       pct(waits, 50),
		"wait_p999":      pct(waits, 99.9),
		"wait_p999_warm": pct(warm, 99.9),
		"wait_max":       max(pct(waits, 100), maxOpen.Seconds()),
		"cs_min":         float64(lo),
		"cs_max":         float64(hi),
		"ops":            float64(total),
		"fairness":       0,
		"lock_err":       float64(lockErr.Load()),
		"unlock_err":     float64(unlockErr.Load()),
	}
	if hi > 0 {
		m["fairness"] = float64(lo) / float64(hi)
	}
	return m
}
