package redlock

// The clients' side of the protocol model: what a client does with each
// answer, a hold, a grant and a late answer.

import (
	"math/bits"
	"time"
)

// answer gives the client of m the answer r (ok, refused, error) of m's node.
func (st *step) answer(m mmsg, r uint8) {
	c, n := m.client(), m.node()
	if m.mode() == mLate {
		st.late(c, n, m.att(), r)
		return
	}
	if isShare(m.kind()) {
		st.answerShare(m, r)
		return
	}
	s := st.s
	cl := &s.cl[c]
	cl.rs[n] = r
	if m.kind() == kAcqReq || m.kind() == kAcqRep {
		if r == rsOK {
			cl.rv[n] = m.val()
		}
		if r != rsRefused {
			cl.mine |= 1 << n
		}
	}
	ok, failed := 0, 0
	for i := 0; i < st.w.nodes; i++ {
		switch cl.rs[i] {
		case rsOK:
			ok++
		case rsRefused, rsError:
			failed++
		}
	}
	w := st.w
	if !decided(ok, failed, w.nodes, w.quorum()) {
		return
	}
	// The round is decided: its other messages are late (acquire) or
	// given up (write-back, extend).
	for i := int(s.nmsg) - 1; i >= 0; i-- {
		mm := s.msgs[i]
		if mm.client() != c || mm.mode() != mLive || isShare(mm.kind()) {
			continue
		}
		s.delMsg(i)
		switch {
		case mm.kind() == kAcqRep && mm.val() == 0:
			// A refusal: nothing of ours on that node, nothing to do late.
		case mm.kind() == kAcqReq || mm.kind() == kAcqRep:
			s.addMsg(mm.withMode(mLate))
		case mm.kind()%2 == 0:
			s.addMsg(mm.withMode(mOrphan))
		}
	}
	elapsed := time.Duration(s.now-cl.start) * tick
	v := validity(w.ttlDur(), elapsed, w.factor)
	startMs := int32(cl.start) * int32(tick/time.Millisecond)
	if w.v.leaseFromDecision {
		v, startMs = validity(w.ttlDur(), 0, w.factor), s.nowMs()
	}
	if cl.viaGrant && w.v.grantLeaseFullTTL {
		v = validity(w.ttlDur(), 0, w.factor) // from the call's begin (cl.start)
	}
	timely := v > 0 && startMs+int32(v/time.Millisecond) > s.nowMs()
	switch {
	case cl.extRound:
		cl.extRound = false
		notOurs := 0
		for i := 0; i < w.nodes; i++ {
			if cl.rs[i] == rsRefused {
				notOurs++
			}
		}
		if ok >= w.quorum() && timely && w.believes(s, int(c)) {
			cl.dl = startMs + int32(v/time.Millisecond)
			st.logf(" → extend succeeded, valid until %dms", cl.dl)
			return
		}
		cl.dl = min(cl.dl, startMs+int32(v/time.Millisecond))
		if notOurs >= w.quorum() {
			st.logf(" → extend failed, a majority said not ours: lock lost")
			st.lose(c)
			return
		}
		if w.v.extendFailLoses {
			st.logf(" → extend failed: lock lost (Lock.Extend)")
			st.lose(c)
			return
		}
		st.logf(" → extend failed, valid until %dms", cl.dl)
	case cl.phase == phAcquiring:
		if ok >= w.quorum() && timely {
			var granted []uint64
			for i := 0; i < w.nodes; i++ {
				if cl.rs[i] == rsOK {
					granted = append(granted, uint64(cl.rv[i]))
				}
			}
			plan := planFence(granted, w.quorum())
			if plan.writeBack && w.v.writeBack {
				cl.phase, cl.wbF = phWriteBack, uint8(plan.fence)
				cl.rs = [mNodes]uint8{}
				st.logf(" → granted by %d, F=%d held by fewer than a quorum: write-back %d sent to all nodes", ok, plan.fence, plan.fence)
				for n := 0; n < w.nodes; n++ {
					s.addMsg(packMsg(kWbReq, mLive, c, uint8(n), cl.att, cl.wbF))
				}
				return
			}
			st.hold(c, uint8(plan.fence), startMs+int32(v/time.Millisecond))
			return
		}
		st.logf(" → attempt %d failed (%d granted, validity %v)", cl.att, ok, v)
		st.failAttempt(c)
	case cl.phase == phWriteBack:
		if ok >= w.quorum() && timely {
			st.hold(c, cl.wbF, startMs+int32(v/time.Millisecond))
			return
		}
		if cl.viaGrant {
			st.logf(" → write-back failed (%d acks, validity %v): the grant path failed", ok, v)
		} else {
			st.logf(" → write-back failed (%d acks, validity %v): attempt %d failed", ok, v, cl.att)
		}
		st.failAttempt(c)
	}
}

func (st *step) hold(c, fence uint8, dl int32) {
	s := st.s
	cl := &s.cl[c]
	cl.phase, cl.fence, cl.holdAtt, cl.dl = phHeld, fence, cl.att, dl
	if cl.viaGrant {
		cl.holdAtt = 0 // no attempt's late answers belong to the lock
	}
	cl.lateAtt, cl.gn = [mNodes]uint8{}, [mNodes]uint8{}
	if !st.w.v.grantsToAny {
		cl.queued = 0
	}
	st.logf(" → c%d HOLDS the lock with fence %d, valid until %dms", c, fence, dl)
	if fence <= cl.floor {
		st.violate(1, "c%d holds with fence %d, but an acquisition with fence %d completed before its call began", c, fence, cl.floor)
	}
	cl.floor, cl.mine = 0, 0
	s.doneMax = max(s.doneMax, fence)
}

// failAttempt cleans up after a failed attempt: the exact value on every node
// that granted or errored (and, old claim, the late grants recorded).
func (st *step) failAttempt(c uint8) {
	s, w := st.s, st.w
	cl := &s.cl[c]
	for n := uint8(0); int(n) < w.nodes; n++ {
		if cl.mine&(1<<n) != 0 {
			st.cleanup(c, n, cl.att)
		}
		if a := cl.lateAtt[n]; a != 0 {
			st.cleanup(c, n, a)
		}
	}
	cl.lateAtt, cl.mine = [mNodes]uint8{}, 0
	cl.phase, cl.viaGrant = phFailed, false
	if int(cl.att) >= w.attempts && !w.v.grants {
		*cl = mclient{phase: phDone, att: cl.att}
		st.logf("; c%d gives up", c)
	}
}

// grantable reports whether a release on node n may grant the key to
// client c: the call has a queue entry there and is waiting (or, with
// grantsToAny, whatever the call is doing: the node cannot tell).
func (w *world) grantable(s *mstate, c int, n uint8) bool {
	cl := &s.cl[c]
	return cl.queued&(1<<n) != 0 && (cl.inCall() || w.v.grantsToAny)
}

// grantPath reports whether client c, between attempts, may hold through
// the grant path now: notices from a quorum of nodes, and a lease counted
// from the call's begin (a lower bound of every grant's time) still ahead.
// It returns the lease's start (ms) and the validity.
func (w *world) grantPath(s *mstate, c int) (int32, time.Duration, bool) {
	cl := &s.cl[c]
	if cl.phase != phFailed {
		return 0, 0, false
	}
	n := 0
	for i := 0; i < w.nodes; i++ {
		if cl.gn[i] > 0 {
			n++
		}
	}
	if n < w.quorum() {
		return 0, 0, false
	}
	elapsed := time.Duration(s.now-cl.begin) * tick
	startMs := int32(cl.begin) * int32(tick/time.Millisecond)
	if w.v.grantLeaseFromDecision {
		elapsed, startMs = 0, s.nowMs()
	}
	if w.v.grantLeaseFullTTL {
		elapsed = 0
	}
	v := validity(w.ttlDur(), elapsed, w.factor)
	return startMs, v, v > 0 && startMs+int32(v/time.Millisecond) > s.nowMs()
}

// takeGrant holds through the grant path: F from the notices' counters,
// written back if fewer than a quorum returned it (a round like an
// attempt's, its validity counted from the call's begin too).
func (st *step) takeGrant(c uint8) {
	s, w := st.s, st.w
	cl := &s.cl[c]
	startMs, v, _ := w.grantPath(s, int(c))
	var granted []uint64
	for i := 0; i < w.nodes; i++ {
		if cl.gn[i] > 0 {
			granted = append(granted, uint64(cl.gn[i]))
		}
	}
	plan := planFence(granted, w.quorum())
	cl.viaGrant = true
	cl.start = cl.begin
	if w.v.grantLeaseFromDecision {
		cl.start = s.now
	}
	st.logf("c%d takes the grant path: notices from %d nodes, validity %v from t=%d", c, len(granted), v, cl.start)
	if plan.writeBack && w.v.writeBack {
		cl.phase, cl.wbF = phWriteBack, uint8(plan.fence)
		cl.rs, cl.rv = [mNodes]uint8{}, [mNodes]uint8{}
		st.logf(", F=%d held by fewer than a quorum: write-back %d sent to all nodes", plan.fence, plan.fence)
		for n := 0; n < w.nodes; n++ {
			s.addMsg(packMsg(kWbReq, mLive, c, uint8(n), cl.att, cl.wbF))
		}
		return
	}
	st.hold(c, uint8(plan.fence), startMs+int32(v/time.Millisecond))
}

// late handles an answer to an acquire request of attempt att, decided
// before it came.
func (st *step) late(c, n, att, r uint8) {
	s, w := st.s, st.w
	cl := &s.cl[c]
	if r == rsRefused || (r == rsError && !w.v.lateErrors) {
		return
	}
	ended := cl.phase == phDone || (cl.phase == phHeld && !w.believes(s, int(c)))
	if !w.v.perAttempt {
		// The old claim: one token for all attempts.
		switch {
		case ended:
			st.logf(" (late: call over, cleanup sent)")
			st.cleanup(c, n, att)
		case cl.phase == phHeld:
			st.logf(" (late: belongs to the lock)")
		default:
			st.logf(" (late: recorded)")
			cl.lateAtt[n] = att
		}
		return
	}
	switch {
	case cl.phase == phWriteBack && cl.att == att && !cl.viaGrant:
		st.logf(" (late: recorded with attempt %d)", att)
		cl.mine |= 1 << n
	case cl.phase == phHeld && cl.holdAtt == att && !ended:
		st.logf(" (late: belongs to the lock)")
	case cl.phase == phHeld && cl.holdAtt == att && !w.v.lateCleanupAfterLoss:
		// The lock was lost at its deadline: the winning attempt's value
		// is the lease's, which another share may count; it is left to
		// its TTL (call.go).
		st.logf(" (late: the lease's own value after the deadline: left to its TTL)")
	default:
		st.logf(" (late: attempt %d failed or the lock ended: cleanup sent)", att)
		st.cleanup(c, n, att)
	}
}

// hash returns the state's hash, the same for every state that differs from
// s only in ways that cannot matter:
//   - times are taken relative to now, and deadlines and elapsed times are
//     clamped where they no longer change anything;
//   - nodes are interchangeable (the protocol counts answers, never names a
//     node): the state modulo a renaming of nodes is its global part and the
//     multiset of the nodes' signatures, each holding everything about one
//     node (its key and counter, every message to or from it, every
//     client's slot for it), so the signatures are hashed in sorted order;
//   - clients are interchangeable up to their tokens: the hash is the least
//     over the renamings of clients (tokens renamed with them).
//
// Multisets (the messages, the guard's accepted accesses) are hashed as sums
// of their elements' hashes, which do not depend on order.
func (w *world) hash(s *mstate) uint64 {
	best := w.hashAs(s, [mClients]uint8{0, 1, 2})
	switch w.clients {
	case 2:
		best = min(best, w.hashAs(s, [mClients]uint8{1, 0, 2}))
	case 3:
		for _, p := range [][mClients]uint8{{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			best = min(best, w.hashAs(s, p))
		}
	}
	return best
}

// hashAs hashes s with client c renamed to p[c] (token c+1 to p[c]+1).
func (w *world) hashAs(s *mstate, p [mClients]uint8) uint64 {
	var inv [mClients]uint8
	for c := 0; c < w.clients; c++ {
		inv[p[c]] = uint8(c)
	}
	tok := func(t uint8) uint8 {
		if t == 0 {
			return 0
		}
		return p[t-1] + 1
	}
	var open [mClients]bool
	for c := 0; c < w.clients; c++ {
		cl := &s.cl[c]
		open[c] = cl.phase == phAcquiring || cl.phase == phWriteBack || cl.extRound
	}
	var sig, msum [mNodes]uint64
	for i := 0; i < int(s.nmsg); i++ {
		m := s.msgs[i]
		m = m&^(7<<8|3<<6) | mmsg(p[m.client()])<<6
		msum[s.msgs[i].node()] += mix(1, uint64(m))
	}
	for n := 0; n < w.nodes; n++ {
		nd := &s.nodes[n]
		x := uint64(tok(nd.key.tok)) | uint64(nd.key.att)<<8 | uint64(nd.setBy)<<16 | uint64(nd.ctr)<<24
		if nd.key.tok != 0 {
			x |= uint64(uint8(nd.exp-s.now)) << 32
		}
		h := mix(msum[n], x)
		for k := 0; k < w.clients; k++ {
			c := inv[k]
			cl := &s.cl[c]
			y := uint64(cl.lateAtt[n]) | uint64(cl.mine>>n&1)<<8 | uint64(cl.queued>>n&1)<<9 | uint64(cl.gn[n])<<32
			if open[c] {
				y |= uint64(cl.rs[n])<<16 | uint64(cl.rv[n])<<24
			}
			if cl.sh.open() {
				y |= uint64(cl.sh.rs[n]) << 40
			}
			h = mix(h, y)
		}
		sig[n] = h
	}
	for i := 1; i < w.nodes; i++ {
		for j := i; j > 0 && sig[j] < sig[j-1]; j-- {
			sig[j], sig[j-1] = sig[j-1], sig[j]
		}
	}
	h := uint64(w.nodes)
	for n := 0; n < w.nodes; n++ {
		h = mix(h, sig[n])
	}
	nowMs := s.nowMs()
	for k := 0; k < w.clients; k++ {
		cl := &s.cl[inv[k]]
		x := uint64(cl.phase) | uint64(cl.att)<<8 | uint64(cl.fence)<<16 | uint64(cl.holdAtt)<<24 |
			uint64(cl.extends)<<32 | uint64(cl.accessed)<<40 | uint64(cl.floor)<<48
		if cl.viaGrant {
			x |= 1 << 56
		}
		var y uint64
		if cl.phase == phWriteBack {
			y |= uint64(cl.wbF)
		}
		if cl.extRound {
			y |= 1 << 8
		}
		if open[inv[k]] {
			y |= uint64(uint8(min(s.now-cl.start, w.ttl))) << 16
		}
		if w.v.grants && cl.inCall() {
			// The grant path counts from the call's begin; past a TTL it
			// can no longer succeed.
			y |= uint64(uint8(min(s.now-cl.begin, w.ttl))) << 24
		}
		if cl.phase == phHeld {
			y |= uint64(uint32(max(cl.dl-nowMs, 0))) << 32
		}
		h = mix(mix(h, x), y)
		if cl.sh.phase != shNone {
			h = mix(h, cl.sh.hash(s.now))
		}
	}
	var acc uint64
	for i := 0; i < int(s.nacc); i++ {
		acc += mix(2, uint64(s.acc[i]>>8)<<8|uint64(tok(uint8(s.acc[i]))))
	}
	return mix(mix(h, acc), uint64(s.gHigh)|uint64(tok(s.gOwner))<<8|uint64(s.doneMax)<<16|uint64(s.nacc)<<24)
}

// mix folds x into the hash h.
func mix(h, x uint64) uint64 {
	h ^= x * 0x9e3779b97f4a7c15
	h = bits.RotateLeft64(h, 31) * 0xbf58476d1ce4e5b9
	return h ^ h>>29
}
