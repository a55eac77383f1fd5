package redlock

// The model of locks over several names (docs/model.md, "Sets of names";
// model_multi_test.go runs it): a world apart from the lock's, of 3 nodes,
// 3 names and clients that each take a set of names (a plain lock is a set
// of one), explored over every interleaving of the nodes' script runs, with
// rounds decided before their last node answered (the request stays in
// flight and lands late) and strays expiring. The node step is
// multi_acquire.lua's rule; the value discipline of late requests is the
// lock's model's (a set's values are a lock's values, one per name).
//
// Properties: exclusion (no name believed held by two clients at once),
// and liveness in the fault-free suffix: from every reachable state,
// delivering what is in flight and then running every client promptly, in
// lock step, finishes every client. The naive rule (each name a plain lock
// of its own, taken one at a time in the caller's order, holding the
// earlier ones) fails the second, and the checker reports it.

import (
	"fmt"
	"strings"
)

const (
	mmNodes   = 3
	mmQuorum  = 2
	mmNames   = 3
	mmClients = 4
	mmMsgs    = 20
)

// mmRule is how a client takes its set.
type mmRule uint8

const (
	mmAll   mmRule = iota // one request per node for the whole set, waiting in every name's queue (multi_acquire.lua)
	mmNaive               // the names one at a time in the caller's order, each a plain lock, holding the earlier ones
)

// Client phases.
const (
	mpIdle    uint8 = iota // before its call
	mpAcquire              // an attempt's round is open
	mpBackoff              // the attempt failed; it retries
	mpHeld                 // it holds its set (the naive rule: its current name; see stage)
	mpDone                 // it released its set
)

// Message kinds.
const (
	mkAcquire uint8 = iota + 1
	mkCleanup       // delete the exact value (client, att)
	mkRelease       // delete any value of the client, leave the queue
)

// mmVal is a lock key's value on a node: the client (+1; 0: no key) and the
// attempt that wrote it.
type mmVal struct{ c, att uint8 }

type mmNode struct {
	key   [mmNames]mmVal
	queue [mmNames]uint8 // bitmask of clients waiting; the head is the lowest client (priority)
}

type mmMsg struct{ kind, c, node, att, stage uint8 } // kind 0: empty slot

type mmClient struct {
	phase   uint8
	att     uint8
	stage   uint8          // the naive rule: the index of the name it is taking (0 for the set)
	won     [mmNames]uint8 // the attempt that won each stage (the set: stage 0)
	replies [mmNodes]uint8 // this attempt's answers: 0 none, 1 taken, 2 refused
}

type mmState struct {
	n    [mmNodes]mmNode
	cl   [mmClients]mmClient
	msgs [mmMsgs]mmMsg // sorted, empty slots last
}

// mmWorld is the world's fixed part.
type mmWorld struct {
	rule     mmRule
	sets     [][]uint8 // each client's names, in the caller's order
	attempts uint8     // the attempts a client may make in the explored prefix
	// firstOnly is the exclusion check's control: the acquire step checks
	// the first name of the set only, and writes them all.
	firstOnly bool
}

// names returns the names client c's current request takes.
func (w *mmWorld) names(c int, stage uint8) []uint8 {
	if w.rule == mmNaive {
		return w.sets[c][stage : stage+1]
	}
	return w.sets[c]
}

// step runs one request on its node, as the scripts do.
func (w *mmWorld) step(s *mmState, m mmMsg) uint8 {
	n := &s.n[m.node]
	me := uint8(1) << m.c
	names := w.names(int(m.c), m.stage)
	switch m.kind {
	case mkAcquire:
		ok := true
		for i, k := range names {
			if w.firstOnly && i > 0 {
				break
			}
			v := n.key[k]
			switch {
			case v.c == 0:
				q := n.queue[k] &^ me
				if q != 0 && q&(me-1) != 0 { // someone queues ahead of the caller
					ok = false
				}
			case v.c == m.c+1 && v.att <= m.att: // this attempt, or an earlier one of the call: taken over
			default:
				ok = false
			}
		}
		if !ok {
			for _, k := range names {
				n.queue[k] |= me
			}
			return 2
		}
		for _, k := range names {
			n.key[k] = mmVal{m.c + 1, m.att}
		}
		return 1
	case mkCleanup:
		for _, k := range names {
			if n.key[k] == (mmVal{m.c + 1, m.att}) {
				n.key[k] = mmVal{}
			}
		}
	case mkRelease:
		for _, k := range names {
			if n.key[k].c == m.c+1 {
				n.key[k] = mmVal{}
			}
			n.queue[k] &^= me
		}
	}
	return 0
}

func (s *mmState) send(m mmMsg) bool {
	for i := range s.msgs {
		if s.msgs[i].kind == 0 {
			s.msgs[i] = m
			s.sortMsgs()
			return true
		}
	}
	return false // the world's bound on messages in flight
}

func (s *mmState) sortMsgs() {
	for i := 1; i < mmMsgs; i++ {
		for j := i; j > 0 && mmLess(s.msgs[j], s.msgs[j-1]); j-- {
			s.msgs[j], s.msgs[j-1] = s.msgs[j-1], s.msgs[j]
		}
	}
}

func mmLess(a, b mmMsg) bool {
	if (a.kind == 0) != (b.kind == 0) {
		return b.kind == 0
	}
	ka := [5]uint8{a.kind, a.c, a.node, a.att, a.stage}
	kb := [5]uint8{b.kind, b.c, b.node, b.att, b.stage}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return false
}

// holds reports whether client c believes it holds name k.
func (w *mmWorld) holds(s *mmState, c int, k uint8) bool {
	cl := &s.cl[c]
	if w.rule == mmNaive {
		for i, x := range w.sets[c] {
			if x == k && (uint8(i) < cl.stage && cl.phase != mpDone || uint8(i) == cl.stage && cl.phase == mpHeld) {
				return true
			}
		}
		return false
	}
	if cl.phase != mpHeld {
		return false
	}
	for _, x := range w.sets[c] {
		if x == k {
			return true
		}
	}
	return false
}

// counted reports whether a key's value is one a live lease counts (its
// client believes it holds the name, and the value is of the attempt that
// won) or may yet count (the value of an attempt whose round is open).
// Any other value is a stray, which may expire at any time; a counted one
// never expires before its lease's deadline, with honest clocks.
func (w *mmWorld) counted(s *mmState, k uint8, v mmVal) bool {
	if v.c == 0 {
		return true
	}
	c := int(v.c - 1)
	if cl := &s.cl[c]; cl.phase == mpAcquire && cl.att == v.att {
		for _, x := range w.names(c, cl.stage) {
			if x == k {
				return true // an open round's: it lives at least as long as the validity it may win
			}
		}
	}
	if !w.holds(s, c, k) {
		return false
	}
	if w.rule == mmNaive {
		for i, x := range w.sets[c] {
			if x == k {
				return v.att == s.cl[c].won[i]
			}
		}
	}
	return v.att == s.cl[c].won[0]
}

// deliver delivers message i and applies its answer to its client.
func (w *mmWorld) deliver(s *mmState, i int) {
	m := s.msgs[i]
	s.msgs[i] = mmMsg{}
	s.sortMsgs()
	r := w.step(s, m)
	if m.kind != mkAcquire {
		return
	}
	cl := &s.cl[m.c]
	if cl.phase == mpAcquire && cl.att == m.att && cl.stage == m.stage {
		cl.replies[m.node] = r
		return
	}
	// A late answer: a success of an attempt that is not the lease's is
	// cleaned up; a refusal's entry is taken out again if the call ended.
	held := w.holds(s, int(m.c), w.names(int(m.c), m.stage)[0]) && cl.won[m.stage] == m.att
	if r == 1 && !held {
		s.send(mmMsg{mkCleanup, m.c, m.node, m.att, m.stage})
	}
	if r == 2 && cl.phase == mpDone {
		s.send(mmMsg{mkRelease, m.c, m.node, 0, m.stage})
	}
}

// decide ends client c's open round if its outcome is known (all is true:
// only once every node answered).
func (w *mmWorld) decide(s *mmState, c int, all bool) bool {
	cl := &s.cl[c]
	ok, refused, answered := 0, 0, 0
	for _, r := range cl.replies {
		switch r {
		case 1:
			ok++
		case 2:
			refused++
		}
		if r != 0 {
			answered++
		}
	}
	if all && answered < mmNodes || !all && !decided(ok, refused, mmNodes, mmQuorum) {
		return false
	}
	if ok >= mmQuorum {
		cl.phase, cl.won[cl.stage] = mpHeld, cl.att
		return true
	}
	for n, r := range cl.replies {
		if r == 1 {
			s.send(mmMsg{mkCleanup, uint8(c), uint8(n), cl.att, cl.stage})
		}
	}
	cl.phase = mpBackoff
	return true
}

// begin sends client c's next attempt (or its first).
func (w *mmWorld) begin(s *mmState, c int) bool {
	cl := &s.cl[c]
	cl.att++
	cl.phase, cl.replies = mpAcquire, [mmNodes]uint8{}
	for n := 0; n < mmNodes; n++ {
		if !s.send(mmMsg{mkAcquire, uint8(c), uint8(n), cl.att, cl.stage}) {
			return false
		}
	}
	return true
}

// release ends client c's hold: the set, or under the naive rule the
// current name (then the next name, or every name at the end).
func (w *mmWorld) release(s *mmState, c int) bool {
	cl := &s.cl[c]
	if w.rule == mmNaive && int(cl.stage)+1 < len(w.sets[c]) {
		cl.stage++
		cl.att = 0
		return w.begin(s, c)
	}
	last := cl.stage
	for st := uint8(0); st <= last; st++ {
		for n := 0; n < mmNodes; n++ {
			if !s.send(mmMsg{mkRelease, uint8(c), uint8(n), 0, st}) {
				return false
			}
		}
		if w.rule != mmNaive {
			break
		}
	}
	cl.phase = mpDone
	return true
}

// successors appends every state one action leads to from s.
func (w *mmWorld) successors(s *mmState, out []mmState) []mmState {
	for c := range w.sets {
		cl := s.cl[c]
		t := *s
		switch {
		case cl.phase == mpIdle || cl.phase == mpBackoff && cl.att < w.attempts:
			if w.begin(&t, c) {
				out = append(out, t)
			}
		case cl.phase == mpAcquire:
			if w.decide(&t, c, false) {
				out = append(out, t)
			}
		case cl.phase == mpHeld:
			if w.release(&t, c) {
				out = append(out, t)
			}
		}
	}
	for i := 0; i < mmMsgs && s.msgs[i].kind != 0; i++ {
		if i > 0 && s.msgs[i] == s.msgs[i-1] {
			continue
		}
		t := *s
		w.deliver(&t, i)
		out = append(out, t)
	}
	for n := 0; n < mmNodes; n++ { // a stray key's TTL runs out
		for k := uint8(0); k < mmNames; k++ {
			if v := s.n[n].key[k]; !w.counted(s, k, v) {
				t := *s
				t.n[n].key[k] = mmVal{}
				out = append(out, t)
			}
		}
	}
	return out
}

// exclusion returns a violation of exclusion in s, or "".
func (w *mmWorld) exclusion(s *mmState) string {
	for k := uint8(0); k < mmNames; k++ {
		var who []int
		for c := range w.sets {
			if w.holds(s, c, k) {
				who = append(who, c)
			}
		}
		if len(who) > 1 {
			return fmt.Sprintf("name %c held by clients %v at once", 'a'+k, who)
		}
	}
	return ""
}

// settles runs the fault-free suffix from s: every message in flight is
// delivered, strays expire, then every client acts promptly in lock step
// (each round's requests delivered before anyone decides). It reports
// whether every client finished within a bound of steps.
func (w *mmWorld) settles(s mmState) bool {
	for i := 0; i < 64; i++ {
		for s.msgs[0].kind != 0 {
			w.deliver(&s, 0)
		}
		for n := 0; n < mmNodes; n++ {
			for k := uint8(0); k < mmNames; k++ {
				if !w.counted(&s, k, s.n[n].key[k]) {
					s.n[n].key[k] = mmVal{}
				}
			}
		}
		done := true
		for c := range w.sets {
			switch s.cl[c].phase {
			case mpIdle, mpBackoff:
				w.begin(&s, c)
			case mpAcquire:
				w.decide(&s, c, true)
			case mpHeld:
				w.release(&s, c)
			}
			done = done && s.cl[c].phase == mpDone
		}
		if done {
			return true
		}
	}
	return false
}

var mmTrace = false

// mmResult is what a check of a world found.
type mmResult struct {
	states    int
	violation string // the first property violated, "" if none
}

// check explores every state reachable from the start, to depth steps.
func (w *mmWorld) check(depth int) mmResult {
	var start mmState
	seen := map[mmState]bool{start: true}
	parent := map[mmState]mmState{}
	level := []mmState{start}
	var buf []mmState
	for d := 0; d <= depth && len(level) > 0; d++ {
		var next []mmState
		for i := range level {
			s := &level[i]
			if v := w.exclusion(s); v != "" {
				if mmTrace {
					for x := *s; x != start; x = parent[x] {
						fmt.Printf("%+v\n", x)
					}
				}
				return mmResult{len(seen), v}
			}
			if !w.settles(*s) {
				return mmResult{len(seen), "no progress in the fault-free suffix from " + w.describe(s)}
			}
			buf = w.successors(s, buf[:0])
			for _, t := range buf {
				if !seen[t] {
					seen[t] = true
					if mmTrace {
						parent[t] = *s
					}
					next = append(next, t)
				}
			}
		}
		level = next
	}
	return mmResult{states: len(seen)}
}

// describe prints who holds what in s, for a violation's report.
func (w *mmWorld) describe(s *mmState) string {
	var b strings.Builder
	for c := range w.sets {
		var held []string
		for k := uint8(0); k < mmNames; k++ {
			if w.holds(s, c, k) {
				held = append(held, string(rune('a'+k)))
			}
		}
		fmt.Fprintf(&b, "client %d %v holds %v (phase %d); ", c, w.setNames(c), held, s.cl[c].phase)
	}
	return b.String()
}

func (w *mmWorld) setNames(c int) string {
	var b strings.Builder
	for _, k := range w.sets[c] {
		b.WriteRune(rune('a' + k))
	}
	return "{" + b.String() + "}"
}
