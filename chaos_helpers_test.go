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
	"github.com/redlock-go/redlock/redlocktest"
)

// Chaos harness: simulated clients, each a *redlock.Client over its own
// proxied path to every node (a redlocktest.Net), recording what they saw
// into one redlocktest.Recorder, and a fenced counter downstream.

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

// store is a downstream counter per resource: what the lock protects.
// A fenced store does what DESIGN §3 asks of a downstream, through one of
// redlock's guards: every read and write carries the holder's fence, and one
// lower than the highest seen for the resource is rejected with
// redlock.ErrStaleFence (reads record their fence too, so that a stale holder
// cannot read-modify-write around a newer one). An unfenced store ignores
// fences: the negative control.
type store interface {
	// read returns the counter of resource under fence.
	read(resource string, fence uint64) (int64, error)
	// write sets the counter of resource to v under fence and returns
	// the store's order of acceptance.
	write(resource string, v int64, fence uint64) (seq int64, err error)
	// counters returns the final value of every resource written.
	counters() (map[string]int64, error)
}

// storeKind selects the downstream store of a chaos environment.
type storeKind int

const (
	memFenced     storeKind = iota // in process, redlock.FenceGuard
	memUnfenced                    // in process, no fencing
	redisFenced                    // a Redis container of its own, redlock.RedisGuard
	redisUnfenced                  // the same Redis, plain GET and SET
)

// memStore is a store in this process.
type memStore struct {
	guard *redlock.FenceGuard // nil: unfenced

	mu  sync.Mutex       // protects the maps
	val map[string]int64 // resource -> counter
	seq map[string]int64 // resource -> writes accepted so far
}

func newMemStore(fenced bool) *memStore {
	s := &memStore{val: map[string]int64{}, seq: map[string]int64{}}
	if fenced {
		s.guard = new(redlock.FenceGuard)
	}
	return s
}

// do runs access under fence: through the guard if the store is fenced.
func (s *memStore) do(resource string, fence uint64, access func()) error {
	f := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		access()
		return nil
	}
	if s.guard == nil {
		return f()
	}
	return s.guard.Do(resource, fence, f)
}

func (s *memStore) read(resource string, fence uint64) (v int64, err error) {
	err = s.do(resource, fence, func() { v = s.val[resource] })
	return v, err
}

func (s *memStore) write(resource string, v int64, fence uint64) (seq int64, err error) {
	err = s.do(resource, fence, func() {
		s.val[resource] = v
		s.seq[resource]++
		seq = s.seq[resource]
	})
	return seq, err
}

func (s *memStore) counters() (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int64, len(s.val))
	for k, v := range s.val {
		m[k] = v
	}
	return m, nil
}

// redisStore is a store in a Redis of its own (not one of the lock's
// nodes), each counter in the key "{resource}:count".
type redisStore struct {
	rdb   *redis.Client
	guard *redlock.RedisGuard // nil: unfenced

	mu      sync.Mutex // protects touched
	touched map[string]bool
}

// storeTimeout bounds one call to the downstream Redis, which no fault
// touches.
const storeTimeout = 5 * time.Second

func countKey(resource string) string { return "{" + resource + "}:count" }

func (s *redisStore) read(resource string, fence uint64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var (
		v   string
		err error
	)
	if s.guard != nil {
		v, _, err = s.guard.Get(ctx, resource, countKey(resource), fence)
	} else {
		v, err = s.rdb.Get(ctx, countKey(resource)).Result()
		if errors.Is(err, redis.Nil) {
			err = nil
		}
	}
	if err != nil || v == "" {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func (s *redisStore) write(resource string, v int64, fence uint64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.mu.Lock()
	s.touched[resource] = true
	s.mu.Unlock()
	var err error
	if s.guard != nil {
		err = s.guard.Set(ctx, resource, countKey(resource), strconv.FormatInt(v, 10), fence)
	} else {
		err = s.rdb.Set(ctx, countKey(resource), v, 0).Err()
	}
	if err != nil {
		return 0, err
	}
	// The order of acceptance of a counter is the value it stored.
	return v, nil
}

func (s *redisStore) counters() (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int64, len(s.touched))
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	for r := range s.touched {
		v, err := s.rdb.Get(ctx, countKey(r)).Int64()
		if err != nil {
			return nil, fmt.Errorf("final counter of %q: %w", r, err)
		}
		m[r] = v
	}
	return m, nil
}

// chaosEnv is one chaos row: a cluster, a recorder, a store, and the
// clients and hold watchers started on them.
type chaosEnv struct {
	t     testing.TB
	cl    *redlocktest.Cluster
	rec   *redlocktest.Recorder
	store store
	opts  redlock.Options // for clients made by client()

	watchers sync.WaitGroup // one per hold: records Lost, polls auto-extends
	finished bool           // finish was called
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
	e := &chaosEnv{t: tb, rec: redlocktest.NewRecorder()}
	switch st {
	case memFenced, memUnfenced:
		e.store = newMemStore(st == memFenced)
	default:
		rdb := redlocktest.Start(tb, 1, copts).Client(0)
		rs := &redisStore{rdb: rdb, touched: map[string]bool{}}
		if st == redisFenced {
			rs.guard = redlock.NewRedisGuard(rdb)
		}
		e.store = rs
	}
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.NodeTimeout == 0 {
		// Proxied round trips under -race on a loaded two-core box: the
		// rows are about safety, not latency.
		e.opts.NodeTimeout = 500 * time.Millisecond
	}
	e.cl = redlocktest.Start(tb, n, copts)
	// Runs before the cluster's Close (cleanups run last-in first-out) and
	// after the clients' (registered later).
	tb.Cleanup(func() {
		e.join()
		if !e.finished {
			// The row stopped early: still show it, and how far it got.
			row := tb.Name()[strings.LastIndex(tb.Name(), "/")+1:] + " (FAILED)"
			summary.add(redlocktest.SummaryRow{Name: row})
			if tb.Failed() {
				e.timeline(row, nil)
			}
		}
	})
	return e
}

// join waits for every hold watcher: each ends when its lock ends, at its
// deadline at the latest.
func (e *chaosEnv) join() { e.watchers.Wait() }

// sim is one simulated client process: its own network path and Client.
type sim struct {
	e    *chaosEnv
	name string
	net  *redlocktest.Net
	lc   *redlock.Client

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
	n, err := e.cl.NewNet(name)
	if err != nil {
		e.t.Fatalf("NewNet(%q): %v", name, err)
	}
	e.t.Cleanup(func() {
		if err := n.Close(); err != nil {
			e.t.Errorf("Net(%q).Close: %v", name, err)
		}
	})
	lc, err := redlock.New(n.Clients(), opts)
	if err != nil {
		e.t.Fatalf("redlock.New(%q): %v", name, err)
	}
	e.t.Cleanup(func() { lc.Close() })
	return &sim{e: e, name: name, net: n, lc: lc}
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
	}
}

// record records ev, stamping At with now if it is zero.
func (e *chaosEnv) record(ev redlocktest.Event) {
	if ev.At == 0 {
		ev.At = e.rec.Now()
	}
	e.rec.Record(ev)
}

// fault runs f, a fault on node (or -1) for client (or "" for everyone),
// and records it. It reports f's error with Errorf, so it may be called from
// any goroutine, and returns it.
func (e *chaosEnv) fault(node int, client, detail string, f func() error) error {
	start := e.rec.Now()
	err := f()
	if err != nil {
		e.t.Errorf("fault %s (node %d, client %q): %v", detail, node, client, err)
		return err
	}
	e.record(redlocktest.Event{Kind: redlocktest.Fault, Node: node, Client: client, Start: start, Detail: detail})
	return nil
}

// heal runs f, which undoes a fault, and records it.
func (e *chaosEnv) heal(node int, client, detail string, f func() error) error {
	start := e.rec.Now()
	err := f()
	if err != nil {
		e.t.Errorf("heal %s (node %d, client %q): %v", detail, node, client, err)
		return err
	}
	e.record(redlocktest.Event{Kind: redlocktest.Heal, Node: node, Client: client, Start: start, Detail: detail})
	return nil
}

// mustFault is fault for the test goroutine: it stops the test on error.
func (e *chaosEnv) mustFault(node int, client, detail string, f func() error) {
	e.t.Helper()
	if err := e.fault(node, client, detail, f); err != nil {
		e.t.FailNow()
	}
}

// mustHeal is heal for the test goroutine.
func (e *chaosEnv) mustHeal(node int, client, detail string, f func() error) {
	e.t.Helper()
	if err := e.heal(node, client, detail, f); err != nil {
		e.t.FailNow()
	}
}

// majorityGone records that the test made a majority of the nodes
// unreachable for the holders of lock.
func (e *chaosEnv) majorityGone(lock string) {
	e.record(redlocktest.Event{Kind: redlocktest.MajorityGone, Node: -1, Lock: lock})
}

// acquire acquires name for ttl and records the outcome. A hold gets a
// watcher that records Lost when its Done fires with ErrLost, and the new
// deadlines a watchdog sets.
func (s *sim) acquire(ctx context.Context, name string, ttl time.Duration, o *redlock.AcquireOptions) (*redlock.Lock, error) {
	rec := s.e.rec
	start := rec.Now()
	l, err := s.lc.Acquire(ctx, name, ttl, o)
	at := rec.Now()
	if err != nil {
		rec.Record(redlocktest.Event{Kind: redlocktest.AcquireFail, Client: s.name, Lock: name, Start: start, At: at, Detail: err.Error()})
		return nil, err
	}
	until := l.ValidUntil()
	rec.Record(redlocktest.Event{Kind: redlocktest.Acquire, Client: s.name, Lock: name, Token: l.Token(), Fence: l.Fence(),
		Start: start, At: at, Until: rec.Stamp(until)})
	s.e.watchers.Add(1)
	go s.watch(l, until, o != nil && o.AutoExtend)
	return l, nil
}

// watch records the end of a hold if it is lost, and, with a watchdog,
// every new deadline it sets (polled: the watchdog does not report).
func (s *sim) watch(l *redlock.Lock, until time.Time, auto bool) {
	defer s.e.watchers.Done()
	rec := s.e.rec
	var tick <-chan time.Time
	if auto {
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case <-l.Done():
			if errors.Is(l.Err(), redlock.ErrLost) {
				rec.Record(redlocktest.Event{Kind: redlocktest.Lost, Client: s.name, Lock: l.Name(), Token: l.Token(),
					Fence: l.Fence(), At: rec.Now()})
			}
			return
		case <-tick:
			if u := l.ValidUntil(); !u.Equal(until) {
				until = u
				now := rec.Now()
				rec.Record(redlocktest.Event{Kind: redlocktest.Extend, Client: s.name, Lock: l.Name(), Token: l.Token(),
					Fence: l.Fence(), Start: now, At: now, Until: rec.Stamp(u)}) // a successful extend: no Detail
			}
		}
	}
}

// extend extends l and records the outcome (a failure also ends the lock:
// its watcher records Lost).
func (s *sim) extend(ctx context.Context, l *redlock.Lock, ttl time.Duration) error {
	rec := s.e.rec
	start := rec.Now()
	err := l.Extend(ctx, ttl)
	ev := redlocktest.Event{Kind: redlocktest.Extend, Client: s.name, Lock: l.Name(), Token: l.Token(),
		Fence: l.Fence(), Start: start, At: rec.Now()}
	if err == nil {
		ev.Until = rec.Stamp(l.ValidUntil())
	} else {
		ev.Detail = err.Error()
	}
	rec.Record(ev)
	return err
}

// release releases l and records when it was called.
func (s *sim) release(l *redlock.Lock) error {
	rec := s.e.rec
	at := rec.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.Release(ctx)
	rec.Record(redlocktest.Event{Kind: redlocktest.Release, Client: s.name, Lock: l.Name(), Token: l.Token(),
		Fence: l.Fence(), Start: at, At: at})
	return err
}

// read is the fenced read of resource under l: it returns the counter, or
// an error matching errStale, which is recorded as a rejected write (the
// increment did not happen).
func (s *sim) read(l *redlock.Lock, resource string) (int64, error) {
	start := s.e.rec.Now()
	v, err := s.e.store.read(resource, l.Fence())
	if err != nil && !errors.Is(err, redlock.ErrStaleFence) {
		s.e.t.Errorf("downstream read of %s: %v; want nil or ErrStaleFence", s.name, err)
	}
	if err != nil {
		s.e.rec.Record(redlocktest.Event{Kind: redlocktest.Write, Client: s.name, Lock: resource, Token: l.Token(),
			Fence: l.Fence(), Start: start, At: s.e.rec.Now(), Detail: "read rejected: " + err.Error()})
	}
	return v, err
}

// write is the fenced write of v to resource under l; it records the write
// and reports whether the store accepted it.
func (s *sim) write(l *redlock.Lock, resource string, v int64) bool {
	start := s.e.rec.Now()
	seq, err := s.e.store.write(resource, v, l.Fence())
	if err != nil && !errors.Is(err, redlock.ErrStaleFence) {
		s.e.t.Errorf("downstream write of %s: %v; want nil or ErrStaleFence", s.name, err)
	}
	ev := redlocktest.Event{Kind: redlocktest.Write, Client: s.name, Lock: resource, Token: l.Token(), Fence: l.Fence(),
		Start: start, At: s.e.rec.Now(), Accepted: err == nil, Seq: seq, Value: v}
	if err != nil {
		ev.Detail = err.Error()
	}
	s.e.rec.Record(ev)
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
	s.e.fault(-1, s.name, "process-pause", func() error { return nil })
	select {
	case <-l.Done():
	case <-time.After(time.Until(l.ValidUntil()) + 5*time.Second):
		s.e.t.Errorf("Done of %s's hold of %q not closed 5s after its deadline; want closed at the deadline", s.name, l.Name())
	}
	time.Sleep(500 * time.Millisecond)
	s.e.heal(-1, s.name, "process-pause", func() error { return nil })
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

// check joins the watchers (every hold must have ended) and checks the
// history against the store's final counters.
func (e *chaosEnv) check() *redlocktest.Report {
	e.t.Helper()
	e.join()
	counters, err := e.store.counters()
	if err != nil {
		e.t.Fatalf("downstream store: %v", err)
	}
	return redlocktest.Check(e.rec.Events(), &redlocktest.CheckOptions{
		Counters:  counters,
		Tolerance: chaosTolerance,
	})
}

// chaosTolerance is how late, after its deadline, a hold may learn of its
// loss: scheduling on a loaded two-core box under -race.
const chaosTolerance = 250 * time.Millisecond

// finish records rep in the run's summary and writes the timeline when the
// test failed or $REDLOCK_TIMELINE names a directory. Call it once, at the
// end of the row, after every assertion.
func (e *chaosEnv) finish(name string, rep *redlocktest.Report, controlCaught *bool) {
	e.t.Helper()
	e.finished = true
	row := name
	if e.t.Failed() {
		row += " (FAILED)"
	}
	summary.add(redlocktest.SummaryRow{Name: row, Report: rep, ControlCaught: controlCaught})
	if os.Getenv("REDLOCK_TIMELINE") != "" || e.t.Failed() {
		e.timeline(name, rep)
	}
}

// timeline writes the history as HTML to $REDLOCK_TIMELINE (default the
// temporary directory) and logs where.
func (e *chaosEnv) timeline(name string, rep *redlocktest.Report) {
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
	path, err := redlocktest.TimelineFile(filepath.Join(dir, file), name, e.rec.Events(), rep)
	if err != nil {
		e.t.Errorf("timeline of %s: %v", name, err)
		return
	}
	e.t.Logf("timeline of %s: %s", name, path)
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
	rows []redlocktest.SummaryRow
}

var summary summaryRows

func (s *summaryRows) add(r redlocktest.SummaryRow) {
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
	if err := redlocktest.SummaryTable(os.Stdout, s.rows[from:]); err != nil {
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
	err = redlocktest.SummaryTable(f, s.rows)
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
