package redlock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
	"github.com/redlock-go/redlock/redlocktest/record"
)

// Chaos harness: simulated clients, each a *redlock.Client over its own
// proxied path to every node (a redlocktest.Net), recording what they saw
// into one history.Recorder through record.As (no event written here), the
// cluster and its Nets recording their own faults, and a fenced counter
// downstream.

var chaosDurationFlag = flag.Duration("chaos.duration", 0,
	"how long TestChaosSoak runs (default $REDLOCK_CHAOS_DURATION, else 20s)")

// chaosDuration is the soak's duration: the -chaos.duration flag, else
// $REDLOCK_CHAOS_DURATION, else 20s (the short soak CI runs).
func chaosDuration(tb testing.TB) time.Duration {
	tb.Helper()
	if *chaosDurationFlag > 0 {
		return *chaosDurationFlag
	}
	if s := os.Getenv("REDLOCK_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			tb.Fatalf("REDLOCK_CHAOS_DURATION=%q: want a positive duration such as 10m", s)
		}
		return d
	}
	return 20 * time.Second
}

// counterStore is a downstream counter per resource: what the lock
// protects, kept in one of the test stores (stores_test.go). A fenced
// store does what DESIGN §3 asks of a downstream, through one of redlock's
// guards: every read and write carries the holder's fence, and one lower
// than the highest seen for the resource is rejected with
// guard.ErrStaleFence (reads record their fence too, so that a stale
// holder cannot read-modify-write around a newer one). An unfenced store
// ignores fences: the negative control.
type counterStore struct {
	s guardtest.Store

	mu      sync.Mutex // protects touched
	touched map[string]bool
}

// storeKind selects the downstream store of a chaos environment.
type storeKind int

const (
	memFenced     storeKind = iota // in process, guard.InProcess
	memUnfenced                    // in process, no fencing
	redisFenced                    // a Redis container of its own, guard.Redis
	redisUnfenced                  // the same Redis, plain GET and SET
)

// storeTimeout bounds one call to the downstream store, which no fault
// touches.
const storeTimeout = 5 * time.Second

// read returns the counter of resource under h's fence.
func (c *counterStore) read(resource string, h guard.Holder) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	v, err := c.s.Read(ctx, resource, h)
	if err != nil || v == "" {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// write sets the counter of resource to v under h's fence and returns the
// store's order of acceptance: the counter itself, since each accepted
// read-modify-write stores one more than it read (two stale writers of
// one value tie, and the checker orders them by time).
func (c *counterStore) write(resource string, v int64, h guard.Holder) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	c.mu.Lock()
	c.touched[resource] = true
	c.mu.Unlock()
	if err := c.s.Write(ctx, resource, h, strconv.FormatInt(v, 10)); err != nil {
		return 0, err
	}
	return v, nil
}

// counters returns the final value of every resource written.
func (c *counterStore) counters() (map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	m := make(map[string]int64, len(c.touched))
	for r := range c.touched {
		v, _, err := c.s.Stored(ctx, r)
		if err == nil {
			m[r], err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("final counter of %q: %w", r, err)
		}
	}
	return m, nil
}

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

// sim is one simulated client process: its own network path and Client.
type sim struct {
	e    *chaosEnv
	name string
	net  *redlocktest.Net
	lc   *redlock.Client // records through rc
	rc   record.Client

	// pauseOneIn, if > 0, makes work stop the process past its lease
	// once in that many holds, between its read and its write (a GC
	// pause): a fault the soak injects from inside the client. Only for
	// holds without a watchdog, which a real pause would stop too.
	pauseOneIn int
}

// client starts a simulated client with the environment's options.
func (e *chaosEnv) client(name string) *sim { return e.clientWith(name, &e.opts) }

// clientWith starts a simulated client with opts.
func (e *chaosEnv) clientWith(name string, opts *redlock.Options) *sim {
	e.t.Helper()
	return e.clientOver(name, opts, nil)
}

// clientOver is clientWith for a client whose Client reaches each node
// through wrap(node), a fault the test puts inside the client process (nil:
// the nodes as they are).
func (e *chaosEnv) clientOver(name string, opts *redlock.Options, wrap func(redis.UniversalClient) redlock.Node) *sim {
	e.t.Helper()
	n, err := e.cl.NewNet(name)
	if err != nil {
		e.t.Fatalf("NewNet(%q): %v", name, err)
	}
	e.t.Cleanup(func() {
		if err := n.Close(); err != nil {
			e.t.Errorf("Net(%q).Close: %v", name, err)
		}
	})
	rc := record.As(e.rec, name)
	var o redlock.Options
	if opts != nil {
		o = *opts
	}
	o.Observe = recordShares(rc, o.Observe)
	var lc *redlock.Client
	if wrap == nil {
		lc, err = redlock.New(n.Clients(), &o)
	} else {
		nodes := make([]redlock.Node, 0, e.cl.Len())
		for _, nd := range n.Clients() {
			nodes = append(nodes, wrap(nd))
		}
		lc, err = redlock.NewWithNodes(nodes, &o)
	}
	if err != nil {
		e.t.Fatalf("redlock.New(%q): %v", name, err)
	}
	e.t.Cleanup(func() { lc.Close() })
	return &sim{e: e, name: name, net: n, lc: lc, rc: rc}
}

// recordShares returns an Observe that records each event through rc, then
// calls next if set. The events of a lock made by Resume or Reenter (a
// share of another lock's lease: Event.Hold set) are recorded under a token
// of their own, shareToken, so that the history shows each share as a hold
// with its own deadline. Check then counts two shares of one lease as two
// owners: check such a history with checkLease.
func recordShares(rc record.Client, next func(redlock.Event)) func(redlock.Event) {
	return func(ev redlock.Event) {
		rec := ev
		if rec.Hold != "" {
			rec.Token = shareToken(rec.Token, rec.Hold)
		}
		rc.Observe(rec)
		if next != nil {
			next(ev)
		}
	}
}

// shareToken is the token in the history of the share hold of the lease
// token.
func shareToken(token, hold string) string { return token + "/" + hold }

// warmUp opens s's connections to every node and loads the scripts there,
// through a client on the same Net that records nothing.
func (s *sim) warmUp(name string) {
	s.e.t.Helper()
	lc, err := redlock.New(s.net.Clients(), &s.e.opts)
	if err != nil {
		s.e.t.Fatalf("redlock.New: %v", err)
	}
	defer lc.Close()
	l, err := lc.Acquire(within(s.e.t, 5*time.Second), name, time.Second, nil)
	if err == nil {
		err = l.Release(within(s.e.t, 5*time.Second))
	}
	if err != nil {
		s.e.t.Fatalf("warm-up of %s: %v", s.name, err)
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

// acquire acquires name for ttl (recorded, with the extends and the loss
// of the hold) and keeps the hold for waitHolds.
func (s *sim) acquire(ctx context.Context, name string, ttl time.Duration, o *redlock.AcquireOptions) (*redlock.Lock, error) {
	l, err := s.lc.Acquire(ctx, name, ttl, o)
	if err != nil {
		return nil, err
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, l)
	s.e.mu.Unlock()
	return l, nil
}

// resume resumes the lock of h for ttl (recorded as a share of its lease,
// with the extends and the loss of the share) and keeps the lock for
// waitHolds.
func (s *sim) resume(ctx context.Context, h redlock.Handle, ttl time.Duration, o *redlock.ResumeOptions) (*redlock.Lock, error) {
	l, err := s.lc.Resume(ctx, h, ttl, o)
	if err != nil {
		return nil, err
	}
	s.e.mu.Lock()
	s.e.holds = append(s.e.holds, l)
	s.e.mu.Unlock()
	return l, nil
}

// extend extends l (recorded; a failure also ends the lock, and its loss
// is recorded).
func (s *sim) extend(ctx context.Context, l *redlock.Lock, ttl time.Duration) error {
	return l.Extend(ctx, ttl)
}

// release releases l (recorded).
func (s *sim) release(l *redlock.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.Release(ctx)
}

// read is the fenced read of resource under l: it returns the counter, or
// an error matching errStale, which is recorded as a rejected write (the
// increment did not happen).
func (s *sim) read(l *redlock.Lock, resource string) (v int64, err error) {
	err = s.rc.Read(resource, l, func() (err error) {
		v, err = s.e.store.read(resource, l)
		return err
	})
	if err != nil && !errors.Is(err, guard.ErrStaleFence) {
		s.e.t.Errorf("downstream read of %s: %v; want nil or ErrStaleFence", s.name, err)
	}
	return v, err
}

// write is the fenced write of v to resource under l; it records the write
// and reports whether the store accepted it.
func (s *sim) write(l *redlock.Lock, resource string, v int64) bool {
	err := s.rc.Write(resource, l, v, func() (int64, error) { return s.e.store.write(resource, v, l) })
	if err != nil && !errors.Is(err, guard.ErrStaleFence) {
		s.e.t.Errorf("downstream write of %s: %v; want nil or ErrStaleFence", s.name, err)
	}
	return err == nil
}

// increment adds one to resource's counter under l: a fenced read, then a
// fenced write. It reports whether the write was accepted.
func (s *sim) increment(l *redlock.Lock, resource string) bool {
	v, err := s.read(l, resource)
	if err != nil {
		return false
	}
	return s.write(l, resource, v+1)
}

// work runs the usual critical section until ctx ends: acquire name (waiting
// at most wait), read resource's counter, work on it for up to hold, write
// it back plus one, release.
func (s *sim) work(ctx context.Context, name, resource string, ttl, wait, hold time.Duration, o *redlock.AcquireOptions) {
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, wait)
		l, err := s.acquire(actx, name, ttl, o)
		cancel()
		if err != nil {
			continue
		}
		if v, err := s.read(l, resource); err == nil {
			if hold > 0 {
				time.Sleep(rand.N(hold))
			}
			if s.pauseOneIn > 0 && (o == nil || !o.AutoExtend) && rand.N(s.pauseOneIn) == 0 {
				s.pausePast(l)
			}
			s.write(l, resource, v+1)
		}
		s.release(l)
	}
}

// pausePast stops the client until its lease has run out and a little
// more (the keys' TTL on the nodes), as a GC pause would, and records it.
func (s *sim) pausePast(l *redlock.Lock) {
	s.e.testFault(history.FaultProcessPause, -1, s.name, true)
	select {
	case <-l.Done():
	case <-time.After(time.Until(l.ValidUntil()) + 5*time.Second):
		s.e.t.Errorf("Done of %s's hold of %q not closed 5s after its deadline; want closed at the deadline", s.name, l.Name())
	}
	time.Sleep(500 * time.Millisecond)
	s.e.testFault(history.FaultProcessPause, -1, s.name, false)
}

// waitFor polls cond every 10ms for up to d and reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runWorkers runs work on every client until d has passed, and waits for
// them.
func runWorkers(d time.Duration, clients []*sim, name, resource string, ttl, wait, hold time.Duration, o *redlock.AcquireOptions) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, name, resource, ttl, wait, hold, o)
		}()
	}
	wg.Wait()
}

// check waits for every hold to end and checks the history against the
// store's final counters.
func (e *chaosEnv) check() *history.Report {
	e.t.Helper()
	return history.Check(e.rec.Events(), e.checkOptions())
}

// checkOptions waits for every hold to end and returns the options of a
// check: the store's final counters and chaosTolerance.
func (e *chaosEnv) checkOptions() *history.CheckOptions {
	e.t.Helper()
	e.waitHolds()
	counters, err := e.store.counters()
	if err != nil {
		e.t.Fatalf("downstream store: %v", err)
	}
	return &history.CheckOptions{Counters: counters, Tolerance: chaosTolerance}
}

// chaosTolerance is how late, after its deadline, a hold may learn of its
// loss: scheduling on a loaded two-core box under -race.
const chaosTolerance = 250 * time.Millisecond

// finish records rep in the run's summary and writes the timeline when the
// test failed or $REDLOCK_TIMELINE names a directory. Call it once, at the
// end of the row, after every assertion.
func (e *chaosEnv) finish(name string, rep *history.Report, controlCaught *bool) {
	e.t.Helper()
	e.finished = true
	row := name
	if e.t.Failed() {
		row += " (FAILED)"
	}
	summary.add(history.SummaryRow{Name: row, Report: rep, ControlCaught: controlCaught})
	if os.Getenv("REDLOCK_TIMELINE") != "" || e.t.Failed() {
		e.timeline(name, rep)
	}
}

// timeline writes the history as HTML to $REDLOCK_TIMELINE (default the
// temporary directory) and logs where.
func (e *chaosEnv) timeline(name string, rep *history.Report) {
	e.t.Helper()
	dir := os.Getenv("REDLOCK_TIMELINE")
	if dir == "" {
		dir = os.TempDir()
	}
	file := strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return r
		}
		return '_'
	}, name) + ".html"
	path, err := history.TimelineFile(filepath.Join(dir, file), name, e.rec.Events(), rep)
	if err != nil {
		e.t.Errorf("timeline of %s: %v", name, err)
		return
	}
	e.t.Logf("timeline of %s: %s", name, path)
	// The history itself, to check and draw again anywhere:
	// go run ./redlocktest/cmd/timeline FILE.json > FILE.html
	saved := strings.TrimSuffix(path, ".html") + ".json"
	if err := e.save(saved, name); err != nil {
		e.t.Errorf("saving the history of %s: %v", name, err)
		return
	}
	e.t.Logf("history of %s: %s", name, saved)
}

// save writes the history and the store's counters to path as JSON
// (history.Save).
func (e *chaosEnv) save(path, title string) error {
	counters, err := e.store.counters()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = history.Save(f, &history.Saved{Title: title, Counters: counters, Events: e.rec.Events()})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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

// nodesIn returns the nodes named by the *redlock.NodeErrors in err's tree.
func nodesIn(err error) map[int]bool {
	m := map[int]bool{}
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ne, ok := err.(*redlock.NodeError); ok {
			m[ne.Node] = true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return m
}

// summaryRows collects the summary of every chaos row of this run.
type summaryRows struct {
	mu   sync.Mutex // protects rows
	rows []history.SummaryRow
}

var summary summaryRows

func (s *summaryRows) add(r history.SummaryRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, r)
}

// print writes the rows added since mark from to stdout, and all rows of
// the run to $REDLOCK_CHAOS_REPORT if set (go test hides the stdout of a
// passing package; the Makefile prints that file).
func (s *summaryRows) print(tb testing.TB, from int) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Printf("\n%s summary:\n", tb.Name())
	if err := history.SummaryTable(os.Stdout, s.rows[from:]); err != nil {
		tb.Errorf("SummaryTable: %v", err)
	}
	path := os.Getenv("REDLOCK_CHAOS_REPORT")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Errorf("REDLOCK_CHAOS_REPORT: %v", err)
		return
	}
	err = history.SummaryTable(f, s.rows)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Errorf("writing the summary to %s: %v", path, err)
	}
}

// mark returns where the rows of a test start: the tests of one run share
// summary.
func (s *summaryRows) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}
