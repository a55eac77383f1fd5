package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"time"
)

// metrics is one measurement: named figures (durations in seconds).
type metrics map[string]float64

// scenario is one row group of the report.
type scenario struct {
	id, title string
	fault     fault
	duration  *time.Duration
	// applies says whether c takes part.
	applies func(c contender) bool
	// measure runs the scenario for one contender; addrs are the proxies.
	measure func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error)
	columns []column
	// once: measured in the first round only (S7: minutes per contender).
	once bool
}

// column is one figure of a scenario's table.
type column struct {
	key, head string
	kind      kind
}

type kind int

const (
	kDur   kind = iota // seconds, shown as µs or ms
	kRate              // per second
	kCount             // a plain number
	kRatio             // 0..1
	kCPU               // seconds, shown as µs with a decimal below 100 µs
)

func notFloor(c contender) bool { return !c.floor && !c.permit && !c.rw && c.set == 0 }
func allNodes(c contender) bool { return c.nodes == 5 && !c.permit && !c.rw && c.set == 0 }
func everyone(c contender) bool { return !c.rw && c.set == 0 }
func latencyCols() []column {
	return append([]column{
		{"lock_p50", "lock p50", kDur}, {"lock_p99", "lock p99", kDur},
		{"unlock_p50", "unlock p50", kDur}, {"unlock_p99", "unlock p99", kDur},
		{"n", "pairs", kCount}, {"lock_err", "lock errors", kCount}, {"unlock_err", "unlock errors", kCount},
	}, costCols("pair")...)
}

// costCols are the cost columns of every scenario, per op (a pair, or a
// critical section).
func costCols(op string) []column {
	return []column{
		{"cpu_client", "client CPU/" + op, kCPU}, {"cpu_server", "server CPU/" + op, kCPU},
		{"script_server", "script time/" + op, kCPU}, {"wire", "wire B/" + op, kCount},
	}
}

func contentionCols(perWorker bool) []column {
	cols := []column{
		{"cs_per_s", "CS/s", kRate}, {"wait_p50", "wait p50", kDur},
		{"wait_p999", "wait p99.9", kDur}, {"wait_p999_warm", "p99.9 but 1st", kDur}, {"wait_max", "wait max", kDur},
	}
	if perWorker {
		cols = append(cols, column{"cs_min", "CS/worker min", kCount}, column{"cs_max", "CS/worker max", kCount},
			column{"fairness", "min/max", kRatio})
	}
	cols = append(cols, column{"lock_err", "lock errors", kCount}, column{"unlock_err", "unlock errors", kCount})
	return append(cols, costCols("CS")...)
}

// warmup pairs run before each measurement (and before its fault), so
// connections exist and scripts are loaded. They make the call the
// measurement makes: the waiting lock where it waits (S3, S6), else the
// try-lock; on free keys, so a waiting lock never waits here. A library
// that opens something at its first waiting call (this one opens its notice
// connections) opens it here, as the go-redis pools dial here.
const warmup = 20

func doWarmup(ctx context.Context, l locker, prefix string, waits bool) error {
	lock := l.tryLock
	if waits {
		lock = l.lock
	}
	for i := range warmup {
		// A pair that fails is tried again on its own key, a few times: a
		// warm-up is not measured, and one node reply late on a busy machine
		// (a 100ms timeout) must not end the whole run.
		var err error
		for try := range warmupTries {
			if err = warmPair(ctx, lock, prefix+"warm"+strconv.Itoa(i)+"."+strconv.Itoa(try)); err == nil {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

const warmupTries = 3

func warmPair(ctx context.Context, lock func(context.Context, string) (held, error), key string) error {
	h, err := lock(ctx, key)
	if err != nil {
		return fmt.Errorf("warm-up lock: %w", err)
	}
	if err := h.release(ctx); err != nil {
		return fmt.Errorf("warm-up unlock: %w", err)
	}
	return nil
}

// withLocker opens c's locker(s), warms them up (with the waiting lock when
// waits), injects the fault, runs f, heals, and closes. run starts and stops
// the cost window around its measured loop and returns the operations it
// counted as "ops"; withLocker adds the costs per operation.
func withLocker(ctx context.Context, cl *cluster, f fault, c contender, addrs []string, prefix string, n int, waits bool,
	run func([]locker, *window) (metrics, error)) (metrics, error) {
	ls := make([]locker, 0, n)
	defer func() {
		for _, l := range ls {
			l.close()
		}
	}()
	for range n {
		l, err := c.open(addrs)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		if err := doWarmup(ctx, l, prefix, waits); err != nil {
			return nil, err
		}
	}
	if err := cl.inject(f); err != nil {
		return nil, fmt.Errorf("injecting the fault: %w", err)
	}
	w := cl.window(ctx, false)
	m, err := run(ls, w)
	// Heal before closing: it frees the clients stuck on a blackholed node.
	if herr := cl.heal(f); herr != nil && err == nil {
		err = fmt.Errorf("healing the fault: %w", herr)
	}
	if err != nil {
		return m, err
	}
	cost, err := w.costs(m["ops"], cl.idle)
	maps.Copy(m, cost)
	return m, err
}

// s2Workers is S2's concurrency.
const s2Workers = 32

// run takes and releases on l the keys key gives (i counts from 0) until
// it says no more, end passes or ctx ends, and adds its counts to c.
func (c *pairCounts) run(ctx context.Context, l locker, end time.Time, key func(i int) (string, bool)) {
	var n, le, ue int64
	for i := 0; ctx.Err() == nil && time.Now().Before(end); i++ {
		k, ok := key(i)
		if !ok {
			break
		}
		h, err := l.tryLock(ctx, k)
		if err != nil {
			le++
			continue
		}
		if err := h.release(ctx); err != nil {
			ue++
		}
		n++
	}
	c.pairs.Add(n)
	c.lockErr.Add(le)
	c.unlockErr.Add(ue)
}

// contenderWorkers is the number of workers of S3 and S6.
const contenderWorkers = 8

func scenarios(cl *cluster, f *flags, violations *atomic.Int64) []scenario {
	seq := func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration, ft fault) (metrics, error) {
		return withLocker(ctx, cl, ft, c, addrs, prefix, 1, false, func(ls []locker, w *window) (metrics, error) {
			return sequential(ctx, ls[0], prefix, d, w), ctx.Err()
		})
	}
	return []scenario{
		{
			id: "S1", title: "uncontended lock and unlock, one goroutine, a fresh key each time", fault: healthy,
			duration: &f.s1, applies: everyone, columns: latencyCols(),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return seq(ctx, c, addrs, prefix, d, healthy)
			},
		},
		{
			id: "S2", title: fmt.Sprintf("%d goroutines, one Client, distinct keys (try-lock + unlock pairs)", s2Workers), fault: healthy,
			duration: &f.s2, applies: everyone,
			columns: append([]column{
				{"pairs_per_s", "pairs/s", kRate}, {"allocs_per_op", "allocs/pair", kCount},
				{"bytes_per_op", "B/pair", kCount}, {"lock_err", "lock errors", kCount}, {"unlock_err", "unlock errors", kCount},
			}, costCols("pair")...),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return withLocker(ctx, cl, healthy, c, addrs, prefix, 1, false, func(ls []locker, w *window) (metrics, error) {
					return parallel(ctx, ls[0], prefix, d, w), ctx.Err()
				})
			},
		},
		{
			id: "S3", title: fmt.Sprintf("%d goroutines of one process (one Client) on one key, hold 0", contenderWorkers), fault: healthy,
			duration: &f.s3, applies: notFloor, columns: contentionCols(false),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return withLocker(ctx, cl, healthy, c, addrs, prefix, 1, true, func(ls []locker, w *window) (metrics, error) {
					return contended(ctx, ls, prefix+"one", d, violations, w), ctx.Err()
				})
			},
		},
		{
			id: "S4", title: "one node of five replies 50 ms late (uncontended, as S1)", fault: slowNode,
			duration: &f.s4, applies: allNodes, columns: latencyCols(),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return seq(ctx, c, addrs, prefix, d, slowNode)
			},
		},
		{
			id: "S5", title: "two nodes of five blackholed (uncontended, as S1)", fault: blackhole,
			duration: &f.s5, applies: allNodes, columns: latencyCols(),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return seq(ctx, c, addrs, prefix, d, blackhole)
			},
		},
		{
			id: "S6", title: fmt.Sprintf("%d workers on one key, each with its own Client and connections (as separate processes), hold 0", contenderWorkers), fault: healthy,
			duration: &f.s6, applies: notFloor, columns: contentionCols(true),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return withLocker(ctx, cl, healthy, c, addrs, prefix, contenderWorkers, true, func(ls []locker, w *window) (metrics, error) {
					return contended(ctx, ls, prefix+"one", d, violations, w), ctx.Err()
				})
			},
		},
		{
			id: "S7", title: fmt.Sprintf("scale: %d goroutines over %d distinct names, each taken once (try-lock + unlock)", s7Workers, f.s7names), fault: healthy,
			duration: &f.s7, applies: func(c contender) bool { return c.many }, once: true,
			columns: append([]column{
				{"pairs_per_s", "pairs/s", kRate}, {"mem_per_name", "memory B/name/node", kCount},
				{"keys_left", "keys left/node", kCount}, {"names", "names", kCount},
				{"lock_err", "lock errors", kCount}, {"unlock_err", "unlock errors", kCount},
			}, costCols("pair")...),
			measure: func(ctx context.Context, c contender, addrs []string, prefix string, d time.Duration) (metrics, error) {
				return s7(ctx, cl, c, addrs, prefix, f.s7names, d)
			},
		},
		s8Scenario(cl, f, violations),
		s9Scenario(cl, f),
	}
}
