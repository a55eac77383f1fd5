package redlock

// An exhaustive model of the lock protocol (issue 8; docs/model.md): every
// interleaving of a small world of clients, nodes and messages, explored
// breadth-first with state hashing, checked against four properties. The
// client's decisions call the library's own pure functions (decided,
// validity, planFence); the node steps restate the scripts
// (model_world_test.go).

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// modelTrace (REDLOCK_MODEL_TRACE=1) prints each BFS level's state count as
// the search goes, for choosing bounds.
var modelTrace = os.Getenv("REDLOCK_MODEL_TRACE") != ""

var modelLong = flag.Bool("long", false, "check the protocol model (TestModel*) at deep bounds; takes minutes")

// Properties, as bits of modelRun.props.
const (
	pFenceOrder = 1 << 1 // 1: a hold that began after another's acquisition completed has a larger fence
	pNoShared   = 1 << 2 // 2: the guard never accepts one fence from two owners
	pMutex      = 1 << 3 // 3: no two clients believe they hold at once
	pNoStray    = 1 << 4 // 4: no key is deleted by another attempt's cleanup or another call
	pAll        = pFenceOrder | pNoShared | pMutex | pNoStray
)

// modelRun is one check: a world, the properties checked and the bounds.
type modelRun struct {
	w         world
	props     uint8
	depth     int // BFS levels (steps); 0: until no new state is found
	maxStates int // the check fails beyond this many states
}

// modelResult is what a check found.
type modelResult struct {
	states   int
	levels   int
	complete bool // no new state at the last level: every reachable state was seen
	bad      *mviolation
	trace    string // the counterexample, step by step
	took     time.Duration
	// Coverage of the grant protocol: distinct states in which a release
	// granted a key ("T.0" on a node), a client holds through the grant
	// path, or the grant path's write-back round is open.
	grantKeys, grantHolds, grantWriteBacks int
	// Coverage of resume: distinct states in which a resumed share
	// believes it holds, and in which the call's own lock does too.
	shareHolds, bothShares int
}

func (r modelResult) String() string {
	s := fmt.Sprintf("%d states, %d levels", r.states, r.levels)
	if r.complete {
		s += " (complete: every reachable state)"
	}
	s += fmt.Sprintf(", %v", r.took.Round(time.Millisecond))
	if r.grantKeys > 0 {
		s += fmt.Sprintf("; states with a granted key %d, holding through the grant path %d, in its write-back %d", r.grantKeys, r.grantHolds, r.grantWriteBacks)
	}
	if r.shareHolds > 0 {
		s += fmt.Sprintf("; states with a resumed share holding %d, with both shares holding %d", r.shareHolds, r.bothShares)
	}
	return s
}

// coverGrants counts s in the grant coverage of res.
func (w *world) coverGrants(s *mstate, res *modelResult) {
	for n := 0; n < w.nodes; n++ {
		if s.nodes[n].key.tok != 0 && s.nodes[n].setBy == sbGrant {
			res.grantKeys++
			break
		}
	}
	for c := 0; c < w.clients; c++ {
		if cl := &s.cl[c]; cl.viaGrant {
			switch cl.phase {
			case phHeld:
				res.grantHolds++
			case phWriteBack:
				res.grantWriteBacks++
			}
		}
	}
}

// initial returns the initial states: no keys, no messages, every client
// idle, and the fence counters at every vector in [0, initCtr]^nodes that
// has a 0 in it. Any such vector is reachable from all zeros (grants whose
// replies were lost and whose keys expired), and only differences between
// counters matter, so starting there shortens the traces.
func (w *world) initial() []mstate {
	var out []mstate
	if w.fixedCtr {
		var s mstate
		for n := 0; n < w.nodes; n++ {
			s.nodes[n].ctr = w.ctr0[n]
		}
		return []mstate{s}
	}
	var ctr [mNodes]uint8
	var gen func(n int)
	gen = func(n int) {
		if n == w.nodes {
			for i := 0; i < w.nodes; i++ {
				if ctr[i] == 0 {
					var s mstate
					for j := 0; j < w.nodes; j++ {
						s.nodes[j].ctr = ctr[j]
					}
					out = append(out, s)
					return
				}
			}
			return
		}
		for v := uint8(0); v <= w.initCtr; v++ {
			ctr[n] = v
			gen(n + 1)
		}
	}
	gen(0)
	return out
}

// tnode records how a state was first reached: its parent's index in the
// search's record (or -1-i for initial state i) and the action.
type tnode struct {
	parent int32
	act    mact
}

// check explores every interleaving within the bounds and returns the first
// violation found, breadth first (so the shortest counterexample).
func (r *modelRun) check() modelResult {
	w := &r.w
	begin := time.Now()
	type entry struct {
		s   mstate
		idx int32
	}
	var rec []tnode
	seen := make(map[uint64]struct{})
	var frontier, next []entry
	for i, s := range w.initial() {
		h := w.hash(&s)
		if _, dup := seen[h]; dup {
			continue
		}
		seen[h] = struct{}{}
		rec = append(rec, tnode{parent: int32(-1 - i)})
		frontier = append(frontier, entry{s, int32(len(rec) - 1)})
	}
	res := modelResult{}
	var acts []mact
	for len(frontier) > 0 && (r.depth == 0 || res.levels < r.depth) {
		res.levels++
		// The states of the last level are checked and counted but not
		// kept: nothing is explored from them, and they are the most.
		last := res.levels == r.depth
		next = next[:0]
		added := 0
		for fi := range frontier {
			e := &frontier[fi]
			acts = w.actions(&e.s, acts[:0])
			for _, a := range acts {
				ns := e.s
				bad := w.apply(&ns, a, nil)
				if bad != nil && r.props&(1<<bad.prop) == 0 {
					bad = nil
				}
				if bad == nil {
					bad = w.check(&ns, r.props)
				}
				if bad != nil {
					rec = append(rec, tnode{parent: e.idx, act: a})
					res.bad = bad
					res.trace = r.replay(rec, int32(len(rec)-1))
					res.states = len(seen)
					res.took = time.Since(begin)
					return res
				}
				h := w.hash(&ns)
				if _, dup := seen[h]; dup {
					continue
				}
				seen[h] = struct{}{}
				added++
				if w.v.grants {
					w.coverGrants(&ns, &res)
				}
				if len(w.resumeTTLs) > 0 {
					w.coverShares(&ns, &res)
				}
				if !last {
					rec = append(rec, tnode{parent: e.idx, act: a})
					next = append(next, entry{ns, int32(len(rec) - 1)})
				}
				if r.maxStates > 0 && len(seen) > r.maxStates {
					panic(fmt.Sprintf("model: more than %d states; lower the bounds", r.maxStates))
				}
			}
		}
		frontier, next = next, frontier
		res.complete = added == 0
		if modelTrace {
			fmt.Printf("level %d: %d new, %d states, %v\n", res.levels, added, len(seen), time.Since(begin).Round(time.Millisecond))
		}
	}
	res.states = len(seen)
	res.took = time.Since(begin)
	return res
}

// replay prints the path to record entry i, step by step.
func (r *modelRun) replay(rec []tnode, i int32) string {
	var path []mact
	for rec[i].parent >= 0 {
		path = append(path, rec[i].act)
		i = rec[i].parent
	}
	init := r.w.initial()[-1-rec[i].parent]
	s := init
	var b strings.Builder
	fmt.Fprintf(&b, "counters at start:")
	for n := 0; n < r.w.nodes; n++ {
		fmt.Fprintf(&b, " n%d=%d", n, s.nodes[n].ctr)
	}
	b.WriteString("\n")
	for k := len(path) - 1; k >= 0; k-- {
		fmt.Fprintf(&b, "%3d. ", len(path)-k)
		r.w.apply(&s, path[k], &b)
	}
	return b.String()
}

// The worlds checked. Time: tick = 100ms, TTL = 3 ticks, drift factor 0.01.
func modelWorld(v variant, f faults, clients, nodes, attempts, extends int, initCtr uint8) world {
	return world{v: v, f: f, clients: clients, nodes: nodes, attempts: attempts, extends: extends,
		ttl: 3, initCtr: initCtr, factor: DefaultDriftFactor}
}

var (
	honest  = faults{loss: true}
	jumpy   = faults{loss: true, earlyExpiry: true, pauses: true}
	noFault = faults{}
)

func runModel(t *testing.T, r modelRun) modelResult {
	t.Helper()
	if r.maxStates == 0 {
		r.maxStates = 4e6
		if *modelLong {
			r.maxStates = 6e7
		}
	}
	res := r.check()
	t.Logf("%d clients, %d nodes, %d attempts, %d extends, counters from [0,%d], depth %d: %v",
		r.w.clients, r.w.nodes, r.w.attempts, r.w.extends, r.w.initCtr, r.depth, res)
	return res
}

// requireHolds fails the test if the check found a violation.
func requireHolds(t *testing.T, r modelRun) modelResult {
	t.Helper()
	res := runModel(t, r)
	if res.bad != nil {
		t.Fatalf("property %d violated: %s\n%s", res.bad.prop, res.bad.why, res.trace)
	}
	return res
}

// requireFinds fails the test unless the check found a violation of prop:
// a negative control, showing the checker can see the bug it guards against.
func requireFinds(t *testing.T, r modelRun, prop int) modelResult {
	t.Helper()
	res := runModel(t, r)
	switch {
	case res.bad == nil:
		t.Fatalf("the model found no violation of property %d; want one (the control must fail)", prop)
	case res.bad.prop != prop:
		t.Fatalf("the model found property %d violated (%s); want property %d\n%s", res.bad.prop, res.bad.why, prop, res.trace)
	}
	t.Logf("found, as it must: property %d: %s\n%s", prop, res.bad.why, res.trace)
	return res
}

// modelBounds are the worlds the protocol is checked in, each with its
// depth (steps of the BFS) by default and under -long. A depth of 0 means
// no bound in that mode: the check runs until no new state is found.
var modelBounds = []struct {
	name        string
	w           world
	props       uint8
	depth, deep int
	onlyLong    bool
}{
	// Honest clocks, persistent nodes, no pauses: all four properties.
	{"honest: 2 clients, no message faults", modelWorld(newProtocol, noFault, 2, 3, 2, 1, 1), pAll, 11, 15, false},
	{"honest: 1 client, message faults", modelWorld(newProtocol, honest, 1, 3, 2, 1, 1), pAll, 10, 14, false},
	{"honest: 1 client, 3 attempts, message faults", modelWorld(newProtocol, honest, 1, 3, 3, 1, 1), pAll, 0, 13, true},
	{"honest: 2 clients, message faults", modelWorld(newProtocol, honest, 2, 3, 2, 1, 1), pAll, 9, 11, false},
	{"honest: 3 clients, no message faults", modelWorld(newProtocol, noFault, 3, 3, 1, 1, 1), pAll, 0, 12, true},
	{"honest: 3 clients, message faults", modelWorld(newProtocol, honest, 3, 3, 1, 1, 1), pAll, 0, 10, true},
	{"honest: 5 nodes, 2 clients, no message faults", modelWorld(newProtocol, noFault, 2, 5, 1, 1, 1), pAll, 0, 12, true},
	// Clock jumps (early expiry) and pauses: mutual exclusion is gone by
	// design; fences, the guard and the keys must still be right.
	{"jumps: 2 clients, no message faults", modelWorld(newProtocol, faults{earlyExpiry: true, pauses: true}, 2, 3, 2, 1, 1), pAll &^ pMutex, 10, 14, false},
	{"jumps: 2 clients, message faults", modelWorld(newProtocol, jumpy, 2, 3, 2, 1, 1), pAll &^ pMutex, 8, 11, false},

	// The grant protocol: releases grant the key to a waiting call, which
	// may hold through the grant path. In 3 nodes a first grant takes 9
	// steps and the grant path 16, so the 3-node worlds bound the depth and
	// two of them are cut down (one attempt, no extends; one without time)
	// to reach the grant path under -long; the 1-node worlds (quorum 1)
	// reach it in 11 steps, and under -long they are checked completely:
	// every reachable state, at any depth.
	{"grants: 2 clients, no message faults", modelWorld(grantProtocol, noFault, 2, 3, 2, 1, 1), pAll, 10, 15, false},
	{"grants: 2 clients, message faults", modelWorld(grantProtocol, honest, 2, 3, 2, 1, 1), pAll, 0, 11, true},
	{"grants: 2 clients, 1 attempt, no extends, to the grant path", modelWorld(grantProtocol, noFault, 2, 3, 1, 0, 0), pAll, 0, 20, true},
	{"grants: 1 node, 2 clients, no message faults", modelWorld(grantProtocol, noFault, 2, 1, 2, 1, 1), pAll, 0, 0, false},
	{"grants: 1 node, 2 clients, message faults", modelWorld(grantProtocol, honest, 2, 1, 2, 1, 1), pAll, 12, 0, false},
	{"grants to any queued call: 1 node, 2 clients, message faults", modelWorld(grantsToAnyProtocol, honest, 2, 1, 2, 1, 1), pAll, 0, 0, true},
	// An alternative lease for the grant path, begin + validity(ttl, 0),
	// usable after any wait shorter than the TTL (the protocol's lease
	// subtracts the wait twice and is usable only within half a TTL of the
	// call's begin): checked for mutual exclusion where the grant path is
	// reached.
	{"grants, lease from the begin once: 1 node, 2 clients, message faults", modelWorld(grantFullTTLProtocol, honest, 2, 1, 2, 1, 1), pAll, 0, 0, true},
	{"grants, lease from the begin once: 2 clients, 1 attempt, no extends, to the grant path", modelWorld(grantFullTTLProtocol, noFault, 2, 3, 1, 0, 0), pAll, 0, 20, true},
	{"grants, jumps: 2 clients, message faults", modelWorld(grantProtocol, jumpy, 2, 3, 2, 1, 1), pAll &^ pMutex, 0, 11, true},
	{"grants, jumps, no time: 2 clients, 1 attempt, no extends, to the grant path", withoutTime(modelWorld(grantProtocol, faults{earlyExpiry: true, pauses: true}, 2, 3, 1, 0, 1)), pAll &^ pMutex, 0, 20, true},
	{"grants, jumps: 1 node, 2 clients, no message faults", modelWorld(grantProtocol, faults{earlyExpiry: true, pauses: true}, 2, 1, 2, 1, 1), pAll &^ pMutex, 15, 0, false},
	{"grants, jumps: 1 node, 2 clients, message faults", modelWorld(grantProtocol, jumpy, 2, 1, 2, 1, 1), pAll &^ pMutex, 0, 20, true},

	// Resume (model_resume_test.go): a holder's handle is resumed with a
	// TTL shorter or longer than the lock's, a second share of its lease;
	// either share extends and releases, and property 3 counts both. The
	// 3-node worlds stop at depth 15, one step short of the first gap of
	// TestModelResumeGaps; the 1-node worlds, without message faults,
	// reach none of its gaps (docs/model.md, "Resume").
	{"resume: 1 node, 2 clients, no message faults", withResume(modelWorld(newProtocol, noFault, 2, 1, 1, 1, 1)), pAll, 16, 0, false},
	{"resume: 2 clients, no message faults", withResume(modelWorld(newProtocol, noFault, 2, 3, 1, 1, 1)), pAll, 0, 15, true},
	{"resume: 1 client, message faults", withResume(modelWorld(newProtocol, honest, 1, 3, 1, 1, 1)), pAll, 11, 15, false},
	{"resume, grants: 1 node, 2 clients, no message faults", withResume(modelWorld(grantProtocol, noFault, 2, 1, 1, 1, 1)), pAll, 0, 0, true},
}

// withoutTime returns w with time standing still: keys vanish by early
// expiry only. Fences, the guard and the keys do not need time, and the
// search reaches deeper without it.
func withoutTime(w world) world {
	w.noTime = true
	return w
}

// grantFullTTLProtocol counts the grant path's lease once from the call's
// begin: begin + validity(ttl, 0).
var grantFullTTLProtocol = func() variant { v := grantProtocol; v.grantLeaseFullTTL = true; return v }()

// grantsToAnyProtocol lets a release grant to any call with a queue entry on
// the node, also one that already holds or has ended: the node cannot tell.
var grantsToAnyProtocol = func() variant { v := grantProtocol; v.grantsToAny = true; return v }()

// TestModelProtocol checks the protocol in every world of modelBounds.
func TestModelProtocol(t *testing.T) {
	for _, b := range modelBounds {
		t.Run(b.name, func(t *testing.T) {
			depth := b.depth
			if *modelLong {
				depth = b.deep
			} else if b.onlyLong {
				t.Skip("run with -long (make model)")
			}
			res := requireHolds(t, modelRun{w: b.w, props: b.props, depth: depth})
			if len(b.w.resumeTTLs) > 0 && res.bothShares == 0 {
				t.Errorf("no state in which both shares of a lease hold: the resume is out of reach at depth %d", depth)
			}
		})
	}
}

// TestModelControlOldSharedFence: the old protocol (one token for all
// attempts, a guard accepting f >= highest) lets the guard accept one fence
// from two overlapping holders. Two grants of 2 are needed on different
// nodes, so the counters start at (0,1,1): any vector is reachable.
func TestModelControlOldSharedFence(t *testing.T) {
	w := modelWorld(oldProtocol, faults{earlyExpiry: true}, 2, 3, 1, 0, 1)
	w.noTime, w.noRelease = true, true
	w.fixedCtr, w.ctr0 = true, [mNodes]uint8{0, 1, 1}
	requireFinds(t, modelRun{w: w, props: pAll &^ pMutex}, 2)
}

// TestModelControlOldCleanup: under the old protocol, the cleanup of a failed
// attempt, delivered late, deletes the key the next attempt set (property 4),
// and so takes the lock from under its holder (property 3).
func TestModelControlOldCleanup(t *testing.T) {
	requireFinds(t, modelRun{w: modelWorld(oldProtocol, honest, 1, 3, 2, 0, 0), props: pAll}, 4)
	requireFinds(t, modelRun{w: modelWorld(oldProtocol, honest, 1, 3, 2, 0, 0), props: pAll &^ pNoStray}, 3)
}

// TestModelControlNoWriteBack: without the fence write-back, a later
// acquisition can get a fence no larger than an earlier one.
func TestModelControlNoWriteBack(t *testing.T) {
	v := newProtocol
	v.writeBack = false
	w := modelWorld(v, faults{earlyExpiry: true}, 2, 3, 1, 0, 1)
	w.noTime, w.noRelease = true, true
	requireFinds(t, modelRun{w: w, props: pAll &^ pMutex}, 1)
}

// TestModelControlAmnesia: a node that restarts without its data forgets its
// counter, and fences repeat.
func TestModelControlAmnesia(t *testing.T) {
	w := modelWorld(newProtocol, faults{amnesia: true}, 2, 3, 1, 0, 0)
	w.noTime, w.noRelease = true, true
	requireFinds(t, modelRun{w: w, props: pAll &^ pMutex}, 1)
}

// TestModelControlLeaseFromDecision: a client that counts its lease from the
// decision, forgetting the time the round took, believes it holds after its
// first keys expired, while another client holds: the check of mutual
// exclusion sees it.
func TestModelControlLeaseFromDecision(t *testing.T) {
	v := newProtocol
	v.leaseFromDecision = true
	w := modelWorld(v, noFault, 2, 3, 1, 0, 0)
	w.noRelease = true
	requireFinds(t, modelRun{w: w, props: pAll}, 3)
}

// TestModelControlGrantLeaseFromDecision: a client that takes the grant path
// counting its lease from the decision (elapsed 0) instead of its call's
// begin believes it holds after the granted keys expired: a grant happens
// before the decision, and time passes between them.
func TestModelControlGrantLeaseFromDecision(t *testing.T) {
	v := grantProtocol
	v.grantLeaseFromDecision = true
	requireFinds(t, modelRun{w: modelWorld(v, noFault, 2, 1, 1, 0, 0), props: pAll}, 3)
	if *modelLong {
		requireFinds(t, modelRun{w: modelWorld(v, noFault, 2, 3, 1, 0, 0), props: pAll}, 3)
	}
}

// TestModelControlGrantTakeOver: an acquire script that takes a grant "T.0"
// over by writing "T.k", as it does an earlier attempt's value, lets attempt
// k's exact cleanup (the attempt failed) delete the granted key while the
// grant notice is still counted: the client holds through the grant path
// without the key.
func TestModelControlGrantTakeOver(t *testing.T) {
	v := grantProtocol
	v.grantTakeOver = true
	w := modelWorld(v, honest, 2, 1, 2, 0, 0)
	w.noTime = true
	requireFinds(t, modelRun{w: w, props: pAll}, 3)
}

// TestModelNodeSteps pins the node steps the model restates from the
// scripts, one case per branch: the same table can drive the scripts on a
// real Redis to show that they agree.
func TestModelNodeSteps(t *testing.T) {
	const now, ttl = 5, 3
	none := mnode{ctr: 4}
	held := func(v mval) mnode { return mnode{key: v, exp: 6, ctr: 4} }
	acquire := []struct {
		name string
		n    mnode
		v    mval
		ok   bool
		want mval
	}{
		{"absent: set", none, mval{1, 1}, true, mval{1, 1}},
		{"same value: refresh", held(mval{1, 2}), mval{1, 2}, true, mval{1, 2}},
		{"earlier attempt of the call: take over", held(mval{1, 1}), mval{1, 2}, true, mval{1, 2}},
		{"later attempt of the call: refuse, never backwards", held(mval{1, 2}), mval{1, 1}, false, mval{1, 2}},
		{"another call: refuse", held(mval{2, 1}), mval{1, 1}, false, mval{2, 1}},
		{"old protocol, our token: refresh", held(mval{1, 0}), mval{1, 0}, true, mval{1, 0}},
	}
	for _, c := range acquire {
		n, ok, ctr := nodeAcquire(c.n, now, ttl, c.v)
		wantCtr, wantExp := uint8(0), c.n.exp
		if c.ok {
			wantCtr, wantExp = 5, now+ttl
		}
		if ok != c.ok || n.key != c.want || ctr != wantCtr || n.ctr != max(c.n.ctr, wantCtr) || n.exp != wantExp {
			t.Errorf("%s: nodeAcquire(%v, %v) = %v key %v exp %d counter %d (returned %d); want %v key %v exp %d counter %d",
				c.name, c.n.key, c.v, ok, n.key, n.exp, n.ctr, ctr, c.ok, c.want, wantExp, max(c.n.ctr, wantCtr))
		}
	}
	keep := []struct {
		name string
		n    mnode
		v    mval
		ok   bool
		want mval
	}{
		{"a grant to this call: keep it, refresh", held(mval{1, 0}), mval{1, 2}, true, mval{1, 0}},
		{"a grant to another call: refuse", held(mval{2, 0}), mval{1, 1}, false, mval{2, 0}},
		{"earlier attempt of the call: take over, as without grants", held(mval{1, 1}), mval{1, 2}, true, mval{1, 2}},
		{"absent: set, as without grants", none, mval{1, 1}, true, mval{1, 1}},
	}
	for _, c := range keep {
		n, ok, ctr := nodeAcquireKeep(c.n, now, ttl, c.v)
		wantCtr, wantExp := uint8(0), c.n.exp
		if c.ok {
			wantCtr, wantExp = 5, now+ttl
		}
		if ok != c.ok || n.key != c.want || ctr != wantCtr || n.ctr != max(c.n.ctr, wantCtr) || n.exp != wantExp {
			t.Errorf("%s: nodeAcquireKeep(%v, %v) = %v key %v exp %d counter %d (returned %d); want %v key %v exp %d counter %d",
				c.name, c.n.key, c.v, ok, n.key, n.exp, n.ctr, ctr, c.ok, c.want, wantExp, max(c.n.ctr, wantCtr))
		}
	}
	if n, ctr := nodeGrant(none, now, ttl, 2); n.key != (mval{2, 0}) || n.exp != now+ttl || ctr != 5 || n.ctr != 5 {
		t.Errorf("nodeGrant(absent, T2) = key %v exp %d counter %d (returned %d); want key T2.0 exp %d counter 5", n.key, n.exp, n.ctr, ctr, now+ttl)
	}
	if n, ok := nodeRelease(held(mval{1, 0}), 1); !ok || n.key.tok != 0 {
		t.Errorf("nodeRelease(T1.0, T1) = %v, key %v; want deleted (a grant to the call)", ok, n.key)
	}
	if _, ok := nodeCleanup(held(mval{1, 0}), mval{1, 1}); ok {
		t.Errorf("nodeCleanup(T1.0, T1.1) deleted; want a grant never deleted by an attempt's cleanup")
	}
	if n, _ := nodeWriteBack(mnode{ctr: 7}, 5); n.ctr != 7 {
		t.Errorf("nodeWriteBack(7, 5) = %d; want 7 (never lower)", n.ctr)
	}
	if n, _ := nodeWriteBack(mnode{ctr: 3}, 5); n.ctr != 5 {
		t.Errorf("nodeWriteBack(3, 5) = %d; want 5", n.ctr)
	}
	if n, ok := nodeExtend(held(mval{1, 2}), now, ttl, mval{1, 2}); !ok || n.exp != now+ttl {
		t.Errorf("nodeExtend(T1.2, won T1.2) = %v exp %d; want extended to %d", ok, n.exp, now+ttl)
	}
	if _, ok := nodeExtend(held(mval{1, 0}), now, ttl, mval{1, 2}); !ok {
		t.Errorf("nodeExtend(T1.0, won T1.2) not extended; want extended (the call's grant, kept by its attempt)")
	}
	if _, ok := nodeExtend(held(mval{1, 1}), now, ttl, mval{1, 2}); ok {
		t.Errorf("nodeExtend(T1.1, won T1.2) extended; want not the lease's (a failed attempt's value, which its cleanup deletes)")
	}
	if _, ok := nodeExtend(held(mval{1, 1}), now, ttl, mval{1, 0}); ok {
		t.Errorf("nodeExtend(T1.1, won T1.0) extended; want not the lease's (the grant path's lease counts the grant only)")
	}
	if _, ok := nodeExtendAnyAttempt(held(mval{1, 1}), now, ttl, 1); !ok {
		t.Errorf("nodeExtendAnyAttempt(T1.1, T1) not extended; want any attempt of the call (the control)")
	}
	if _, ok := nodeExtend(held(mval{2, 1}), now, ttl, mval{1, 1}); ok {
		t.Errorf("nodeExtend(T2.1, won T1.1) extended; want not ours")
	}
	if _, ok := nodeExtend(none, now, ttl, mval{1, 1}); ok {
		t.Errorf("nodeExtend(absent, won T1.1) extended; want not ours (never re-created)")
	}
	if _, ok := nodeCleanup(held(mval{1, 2}), mval{1, 1}); ok {
		t.Errorf("nodeCleanup(T1.2, T1.1) deleted; want only the exact value deleted")
	}
	if n, ok := nodeCleanup(held(mval{1, 1}), mval{1, 1}); !ok || n.key.tok != 0 {
		t.Errorf("nodeCleanup(T1.1, T1.1) = %v, key %v; want deleted", ok, n.key)
	}
	if n, ok := nodeRelease(held(mval{1, 2}), 1); !ok || n.key.tok != 0 {
		t.Errorf("nodeRelease(T1.2, T1) = %v, key %v; want deleted (any attempt of the call)", ok, n.key)
	}
	if _, ok := nodeRelease(held(mval{2, 1}), 1); ok {
		t.Errorf("nodeRelease(T2.1, T1) deleted; want nothing")
	}

	guard := []struct {
		high, owner, f, tok uint8
		ownerRule, ok       bool
	}{
		{3, 1, 4, 2, true, true},   // larger
		{3, 1, 2, 2, true, false},  // smaller
		{3, 1, 3, 1, true, true},   // equal, same owner
		{3, 1, 3, 2, true, false},  // equal, other owner
		{3, 1, 3, 2, false, true},  // old rule: equal accepted from anyone
		{0, 0, 0, 1, true, false},  // fence 0 refused
		{0, 0, 0, 1, false, false}, // fence 0 refused
	}
	for _, g := range guard {
		h, o, ok := guardAccess(g.high, g.owner, g.f, g.tok, g.ownerRule)
		if ok != g.ok {
			t.Errorf("guardAccess(highest %d of T%d, fence %d of T%d, owner rule %v) = %v; want %v", g.high, g.owner, g.f, g.tok, g.ownerRule, ok, g.ok)
		}
		if ok && (h != g.f || o != g.tok) {
			t.Errorf("guardAccess(highest %d of T%d, fence %d of T%d) recorded %d of T%d; want %d of T%d", g.high, g.owner, g.f, g.tok, h, o, g.f, g.tok)
		}
	}
}
