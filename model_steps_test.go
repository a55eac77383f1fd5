package redlock

// The clients' steps of the protocol model: attempts, releases, guarded
// accesses, and the delivery of messages to the nodes.

import (
	"fmt"
)

func (st *step) startAttempt(c, att uint8) {
	s, w := st.s, st.w
	cl := &s.cl[c]
	cl.phase, cl.att, cl.start = phAcquiring, att, s.now
	cl.rs, cl.rv, cl.mine = [mNodes]uint8{}, [mNodes]uint8{}, 0
	st.logf(": attempt %d sends acquire %s to all nodes", att, w.value(c, att))
	for n := 0; n < w.nodes; n++ {
		s.addMsg(packMsg(kAcqReq, mLive, c, uint8(n), att, 0))
	}
}

// release sends the release of call c to every node and ends the lock:
// every share of it (a release by either share deletes the key for both,
// as documented). Rounds still open are given up.
func (st *step) release(c uint8) {
	s := st.s
	var q uint8
	if st.w.v.grantsToAny {
		q = s.cl[c].queued // the node cannot tell that the call is over
	}
	s.cl[c] = mclient{phase: phDone, att: s.cl[c].att, queued: q} // nothing else matters once the call is over
	st.giveUpRounds(c, func(uint8) bool { return true })
	st.sendRelease(c)
}

// sendRelease sends the release of call c to every node.
func (st *step) sendRelease(c uint8) {
	for n := 0; n < st.w.nodes; n++ {
		st.s.addMsg(packMsg(kRelReq, mOrphan, c, uint8(n), 0, 0))
	}
}

// giveUpRounds gives up the live messages of client c whose kind is in
// the round: requests stay in flight, nobody waiting; replies are dropped.
func (st *step) giveUpRounds(c uint8, in func(kind uint8) bool) {
	s := st.s
	for i := int(s.nmsg) - 1; i >= 0; i-- {
		mm := s.msgs[i]
		if mm.client() != c || mm.mode() != mLive || !in(mm.kind()) {
			continue
		}
		s.delMsg(i)
		if mm.kind()%2 == 0 {
			s.addMsg(mm.withMode(mOrphan))
		}
	}
}

// cleanup sends the exact compare-and-delete of attempt att of c to node n.
func (st *step) cleanup(c, n, att uint8) {
	st.s.addMsg(packMsg(kCleanReq, mOrphan, c, n, att, 0))
}

func (st *step) access(c uint8, stale bool) {
	s, w := st.s, st.w
	cl := &s.cl[c]
	tok := c + 1
	how := "while valid"
	if stale {
		cl.accessed |= 2
		how = "after a pause past its deadline"
	} else {
		cl.accessed |= 1
	}
	h, o, ok := guardAccess(s.gHigh, s.gOwner, cl.fence, tok, w.v.ownerGuard)
	if !ok {
		st.logf("c%d accesses the guard %s with fence %d: refused (highest %d, owner T%d)", c, how, cl.fence, s.gHigh, s.gOwner)
		return
	}
	st.logf("c%d accesses the guard %s with fence %d: accepted", c, how, cl.fence)
	s.gHigh, s.gOwner = h, o
	for i := 0; i < int(s.nacc); i++ {
		if f, t := uint8(s.acc[i]>>8), uint8(s.acc[i]); f == cl.fence && t != tok {
			st.violate(2, "the guard accepted fence %d from T%d and from T%d", f, t, tok)
		}
	}
	e := uint16(cl.fence)<<8 | uint16(tok)
	for i := 0; i < int(s.nacc); i++ {
		if s.acc[i] == e {
			return
		}
	}
	if int(s.nacc) == mAcc {
		panic("model: too many guard accesses; raise mAcc")
	}
	insertSorted(s.acc[:], int(s.nacc), e)
	s.nacc++
}

// deliver runs message i: a request at its node, or a reply at its client.
// to (client+1) is the waiting call a release that deletes the key or
// finds it free, or a cleanup that deletes it, grants it to; 0 for none.
func (st *step) deliver(i int, to uint8) {
	s, w := st.s, st.w
	m := s.msgs[i]
	s.delMsg(i)
	c, n, att := m.client(), m.node(), m.att()
	nd := &s.nodes[n]
	reply := func(kind, val uint8) {
		if m.mode() != mOrphan {
			s.addMsg(packMsg(kind, m.mode(), c, n, att, val))
		}
	}
	switch m.kind() {
	case kAcqReq:
		v := w.value(c, att)
		before := nd.key
		var ok bool
		var ctr uint8
		if w.v.grants && !w.v.grantTakeOver {
			*nd, ok, ctr = nodeAcquireKeep(*nd, s.now, w.ttl, v)
		} else {
			*nd, ok, ctr = nodeAcquire(*nd, s.now, w.ttl, v)
		}
		if ok && nd.key == v {
			nd.setBy = att // (a grant "T.0" kept keeps its ghost)
		}
		if ok {
			st.logf("c%d attempt %d: acquire %s delivered at n%d (key was %s) → granted, counter %d", c, att, v, n, w.show(before), ctr)
		} else {
			st.logf("c%d attempt %d: acquire %s delivered at n%d → refused (held by %s)", c, att, v, n, w.show(before))
		}
		if cl := &s.cl[c]; w.v.grants && (cl.inCall() || w.v.grantsToAny) {
			cl.queued |= 1 << n // the call has a queue entry on the node
		}
		if ok || m.mode() == mLive {
			reply(kAcqRep, ctr) // a late refusal changes nothing: not sent
		}
	case kWbReq:
		*nd, _ = nodeWriteBack(*nd, m.val())
		st.logf("c%d attempt %d: write-back %d delivered at n%d → counter %d", c, att, m.val(), n, nd.ctr)
		reply(kWbRep, 1)
	case kExtReq:
		var ok bool
		*nd, ok = w.extendStep(*nd, s.now, w.ttl, c+1, s.cl[c].holdAtt)
		st.logf("c%d extend delivered at n%d (key %s) → %v", c, n, w.show(nd.key), map[bool]string{true: "extended", false: "not ours"}[ok])
		r := uint8(0)
		if ok {
			r = 1
		}
		reply(kExtRep, r)
	case kCleanReq:
		v := w.value(c, att)
		key, setBy := nd.key, nd.setBy
		var ok bool
		*nd, ok = nodeCleanup(*nd, v)
		if ok {
			st.logf("c%d attempt %d: cleanup of %s delivered at n%d → deleted", c, att, v, n)
			if key.tok != c+1 || setBy != att {
				st.violate(4, "the cleanup of attempt %d of T%d deleted the key %s that %s, on n%d", att, c+1, w.show(key), setByString(setBy, key.tok), n)
			}
			st.grant(n, to)
		} else {
			st.logf("c%d attempt %d: cleanup of %s delivered at n%d → nothing (key %s)", c, att, v, n, w.show(key))
		}
	case kRelReq:
		key, setBy := nd.key, nd.setBy
		var ok bool
		*nd, ok = nodeRelease(*nd, c+1)
		st.logf("c%d release delivered at n%d (key %s) → %v", c, n, w.show(key), map[bool]string{true: "deleted", false: "nothing"}[ok])
		if ok && key.tok != c+1 {
			st.violate(4, "the release of T%d deleted the key %s that %s, on n%d", c+1, w.show(key), setByString(setBy, key.tok), n)
		}
		st.grant(n, to)
	case kGrantNote:
		cl := &s.cl[c]
		if cl.inCall() {
			cl.gn[n] = max(cl.gn[n], m.val())
			st.logf("n%d's grant notice (counter %d) delivered to c%d → recorded", n, m.val(), c)
		} else {
			st.logf("n%d's grant notice (counter %d) delivered to c%d → dropped (the call holds or is over)", n, m.val(), c)
		}
	case kShareReq:
		st.deliverShare(m)
	case kAcqRep, kWbRep, kExtRep, kShareRep:
		st.logf("c%d %s from n%d (attempt %d) delivered", c, kindNames[m.kind()], n, att)
		st.answer(m, answerOf(m))
	}
}

// grant runs the grant step of a release or cleanup at node n that left
// its key free: to (client+1) is the waiting call it grants the key to, 0
// for none.
func (st *step) grant(n, to uint8) {
	if to == 0 {
		return
	}
	s, w := st.s, st.w
	nd := &s.nodes[n]
	wc := to - 1
	var ctr uint8
	*nd, ctr = nodeGrant(*nd, s.now, w.ttl, wc+1)
	nd.setBy = sbGrant
	st.logf(", granted to the waiting c%d: key %s, counter %d; grant notice sent", wc, w.show(nd.key), ctr)
	s.addMsg(packMsg(kGrantNote, mOrphan, wc, n, 0, ctr))
}

// setByString says who set a key (ghost setBy) of call tok, for a trace.
func setByString(setBy, tok uint8) string {
	if setBy == sbGrant {
		return fmt.Sprintf("a release granted to T%d", tok)
	}
	return fmt.Sprintf("attempt %d of T%d set", setBy, tok)
}

// answerOf reads a reply: a grant (its counter > 0), an ack, or "extended"
// are yes; a refusal or "not ours" is no.
func answerOf(m mmsg) uint8 {
	if m.val() > 0 {
		return rsOK
	}
	return rsRefused
}

// fail makes the client see an error for message i: a request (which stays
// in flight, given up on: the node may still run it) or a reply (lost after
// the node ran the script).
func (st *step) fail(i int) {
	s := st.s
	m := s.msgs[i]
	s.delMsg(i)
	if m.kind()%2 == 0 { // a request
		st.logf("c%d %s to n%d (attempt %d) times out: error; the request stays in flight", m.client(), kindNames[m.kind()], m.node(), m.att())
		s.addMsg(m.withMode(mOrphan))
	} else {
		st.logf("c%d %s from n%d (attempt %d) lost: error", m.client(), kindNames[m.kind()], m.node(), m.att())
	}
	st.answer(m, rsError)
}
