package redlock

// An exhaustive model of the semaphore (docs/model.md, "The semaphore"):
// every interleaving of a small world of clients, nodes and messages,
// explored breadth-first with state hashing, checked after every step. A
// permit is one of limit slots, each slot a lock key of its own on every
// node, won on a majority of the nodes; the client's decisions call the
// library's own pure functions (decided, validity) and each slot key is
// stepped by the lock model's node steps (nodeAcquire, nodeCleanup,
// nodeRelease). The state and the steps are in model_permit_state_test.go
// and model_permit_world_test.go.

import (
	"fmt"
	"math/bits"
	"strings"
	"testing"
	"time"
)

// semRun is one check: a world, the properties checked and the bounds.
type semRun struct {
	w         semWorld
	props     uint8
	depth     int // BFS levels (steps); 0: until no new state is found
	maxStates int // the check fails beyond this many states
}

// semResult is what a check found.
type semResult struct {
	states   int
	levels   int
	complete bool // no new state at the last level: every reachable state was seen
	bad      *mviolation
	trace    string
	last     semState // the state the trace ends in
	took     time.Duration
	// Coverage: distinct states in which limit clients believe a permit
	// at once, and in which a client believes a permit won by a retry.
	full, retried int
}

func (r semResult) String() string {
	s := fmt.Sprintf("%d states, %d levels", r.states, r.levels)
	if r.complete {
		s += " (complete: every reachable state)"
	}
	return s + fmt.Sprintf(", %v; states with the limit reached %d, with a permit won by a retry %d",
		r.took.Round(time.Millisecond), r.full, r.retried)
}

// cover counts s in the coverage of res.
func (w *semWorld) cover(s *semState, res *semResult) {
	believe, retried := 0, false
	for c := 0; c < w.clients; c++ {
		if s.believes(c) {
			believe++
			retried = retried || s.cl[c].att > 1
		}
	}
	if believe == w.limit {
		res.full++
	}
	if retried {
		res.retried++
	}
}

// semTnode records how a state was first reached: its parent's index in
// the search's record (-1 for the initial state) and the action.
type semTnode struct {
	parent int32
	act    semAct
}

// check explores every interleaving within the bounds, breadth first, and
// returns the first violation found (so the shortest counterexample).
func (r *semRun) check() semResult {
	w := &r.w
	begin := time.Now()
	type entry struct {
		s   semState
		idx int32
	}
	var s0 semState
	rec := []semTnode{{parent: -1}}
	seen := map[uint64]struct{}{w.hash(&s0): {}}
	frontier, next := []entry{{s0, 0}}, []entry(nil)
	res := semResult{}
	if bad := w.check(&s0, r.props); bad != nil {
		res.bad, res.last = bad, s0
		return res
	}
	var acts []semAct
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
				w.apply(&ns, a, nil)
				if bad := w.check(&ns, r.props); bad != nil {
					rec = append(rec, semTnode{parent: e.idx, act: a})
					res.bad, res.last = bad, ns
					res.trace = r.replay(rec, int32(len(rec)-1))
					res.states, res.took = len(seen), time.Since(begin)
					return res
				}
				h := w.hash(&ns)
				if _, dup := seen[h]; dup {
					continue
				}
				seen[h] = struct{}{}
				added++
				w.cover(&ns, &res)
				if !last {
					rec = append(rec, semTnode{parent: e.idx, act: a})
					next = append(next, entry{ns, int32(len(rec) - 1)})
				}
				if r.maxStates > 0 && len(seen) > r.maxStates {
					panic(fmt.Sprintf("semaphore model: more than %d states; lower the bounds", r.maxStates))
				}
			}
		}
		frontier, next = next, frontier
		res.complete = added == 0
		if modelTrace {
			fmt.Printf("level %d: %d new, %d states, %v\n", res.levels, added, len(seen), time.Since(begin).Round(time.Millisecond))
		}
	}
	res.states, res.took = len(seen), time.Since(begin)
	return res
}

// replay prints the path to record entry i, step by step, from the
// initial state (no keys, no messages, every client idle).
func (r *semRun) replay(rec []semTnode, i int32) string {
	var path []semAct
	for ; rec[i].parent >= 0; i = rec[i].parent {
		path = append(path, rec[i].act)
	}
	var s semState
	var b strings.Builder
	for k := len(path) - 1; k >= 0; k-- {
		fmt.Fprintf(&b, "%3d. ", len(path)-k)
		r.w.apply(&s, path[k], &b)
	}
	return b.String()
}

func runSemModel(t *testing.T, r semRun) semResult {
	t.Helper()
	if r.maxStates == 0 {
		r.maxStates = 4e6
		if *modelLong {
			r.maxStates = 6e7
		}
	}
	res := r.check()
	t.Logf("%d clients, %d nodes (quorum %d), limit %d, %d attempts, message faults %v, depth %d: %v",
		r.w.clients, r.w.nodes, r.w.quorum(), r.w.limit, r.w.attempts, r.w.loss, r.depth, res)
	return res
}

// TestModelSemaphore checks the slotted design: at most limit clients
// believe a valid permit, no two of them name one slot, and each believed
// permit's value is on its slot at a majority of the nodes, after every
// step of every interleaving within the depth (steps from the start; the
// deeper bound under -long).
func TestModelSemaphore(t *testing.T) {
	for _, b := range []struct {
		name        string
		w           semWorld
		depth, deep int
	}{
		{"3 clients, 2 attempts, no message faults", semModelWorld(semSlotted, false, 3, 2, 3, 2), 11, 13},
		{"3 clients, 2 attempts, message faults", semModelWorld(semSlotted, true, 3, 2, 3, 2), 9, 11},
	} {
		t.Run(b.name, func(t *testing.T) {
			depth := b.depth
			if *modelLong {
				depth = b.deep
			}
			res := runSemModel(t, semRun{w: b.w, props: spAll, depth: depth})
			if res.bad != nil {
				t.Fatalf("property %d violated: %s\n%s", res.bad.prop, res.bad.why, res.trace)
			}
			if res.full == 0 || res.retried == 0 {
				t.Errorf("states with the limit reached %d, with a permit won by a retry %d; want both reached", res.full, res.retried)
			}
		})
	}
}

// requireSemFinds fails the test unless the check finds a violation of
// prop: a negative control, showing the checker sees the bug.
func requireSemFinds(t *testing.T, r semRun, prop int) semResult {
	t.Helper()
	res := runSemModel(t, r)
	switch {
	case res.bad == nil:
		t.Fatalf("the semaphore model found no violation of property %d; want one (the control must fail)", prop)
	case res.bad.prop != prop:
		t.Fatalf("the semaphore model found property %d violated (%s); want property %d\n%s", res.bad.prop, res.bad.why, prop, res.trace)
	}
	t.Logf("found, as it must: property %d: %s\n%s", prop, res.bad.why, res.trace)
	return res
}

// TestModelSemaphoreControlNaiveCount: each node counts its permits and
// grants while fewer than limit; a permit is valid on a majority of
// grants. Three permits each win a majority while no node grants more than
// two: A on {n0,n1}, B on {n1,n2}, C on {n0,n2} (DESIGN.md §6).
func TestModelSemaphoreControlNaiveCount(t *testing.T) {
	w := semModelWorld(semCounted, false, 3, 2, 3, 1)
	res := requireSemFinds(t, semRun{w: w, props: spAll}, 1)
	// The counterexample is the one of §6: every node holds limit permits,
	// every believer holds on a majority, and no two on the same nodes.
	var on [semClients]uint8 // the nodes holding each client's permit
	for n := 0; n < w.nodes; n++ {
		taken := 0
		for k := 0; k < w.limit; k++ {
			if tok := res.last.nodes[n][k].key.tok; tok != 0 {
				taken++
				on[tok-1] |= 1 << n
			}
		}
		if taken != w.limit {
			t.Errorf("n%d holds %d permits at the end; want %d (full, never over)", n, taken, w.limit)
		}
	}
	for c := 0; c < w.clients; c++ {
		for d := c + 1; d < w.clients; d++ {
			if on[c] == on[d] {
				t.Errorf("c%d and c%d hold on the same nodes (%03b); want three different majorities", c, d, on[c])
			}
		}
		if !res.last.believes(c) || bits.OnesCount8(on[c]) != 2 {
			t.Errorf("c%d believes %v, holds on nodes %03b; want a permit on exactly two of the three nodes", c, res.last.believes(c), on[c])
		}
	}
}

// TestModelSemaphoreControlMinorityQuorum: slots won on one node of three
// (not a majority). Two clients win the same slot on different nodes
// (property 2); and, checking property 1 alone, three clients believe
// permits of a limit of two.
func TestModelSemaphoreControlMinorityQuorum(t *testing.T) {
	w := semModelWorld(semSlotted, false, 3, 2, 3, 1)
	w.need = 1
	requireSemFinds(t, semRun{w: w, props: spAll}, 2)
	requireSemFinds(t, semRun{w: w, props: spLimit}, 1)
}

// TestModelSemaphoreControlLeaseFromDecision: a permit whose lease counts
// from the decision, forgetting the time its round took, is believed after
// its first key expired, and another client wins the same slot: the checks
// see time, not only the slots.
func TestModelSemaphoreControlLeaseFromDecision(t *testing.T) {
	w := semModelWorld(semSlotted, false, 3, 2, 2, 1)
	w.leaseFromDecision = true
	requireSemFinds(t, semRun{w: w, props: spLimit | spDistinct}, 2)
	requireSemFinds(t, semRun{w: w, props: spAll}, 3)
}
