package redlock

// The world of the protocol model (see model_test.go and docs/model.md):
// the actions enabled in a state, how one changes it, and the properties
// checked after each.

import (
	"fmt"
	"strings"
)

// mact is one action: its kind and an argument (client, node or message
// index); to is the grantee (client+1) of a release delivered with a grant,
// 0 for none, and the resumed share's TTL for aResume.
type mact struct{ kind, arg, to uint8 }

// actions appends every action enabled in s.
func (w *world) actions(s *mstate, out []mact) []mact {
	for c := 0; c < w.clients; c++ {
		cl := &s.cl[c]
		a := uint8(c)
		switch cl.phase {
		case phIdle:
			out = append(out, mact{aBegin, a, 0})
		case phFailed:
			if int(cl.att) < w.attempts {
				out = append(out, mact{aRetry, a, 0})
			} else if w.v.grants {
				out = append(out, mact{aGiveUp, a, 0})
			}
			if w.v.grants {
				if _, _, ok := w.grantPath(s, c); ok {
					out = append(out, mact{aGrantPath, a, 0})
				}
			}
		case phHeld:
			valid := w.believes(s, c)
			if !cl.extRound {
				if valid && int(cl.extends) < w.extends {
					out = append(out, mact{aExtend, a, 0})
				}
				if !w.noRelease {
					out = append(out, mact{aRelease, a, 0})
				}
			}
			if valid && cl.accessed&1 == 0 {
				out = append(out, mact{aAccess, a, 0})
			}
			if w.f.pauses && !valid && cl.accessed&2 == 0 {
				out = append(out, mact{aStaleAccess, a, 0})
			}
		}
		out = w.shareActions(s, c, out)
	}
	for i := 0; i < int(s.nmsg); i++ {
		if i > 0 && s.msgs[i] == s.msgs[i-1] {
			continue // the same message twice: the same successors
		}
		m := s.msgs[i]
		out = append(out, mact{aDeliver, uint8(i), 0})
		nd := s.nodes[m.node()]
		if w.v.grants && (m.kind() == kRelReq && (nd.key.tok == m.client()+1 || nd.key.tok == 0) ||
			m.kind() == kCleanReq && nd.key.tok != 0 && nd.key == w.value(m.client(), m.att())) {
			// The release deletes the key or finds it free, or the cleanup
			// deletes it: it may grant it to any waiting call.
			for c := 0; c < w.clients; c++ {
				if w.grantable(s, c, m.node()) {
					out = append(out, mact{aDeliver, uint8(i), uint8(c + 1)})
				}
			}
		}
		if w.f.loss {
			if m.mode() == mOrphan {
				out = append(out, mact{aLose, uint8(i), 0})
			} else {
				out = append(out, mact{aFail, uint8(i), 0})
			}
		}
	}
	if !w.noTime {
		out = append(out, mact{aTick, 0, 0})
	}
	for n := 0; n < w.nodes; n++ {
		if w.f.earlyExpiry && s.nodes[n].key.tok != 0 {
			out = append(out, mact{aExpire, uint8(n), 0})
		}
		if w.f.amnesia && (s.nodes[n].key.tok != 0 || s.nodes[n].ctr != 0) {
			out = append(out, mact{aAmnesia, uint8(n), 0})
		}
	}
	return out
}

// mviolation is a property found violated by a step.
type mviolation struct {
	prop int
	why  string
}

// step carries one action's bookkeeping: the log of a trace being printed
// (nil while searching) and the first violation found.
type step struct {
	w   *world
	s   *mstate
	log *strings.Builder
	bad *mviolation
}

func (st *step) logf(format string, args ...any) {
	if st.log != nil {
		fmt.Fprintf(st.log, format, args...)
	}
}

func (st *step) violate(prop int, format string, args ...any) {
	if st.bad == nil {
		st.bad = &mviolation{prop: prop, why: fmt.Sprintf(format, args...)}
	}
}

// apply performs action a on s. It returns the violation of property 1, 2
// or 4 the step made, if any (property 3 is a property of states: see
// check).
func (w *world) apply(s *mstate, a mact, log *strings.Builder) *mviolation {
	st := &step{w: w, s: s, log: log}
	if log != nil {
		fmt.Fprintf(log, "t=%d ", s.now)
	}
	c := a.arg
	switch a.kind {
	case aBegin:
		cl := &s.cl[c]
		cl.floor, cl.begin = s.doneMax, s.now
		st.logf("c%d begins Acquire (token T%d)", c, c+1)
		st.startAttempt(c, 1)
	case aRetry:
		st.logf("c%d retries", c)
		st.startAttempt(c, s.cl[c].att+1)
	case aExtend:
		cl := &s.cl[c]
		cl.extends++
		cl.extRound, cl.start = true, s.now
		cl.rs = [mNodes]uint8{}
		st.logf("c%d extends: extend sent to all nodes", c)
		for n := 0; n < w.nodes; n++ {
			s.addMsg(packMsg(kExtReq, mLive, c, uint8(n), cl.extends, 0))
		}
	case aRelease:
		st.logf("c%d releases: release sent to all nodes", c)
		st.release(c)
	case aAccess, aStaleAccess:
		st.access(c, a.kind == aStaleAccess)
	case aDeliver:
		st.deliver(int(a.arg), a.to)
	case aFail:
		st.fail(int(a.arg))
	case aLose:
		m := s.msgs[a.arg]
		if m.kind() == kGrantNote {
			st.logf("n%d's grant notice to c%d lost", m.node(), m.client())
		} else {
			st.logf("c%d %s to n%d (attempt %d) lost", m.client(), kindNames[m.kind()], m.node(), m.att())
		}
		s.delMsg(int(a.arg))
	case aTick:
		s.now++
		st.logf("time passes → t=%d", s.now)
		for n := 0; n < w.nodes; n++ {
			if nd := &s.nodes[n]; nd.key.tok != 0 && nd.exp <= s.now {
				st.logf("; n%d's key %s expires", n, w.show(nd.key))
				nd.key, nd.exp, nd.setBy = mval{}, 0, 0
			}
		}
	case aExpire:
		nd := &s.nodes[a.arg]
		st.logf("n%d's key %s expires early (clock jump)", a.arg, w.show(nd.key))
		nd.key, nd.exp, nd.setBy = mval{}, 0, 0
	case aAmnesia:
		st.logf("n%d restarts without its data (key %s and counter %d gone)", a.arg, w.show(s.nodes[a.arg].key), s.nodes[a.arg].ctr)
		s.nodes[a.arg] = mnode{}
	case aGiveUp:
		st.logf("c%d gives up: release sent to all nodes", c)
		st.release(c)
	case aGrantPath:
		st.takeGrant(c)
	case aResume:
		st.resume(c, a.to)
	case aShareExtend:
		st.shareExtend(c)
	case aShareRelease:
		st.logf("c%d's resumed share releases: release sent to all nodes (the lease ends for both shares)", c)
		st.release(c)
	}
	st.logf("\n")
	return st.bad
}

// check reports a violation of property 3 (mutual exclusion) in s, if props
// asks for it. A holder is every share of a lease that believes it holds:
// the client's own lock and its resumed share, if any. It checks a
// stronger invariant too, which implies it and fails sooner (in fewer
// steps): every holder has a value of its call on a quorum of the nodes.
// (Two such quorums would share a node, which holds one value.) With
// w.mutexOnly it checks the property as stated only: two holders of
// different calls at once.
func (w *world) check(s *mstate, props uint8) *mviolation {
	if props&(1<<3) == 0 {
		return nil
	}
	first, firstWho := -1, ""
	for c := 0; c < w.clients; c++ {
		var who string
		won := s.cl[c].holdAtt
		switch {
		case w.believes(s, c) && w.shareBelieves(s, c):
			who = fmt.Sprintf("c%d and its resumed share", c)
		case w.believes(s, c):
			who = fmt.Sprintf("c%d", c)
		case w.shareBelieves(s, c):
			who, won = fmt.Sprintf("c%d's resumed share", c), s.cl[c].sh.won
		default:
			continue
		}
		if first >= 0 {
			return &mviolation{prop: 3, why: fmt.Sprintf("%s and %s both believe they hold the lock at t=%d", firstWho, who, s.now)}
		}
		first, firstWho = c, who
		if w.mutexOnly {
			continue
		}
		// The values the lease counts (docs/design.md, "What a lease
		// counts"): the one it won and the call's grant; a stray value of
		// a failed attempt may be deleted by that attempt's cleanup.
		lease, grant := mval{uint8(c + 1), won}, mval{uint8(c + 1), 0}
		held := 0
		for n := 0; n < w.nodes; n++ {
			if k := s.nodes[n].key; k.tok != 0 && (k == lease || k == grant) {
				held++
			}
		}
		if held < w.quorum() {
			return &mviolation{prop: 3, why: fmt.Sprintf("%s believes it holds the lock at t=%d, but only %d nodes hold the value it won, %s, or its grant (quorum %d): another client can take it", who, s.now, held, w.show(lease), w.quorum())}
		}
	}
	return nil
}
