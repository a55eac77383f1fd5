package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/guardtest"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Chaos harness: simulated clients, each a *redlock.Client over its own
// proxied path to every node (a redlocktest.Net), recording what they saw
// into one history.Recorder through record.As (no event written here), the
// cluster and its Nets recording their own faults, and a fenced counter
// downstream.

// chaosEnv is one chaos row: a cluster, a recorder, a store, and the
// clients and hold watchers started on them.
type chaosEnv struct {
	t     testing.TB
	cl    *redlocktest.Cluster
	rec   *history.Recorder
	store *counterStore
	opts  redlock.Options // for clients made by client()

	mu       sync.Mutex // protects holds
	holds    []*redlock.Lock
	finished bool // finish was called
}

// newEnv starts n nodes and returns an environment whose clients use opts.
// Everything it starts is stopped when tb ends.
func newEnv(tb testing.TB, n int, st storeKind, opts *redlock.Options) *chaosEnv {
	tb.Helper()
	return newEnvFor(tb, 0, n, st, opts)
}

// newEnvFor is newEnv for a run of about d: its containers outlive it
// (Docker removes them after redlocktest.DefaultExpire otherwise).
func newEnvFor(tb testing.TB, d time.Duration, n int, st storeKind, opts *redlock.Options) *chaosEnv {
	tb.Helper()
	copts := &redlocktest.Options{Expire: max(redlocktest.DefaultExpire, d+15*time.Minute)}
	e := &chaosEnv{t: tb, rec: history.NewRecorder()}
	e.store = &counterStore{touched: map[string]bool{}}
	switch st {
	case memFenced, memUnfenced:
		e.store.s = guardtest.NewMemStore(st == memFenced)
	default:
		rdb := redlocktest.Start(tb, 1, copts).Client(0)
		e.store.s = guardtest.NewRedisStore(rdb, st == redisFenced)
	}
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.NodeTimeout == 0 {
		// Proxied round trips under -race on a loaded two-core box: the
		// rows are about safety, not latency.
		e.opts.NodeTimeout = 500 * time.Millisecond
	}
	nodeOpts := *copts
	nodeOpts.Recorder = e.rec // the nodes' and the Nets' faults record themselves
	e.cl = redlocktest.Start(tb, n, &nodeOpts)
	// Runs before the cluster's Close (cleanups run last-in first-out) and
	// after the clients' (registered later).
	tb.Cleanup(func() {
		e.waitHolds()
		if !e.finished {
			// The row stopped early: still show it, and how far it got.
			row := tb.Name()[strings.LastIndex(tb.Name(), "/")+1:] + " (FAILED)"
			summary.add(history.SummaryRow{Name: row})
			if tb.Failed() {
				e.timeline(row, nil)
			}
		}
	})
	return e
}

// waitHolds waits until every hold taken through a sim has ended: at its
// deadline at the latest, when its loss is recorded.
func (e *chaosEnv) waitHolds() {
	e.mu.Lock()
	holds := e.holds
	e.mu.Unlock()
	for _, l := range holds {
		for {
			until := l.ValidUntil() // moved by extends
			select {
			case <-l.Done():
			case <-time.After(time.Until(until) + 5*time.Second):
				if l.ValidUntil().After(until) {
					continue
				}
				select {
				case <-l.Done():
				default:
					e.t.Errorf("Done of the hold of %q not closed 5s after its deadline; want closed at the deadline", l.Name())
				}
			}
			break
		}
	}
}

// directClient is a client over the cluster's own clients, not proxied:
// for warm-up and checks no fault touches.
func (e *chaosEnv) directClient() *redlock.Client {
	e.t.Helper()
	lc, err := redlock.New(e.cl.Clients(), &e.opts)
	if err != nil {
		e.t.Fatalf("redlock.New: %v", err)
	}
	e.t.Cleanup(func() { lc.Close() })
	return lc
}

// warmUp acquires and releases name n times on all nodes, so that its fence
// counters start above 1 everywhere: a node restarted empty is then visibly
// behind.
func (e *chaosEnv) warmUp(name string, n int) {
	e.t.Helper()
	lc := e.directClient()
	lockKey, _ := e.directKeys(name)
	gone := func() bool {
		for _, nd := range e.cl.Clients() {
			if n, err := nd.Exists(context.Background(), lockKey).Result(); err != nil || n != 0 {
				return false
			}
		}
		return true
	}
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l, err := lc.Acquire(ctx, name, time.Second, nil)
		if err == nil {
			err = l.Release(ctx)
		}
		cancel()
		if err != nil {
			e.t.Fatalf("warm-up of %q: %v", name, err)
		}
		// Release returns at a quorum; the next acquisition must find the
		// key gone on every node, or it skips a node's counter and the
		// counters no longer move together as the rows expect.
		if !waitFor(2*time.Second, gone) {
			e.t.Fatalf("warm-up of %q: the lock key is still on a node 2s after Release", name)
		}
	}
}

// fault runs f, which injects a fault on node (or -1) for client (or ""
// for everyone); the cluster and its Nets record their faults themselves.
// It reports f's error with Errorf, so it may be called from any
// goroutine, and returns it.
func (e *chaosEnv) fault(node int, client, what string, f func() error) error {
	if err := f(); err != nil {
		e.t.Errorf("fault %s (node %d, client %q): %v", what, node, client, err)
		return err
	}
	return nil
}

// heal runs f, which undoes a fault; see fault.
func (e *chaosEnv) heal(node int, client, what string, f func() error) error {
	if err := f(); err != nil {
		e.t.Errorf("heal %s (node %d, client %q): %v", what, node, client, err)
		return err
	}
	return nil
}

// mustFault is fault for the test goroutine: it stops the test on error.
func (e *chaosEnv) mustFault(node int, client, what string, f func() error) {
	e.t.Helper()
	if err := e.fault(node, client, what, f); err != nil {
		e.t.FailNow()
	}
}

// mustHeal is heal for the test goroutine.
func (e *chaosEnv) mustHeal(node int, client, what string, f func() error) {
	e.t.Helper()
	if err := e.heal(node, client, what, f); err != nil {
		e.t.FailNow()
	}
}

// testFault records a fault the test makes itself, outside the harness
// (began false: its end).
func (e *chaosEnv) testFault(kind history.FaultKind, node int, client string, began bool) {
	k := history.Heal
	if began {
		k = history.Fault
	}
	e.rec.Record(history.Event{Kind: k, Fault: kind, Node: node, Client: client})
}

// majorityGone records that the test made a majority of the nodes
// unreachable for the holders of lock.
func (e *chaosEnv) majorityGone(lock string) {
	e.rec.Record(history.Event{Kind: history.MajorityGone, Node: -1, Lock: lock})
}

// assertNoKey fails the test if any running node still has name's lock key.
func (e *chaosEnv) assertNoKey(row, name string, skip ...int) {
	e.t.Helper()
	key, _ := e.directKeys(name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
next:
	for i := 0; i < e.cl.Len(); i++ {
		for _, s := range skip {
			if s == i {
				continue next
			}
		}
		n, err := e.cl.Client(i).Exists(ctx, key).Result()
		if err != nil || n != 0 {
			e.t.Errorf("row %q: node %d: EXISTS %s = %d, %v; want 0 (no leaked key)", row, i, key, n, err)
		}
	}
}

// directKeys returns name's lock and fence keys with the environment's
// prefix.
func (e *chaosEnv) directKeys(name string) (lockKey, fenceKey string) {
	p := e.opts.KeyPrefix
	if p == "" {
		p = redlock.DefaultKeyPrefix
	}
	lockKey = p + "{" + name + "}"
	return lockKey, lockKey + ":fence"
}

// clients starts n simulated clients c1..cn.
func (e *chaosEnv) clients(n int) []*sim {
	cs := make([]*sim, n)
	for i := range cs {
		cs[i] = e.client(fmt.Sprintf("c%d", i+1))
	}
	return cs
}

// down cuts c's paths to nodes, recording each as a fault.
func (e *chaosEnv) down(c *sim, nodes ...int) {
	e.t.Helper()
	for _, i := range nodes {
		e.mustFault(i, c.name, "down", func() error { return c.net.Down(i) })
	}
}

// blackhole blackholes c's paths to nodes.
func (e *chaosEnv) blackhole(c *sim, nodes ...int) {
	e.t.Helper()
	for _, i := range nodes {
		e.mustFault(i, c.name, "blackhole", func() error { return c.net.Blackhole(i) })
	}
}

// healNet heals c's faulty paths to nodes, recording each with detail.
func (e *chaosEnv) healNet(c *sim, detail string, nodes ...int) {
	e.t.Helper()
	for _, i := range nodes {
		e.mustHeal(i, c.name, detail, func() error { return c.net.Heal(i) })
	}
}

// holdABC has c acquire name with its paths to D and E down, so that it
// holds the lock on exactly A, B and C. Its paths stay down.
func (e *chaosEnv) holdABC(c *sim, name string, ttl time.Duration) *redlock.Lock {
	e.t.Helper()
	e.down(c, 3, 4)
	return mustAcquire(e.t, c, name, ttl, 5*time.Second, nil, "A, B, C reachable")
}

// fenceCounter reads name's fence counter on node i directly.
func (e *chaosEnv) fenceCounter(name string, i int) uint64 {
	e.t.Helper()
	_, fk := e.directKeys(name)
	v, err := e.cl.Client(i).Get(within(e.t, 5*time.Second), fk).Uint64()
	if err != nil {
		e.t.Fatalf("GET %s on node %d: %v", fk, i, err)
	}
	return v
}
