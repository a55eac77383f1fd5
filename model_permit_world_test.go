package redlock

// The world of the semaphore model (model_permit_test.go, docs/model.md):
// the actions enabled in a state, how one changes it, the node steps of
// both designs and the properties checked after each step.

import (
	"fmt"
	"strings"
	"time"
)

// semAct is one action: its kind, an argument (client or message index)
// and the slot an attempt tries.
type semAct struct{ kind, arg, slot uint8 }

// Actions of the semaphore model.
const (
	saTry     uint8 = iota // the client begins its call, or retries after a failed attempt, on a slot of its choice
	saRelease              // the client releases its permit (also after its deadline)
	saDeliver              // a message reaches its node or its client
	saFail                 // a take the client waits for fails: it sees an error; the request stays in flight
	saLose                 // a message nobody waits for is lost
	saTick                 // time passes one tick
)

// actions appends every action enabled in s.
func (w *semWorld) actions(s *semState, out []semAct) []semAct {
	slots := w.limit
	if w.design == semCounted {
		slots = 1 // the client names no slot
	}
	for c := 0; c < w.clients; c++ {
		switch cl := &s.cl[c]; {
		case cl.phase == spIdle || cl.phase == spFailed && int(cl.att) < w.attempts:
			for k := 0; k < slots; k++ {
				out = append(out, semAct{saTry, uint8(c), uint8(k)})
			}
		case cl.phase == spHeld || cl.phase == spLapsed:
			out = append(out, semAct{saRelease, uint8(c), 0})
		}
	}
	for i := 0; i < int(s.nmsg); i++ {
		if i > 0 && s.msgs[i] == s.msgs[i-1] {
			continue // the same message twice: the same successors
		}
		out = append(out, semAct{saDeliver, uint8(i), 0})
		if w.loss {
			if s.msgs[i].mode() == mOrphan {
				out = append(out, semAct{saLose, uint8(i), 0})
			} else {
				out = append(out, semAct{saFail, uint8(i), 0})
			}
		}
	}
	if !w.noTime {
		out = append(out, semAct{saTick, 0, 0})
	}
	return out
}

// semStep carries one action's bookkeeping: the log of a trace being
// printed (nil while searching).
type semStep struct {
	w   *semWorld
	s   *semState
	log *strings.Builder
}

func (st *semStep) logf(format string, args ...any) {
	if st.log != nil {
		fmt.Fprintf(st.log, format, args...)
	}
}

// apply performs action a on s.
func (w *semWorld) apply(s *semState, a semAct, log *strings.Builder) {
	st := &semStep{w: w, s: s, log: log}
	st.logf("t=%d ", s.now)
	c := a.arg
	switch a.kind {
	case saTry:
		cl := &s.cl[c]
		cl.phase, cl.att, cl.slot, cl.start = spTrying, cl.att+1, a.slot, s.now
		cl.rs = [semNodes]uint8{}
		st.logf("c%d attempt %d: take %s for %s sent to all nodes", c, cl.att, w.slot(a.slot), semValue(c, cl.att))
		for n := 0; n < w.nodes; n++ {
			s.addMsg(packSemMsg(skTake, mLive, c, uint8(n), a.slot, cl.att))
		}
	case saRelease:
		cl := &s.cl[c]
		st.logf("c%d releases %s: release sent to all nodes", c, w.slot(cl.slot))
		for n := 0; n < w.nodes; n++ {
			s.addMsg(packSemMsg(skRelease, mOrphan, c, uint8(n), cl.slot, 0))
		}
		*cl = semClient{phase: spDone, att: cl.att}
	case saDeliver:
		st.deliver(int(a.arg))
	case saFail:
		m := s.msgs[a.arg]
		s.delMsg(int(a.arg))
		st.logf("c%d take of %s at n%d (attempt %d) times out: error; the request stays in flight", m.client(), w.slot(m.slot()), m.node(), m.att())
		s.addMsg(m.withMode(mOrphan))
		st.answer(m, rsError)
	case saLose:
		m := s.msgs[a.arg]
		st.logf("c%d %s to n%d (attempt %d) lost", m.client(), semKindNames[m.kind()], m.node(), m.att())
		s.delMsg(int(a.arg))
	case saTick:
		st.tick()
	}
	st.logf("\n")
}

// tick passes one tick: keys whose TTL has elapsed expire (honest clocks:
// never before the holder's deadline), and a permit whose deadline has
// passed is no longer believed.
func (st *semStep) tick() {
	s, w := st.s, st.w
	s.now++
	st.logf("time passes → t=%d", s.now)
	for n := 0; n < w.nodes; n++ {
		for k := 0; k < w.limit; k++ {
			if key := &s.nodes[n][k]; key.key.tok != 0 && key.exp <= s.now {
				if w.design == semCounted {
					st.logf("; n%d's permit %s expires", n, key.key)
				} else {
					st.logf("; n%d's slot %d key %s expires", n, k, key.key)
				}
				*key = mnode{}
			}
		}
	}
	for c := 0; c < w.clients; c++ {
		if cl := &s.cl[c]; cl.phase == spHeld && cl.dl <= s.nowMs() {
			st.logf("; c%d's permit lapses at its deadline", c)
			cl.phase = spLapsed
		}
	}
}

// deliver runs message i: a request at its node, or a reply at its client.
func (st *semStep) deliver(i int) {
	s, w := st.s, st.w
	m := s.msgs[i]
	s.delMsg(i)
	c, n, slot, att := m.client(), m.node(), m.slot(), m.att()
	nd := &s.nodes[n]
	switch m.kind() {
	case skTake:
		v := semValue(c, att)
		ok := w.take(nd, slot, s.now, v)
		switch {
		case st.log == nil:
		case ok:
			st.logf("c%d attempt %d: take %s for %s delivered at n%d → granted", c, att, w.slot(slot), v, n)
		default:
			st.logf("c%d attempt %d: take %s for %s delivered at n%d → refused (%s)", c, att, w.slot(slot), v, n, w.showNode(nd))
		}
		if m.mode() != mOrphan {
			r := rsRefused
			if ok {
				r = rsOK
			}
			st.answer(m, r)
		}
	case skCleanup:
		v := semValue(c, att)
		deleted := false
		for k := w.firstPlace(slot); k <= w.lastPlace(slot); k++ {
			var ok bool
			nd[k], ok = nodeCleanup(nd[k], v)
			deleted = deleted || ok
		}
		st.logf("c%d attempt %d: cleanup of %s delivered at n%d → %v", c, att, v, n, semDeleted(deleted))
	case skRelease:
		deleted := false
		for k := w.firstPlace(slot); k <= w.lastPlace(slot); k++ {
			var ok bool
			nd[k], ok = nodeRelease(nd[k], c+1)
			deleted = deleted || ok
		}
		st.logf("c%d release of %s delivered at n%d → %v", c, w.slot(slot), n, semDeleted(deleted))
	}
}

// answer gives the client of m the answer r (rsOK, rsRefused, rsError) of
// m's node.
func (st *semStep) answer(m semMsg, r uint8) {
	s, w := st.s, st.w
	c, n := m.client(), m.node()
	cl := &s.cl[c]
	if m.mode() == mLate {
		switch {
		case r == rsRefused:
		case cl.phase == spHeld && cl.att == m.att():
			st.logf(" (late: belongs to the permit)")
		default:
			st.logf(" (late: attempt %d failed or its permit ended: cleanup sent)", m.att())
			s.addMsg(packSemMsg(skCleanup, mOrphan, c, n, m.slot(), m.att()))
		}
		return
	}
	cl.rs[n] = r
	ok, failed := 0, 0
	for i := 0; i < w.nodes; i++ {
		switch cl.rs[i] {
		case rsOK:
			ok++
		case rsRefused, rsError:
			failed++
		}
	}
	if !decided(ok, failed, w.nodes, w.quorum()) {
		return
	}
	// The round is decided: its other messages are late.
	for i := int(s.nmsg) - 1; i >= 0; i-- {
		mm := s.msgs[i]
		if mm.client() != c || mm.mode() != mLive {
			continue
		}
		s.delMsg(i)
		s.addMsg(mm.withMode(mLate))
	}
	elapsed := time.Duration(s.now-cl.start) * tick
	v := validity(w.ttlDur(), elapsed, w.factor)
	startMs := int32(cl.start) * int32(tick/time.Millisecond)
	if w.leaseFromDecision {
		v, startMs = validity(w.ttlDur(), 0, w.factor), s.nowMs()
	}
	if ok >= w.quorum() && v > 0 && startMs+int32(v/time.Millisecond) > s.nowMs() {
		cl.phase, cl.dl, cl.rs = spHeld, startMs+int32(v/time.Millisecond), [semNodes]uint8{}
		st.logf(" → c%d HOLDS a permit: %s (granted by %d), valid until %dms", c, w.slot(cl.slot), ok, cl.dl)
		return
	}
	st.logf(" → attempt %d failed (%d granted, validity %v): cleanup sent", cl.att, ok, v)
	for i := 0; i < w.nodes; i++ {
		if cl.rs[i] == rsOK || cl.rs[i] == rsError {
			s.addMsg(packSemMsg(skCleanup, mOrphan, c, uint8(i), cl.slot, cl.att))
		}
	}
	cl.phase, cl.rs = spFailed, [semNodes]uint8{}
	if int(cl.att) >= w.attempts {
		*cl = semClient{phase: spDone, att: cl.att}
		st.logf("; c%d gives up", c)
	}
}

// Properties of the semaphore model, as bits of semRun.props.
const (
	spLimit    = 1 << 1 // 1: at most limit clients believe a valid permit
	spDistinct = 1 << 2 // 2: no two believed permits name one slot
	spQuorum   = 1 << 3 // 3: every believed permit's value is on its slot at a quorum of the nodes
	spAll      = spLimit | spDistinct | spQuorum
)

// check reports a violation of a property of props in s, if any.
// Property 3 is the invariant behind the other two (two majorities share a
// node, whose slot key holds one value); it fails in fewer steps.
func (w *semWorld) check(s *semState, props uint8) *mviolation {
	var who []int
	for c := 0; c < w.clients; c++ {
		if s.believes(c) {
			who = append(who, c)
		}
	}
	if props&spLimit != 0 && len(who) > w.limit {
		return &mviolation{prop: 1, why: fmt.Sprintf("%d clients %v believe a valid permit at t=%d; the limit is %d", len(who), who, s.now, w.limit)}
	}
	if props&spDistinct != 0 && w.design == semSlotted {
		for i, a := range who {
			for _, b := range who[i+1:] {
				if s.cl[a].slot == s.cl[b].slot {
					return &mviolation{prop: 2, why: fmt.Sprintf("c%d and c%d both believe a permit of slot %d at t=%d", a, b, s.cl[a].slot, s.now)}
				}
			}
		}
	}
	if props&spQuorum != 0 {
		for _, c := range who {
			v, held := semValue(uint8(c), s.cl[c].att), 0
			for n := 0; n < w.nodes; n++ {
				for k := w.firstPlace(s.cl[c].slot); k <= w.lastPlace(s.cl[c].slot); k++ {
					if s.nodes[n][k].key == v {
						held++
					}
				}
			}
			if held < w.quorum() {
				return &mviolation{prop: 3, why: fmt.Sprintf("c%d believes a permit (%s) at t=%d, but only %d nodes hold %s (quorum %d)", c, w.slot(s.cl[c].slot), s.now, held, v, w.quorum())}
			}
		}
	}
	return nil
}
