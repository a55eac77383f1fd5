package redlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest/history"
	"github.com/redlock-go/redlock/redlocktest/record"
)

// Chaos row 22 (TestChaosMulti): sets of names that overlap in every order
// ({a,b}, {b,a}, {b,c}) and a plain lock on b, under kills, pauses and
// flapping paths, each critical section a fenced increment of every name's
// counter. Its control breaks the set (a "set" that locks its first name
// only) and the checker reports the overlap on b.

// setRecorder records a set's events as one hold per name, so that the
// checker sees each name's holds (a set's events name the set, its names
// joined by commas). Each name's hold gets its own token in the history
// (the set's token and the name) and that name's fence, which the set
// knows once AcquireMulti returns: events that come before are kept until
// then (held).
type setRecorder struct {
	rc    record.Client
	names []string // the set, as the client declares it (sorted)

	mu      sync.Mutex                   // protects the fields below
	fences  map[string]map[string]uint64 // set token -> name -> fence
	pending map[string][]redlock.Event   // set token -> its events before held
}

func (r *setRecorder) observe(ctx context.Context, ev redlock.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Kind == redlock.EventAcquire && ev.Err != nil {
		r.emit(ctx, ev, nil)
		return
	}
	fs, ok := r.fences[ev.Token]
	if !ok {
		r.pending[ev.Token] = append(r.pending[ev.Token], ev)
		return
	}
	r.emit(ctx, ev, fs)
}

// emit records ev once per name. The caller holds mu.
func (r *setRecorder) emit(ctx context.Context, ev redlock.Event, fs map[string]uint64) {
	for _, n := range r.names {
		e := ev
		e.Name, e.Fence = n, fs[n]
		if e.Token != "" {
			e.Token = setNameToken(ev.Token, n)
		}
		r.rc.Observe(ctx, e)
	}
}

// held records the events of the set with token, whose fences are now
// known.
func (r *setRecorder) held(ctx context.Context, token string, fences map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fences[token] = fences
	for _, ev := range r.pending[token] {
		r.emit(ctx, ev, fences)
	}
	delete(r.pending, token)
}

// setNameToken is the token in the history of a set's hold of name.
func setNameToken(token, name string) string { return token + "/" + name }

// setSim is a chaos client that takes one set of names in a loop.
type setSim struct {
	*sim
	rec *setRecorder
}

// setClient starts a client named name that takes the set names.
func (e *chaosEnv) setClient(name string, names []string) *setSim {
	e.t.Helper()
	rc := record.As(e.rec, name)
	sorted := append([]string(nil), names...)
	slicesSort(sorted)
	r := &setRecorder{rc: rc, names: sorted, fences: map[string]map[string]uint64{}, pending: map[string][]redlock.Event{}}
	o := e.opts
	o.OnEvent = r.observe
	s := e.clientOver(name, &o, nil)
	return &setSim{sim: s, rec: r}
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// setWork runs the set's critical section until ctx ends: take the set
// (waiting at most wait; with firstOnly, only its first name), increment
// every name's counter under that name's fence, release. It counts the
// critical sections in done.
func (s *setSim) setWork(ctx context.Context, ttl, wait time.Duration, firstOnly bool, done *atomic.Int32) {
	for ctx.Err() == nil {
		take := s.rec.names
		if firstOnly {
			take = take[:1]
		}
		actx, cancel := context.WithTimeout(ctx, wait)
		m, err := s.lc.AcquireMulti(actx, take, ttl, nil)
		cancel()
		if err != nil {
			continue
		}
		fs := map[string]uint64{}
		for _, n := range s.rec.names {
			fs[n] = m.Fence(take[0]) // firstOnly: the one name's fence for all
			if !firstOnly {
				fs[n] = m.Fence(n)
			}
		}
		s.rec.held(ctx, m.Token(), fs)
		ok := true
		for _, n := range s.rec.names {
			h := guard.HolderOf(fs[n], setNameToken(m.Token(), n))
			ok = s.incrementAs(h, n) && ok
			time.Sleep(rand.N(5 * time.Millisecond))
		}
		if ok {
			done.Add(1)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = m.Release(rctx)
		rcancel()
	}
}

// incrementAs is a fenced read and write of resource's counter under h
// (recorded). It reports whether the write was accepted.
func (s *sim) incrementAs(h guard.Holder, resource string) bool {
	var v int64
	err := s.rc.Read(resource, h, func() (err error) {
		v, err = s.e.store.read(resource, h)
		return err
	})
	if err == nil {
		err = s.rc.Write(resource, h, v+1, func() (int64, error) { return s.e.store.write(resource, v+1, h) })
	}
	if err != nil && !errors.Is(err, guard.ErrStaleFence) {
		s.e.t.Errorf("downstream increment of %s by %s: %v; want nil or ErrStaleFence", resource, s.name, err)
	}
	return err == nil
}

// multiRow runs the row's workload: three sets and a plain lock on b,
// under semaphoreFaults' kills, pauses and flapping paths; with firstOnly
// the sets lock their first names only (the control).
func multiRow(t *testing.T, row string, firstOnly bool) (*chaosEnv, *history.Report, []int32) {
	e := newEnv(t, 5, memFenced, nil)
	const a, b, c = "r22-a", "r22-b", "r22-c"
	const ttl = time.Second
	sets := []*setSim{e.setClient("s1", []string{a, b}), e.setClient("s2", []string{b, a}), e.setClient("s3", []string{b, c})}
	plain := e.client("p1")
	done := make([]atomic.Int32, len(sets)+1)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	var wg sync.WaitGroup
	for i, s := range sets {
		wg.Go(func() { s.setWork(ctx, ttl, 1500*time.Millisecond, firstOnly, &done[i]) })
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			actx, acancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			l, err := plain.acquire(actx, b, ttl, nil)
			acancel()
			if err != nil {
				continue
			}
			if plain.increment(l, b) {
				done[len(sets)].Add(1)
			}
			plain.release(l)
		}
	})
	cs := []*sim{sets[0].sim, sets[1].sim, sets[2].sim, plain}
	semaphoreFaults(e, cs, ttl)
	wg.Wait()
	cancel()
	e.waitHolds()
	counts := make([]int32, len(done))
	for i := range done {
		counts[i] = done[i].Load()
	}
	return e, e.check(), counts
}

// 22. Sets of names overlapping in every order and a plain lock on one of
// their names, under minority faults: no name held twice at once, fences
// in order per name, nothing stale accepted, no increment lost; every
// client completes critical sections; and a set is taken after healing.
func chaosMulti(t *testing.T, row string) {
	e, rep, counts := multiRow(t, row, false)
	for i, n := range counts {
		if n == 0 {
			t.Errorf("row %q: client %d completed no critical section under minority faults; want progress (counts %v)", row, i, counts)
		}
	}
	s := e.setClient("s9", []string{"r22-c", "r22-a", "r22-b"})
	m, err := s.lc.AcquireMulti(within(t, 5*time.Second), []string{"r22-c", "r22-a", "r22-b"}, time.Second, nil)
	if err != nil {
		t.Errorf("row %q: AcquireMulti of every name after healing = %v; want the set (liveness)", row, err)
	} else {
		_ = m.Release(within(t, 5*time.Second))
	}
	assertClean(t, row, rep)
	assertFencedSafe(t, row, rep)
	e.finish(row, rep, nil)
	t.Logf("row %q: critical sections per client (s1 {a,b}, s2 {b,a}, s3 {b,c}, p1 b): %v", row, counts)
}

// Control g (row 22): the same workload with sets that lock their first
// name only: the plain lock on b and the sets that hold b overlap, and the
// checker says so.
func controlMultiFirstOnly(t *testing.T, row string) {
	e, rep, _ := multiRow(t, row, true)
	caught := len(rep.Overlaps) > 0
	if !caught {
		t.Errorf("row %q: the checker found no overlap with sets that lock one name; want it to:\n%s", row, rep)
	}
	for _, v := range rep.Overlaps {
		if !strings.Contains(v.Detail, "r22-") {
			t.Errorf("row %q: overlap %q is not on a name of the sets", row, v.Detail)
		}
	}
	e.finish(row, rep, &caught)
}

// TestChaosMulti runs row 22 and its control (apart from TestChaos's
// list, so that the two stay selectable by the word).
func TestChaosMulti(t *testing.T) {
	from := summary.mark()
	t.Cleanup(func() { summary.print(t, from) })
	t.Run("22-multi-faults", func(t *testing.T) { chaosMulti(t, "22-multi-faults") })
	t.Run("control-g-22-first-name-only", func(t *testing.T) { controlMultiFirstOnly(t, "control-g-22-first-name-only") })
}
