package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// s7Workers is S7's concurrency.
const s7Workers = 64

// manyNames: s7Workers goroutines share names distinct names, each taken
// once (try-lock + release), until all are done or d passes (S7). "names"
// is how many were tried.
func manyNames(ctx context.Context, l locker, prefix string, names int, d time.Duration, w *window) metrics {
	var next atomic.Int64
	var counts pairCounts
	var wg sync.WaitGroup
	w.start()
	start := time.Now()
	end := start.Add(d)
	for range s7Workers {
		wg.Add(1)
		go func() { // owner: manyNames; stopped when the names or the time run out, joined below
			defer wg.Done()
			counts.run(ctx, l, end, func(int) (string, bool) {
				i := next.Add(1) - 1
				return prefix + strconv.FormatInt(i, 10), i < int64(names)
			})
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	w.stop()
	return metrics{
		"pairs_per_s": float64(counts.pairs.Load()) / elapsed.Seconds(),
		"names":       float64(min(next.Load(), int64(names))),
		"ops":         float64(counts.pairs.Load()),
		"lock_err":    float64(counts.lockErr.Load()),
		"unlock_err":  float64(counts.unlockErr.Load()),
	}
}

// flushAll empties every node: S7 leaves a million fence counters behind.
// The nodes are the bench's own (startCluster), so nothing else is lost.
func (c *cluster) flushAll(ctx context.Context) error {
	for i, a := range c.admin {
		if err := a.FlushAll(ctx).Err(); err != nil {
			return fmt.Errorf("FLUSHALL on node %d: %w", i, err)
		}
	}
	return nil
}

// keyCounts is DBSIZE of every node.
func (c *cluster) keyCounts(ctx context.Context) ([]int64, error) {
	out := make([]int64, len(c.admin))
	for i, a := range c.admin {
		n, err := a.DBSize(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("DBSIZE on node %d: %w", i, err)
		}
		out[i] = n
	}
	return out, nil
}

// s7 measures S7 for one contender: on empty nodes (the warm-up's keys
// flushed), the names, then the memory the run left (used_memory after
// minus before, per node, over the names tried) and the keys left; the
// nodes are flushed again after, also on error.
func s7(ctx context.Context, cl *cluster, c contender, addrs []string, prefix string, names int, d time.Duration) (metrics, error) {
	return withLocker(ctx, cl, healthy, c, addrs, prefix, 1, false, func(ls []locker, w *window) (m metrics, err error) {
		defer func() {
			if ferr := cl.flushAll(context.Background()); ferr != nil && err == nil {
				err = ferr
			}
		}()
		// Open the pools' connections (a connection's buffers are node
		// memory), then start from empty nodes.
		manyNames(ctx, ls[0], prefix+"warm:", s7Workers*4, d, nil)
		if err := cl.flushAll(ctx); err != nil {
			return nil, err
		}
		w.mem = true
		m = manyNames(ctx, ls[0], prefix, names, d, w)
		if w.err != nil || ctx.Err() != nil {
			return m, ctx.Err() // withLocker reports w.err
		}
		keys, err := cl.keyCounts(ctx)
		if err != nil {
			return m, err
		}
		var grown, left float64
		for i, g := range w.memoryGrowth() {
			grown += float64(g)
			left += float64(keys[i])
		}
		n := float64(len(keys))
		m["mem_per_name"] = perOp(grown/n, m["names"])
		m["keys_left"] = left / n
		return m, nil
	})
}
