package redlock

// The world of the protocol model (see model_test.go and docs/model.md):
// nodes, clients, messages in flight, and the steps that change them. Each
// node step is a small pure function of (node state, request) -> (node
// state, reply), restating one Lua script, so that it can be compared with
// the script on a real Redis for the same inputs.

import (
	"cmp"
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// Sizes of the fixed arrays of a model state. A world uses a prefix.
const (
	mNodes   = 5
	mClients = 3
	mMsgs    = 40
	mAcc     = 8
)

// tick is one step of model time. The TTL is a whole number of ticks; the
// client's validity and deadline are computed by the library's validity in
// real durations, so the model's time arithmetic is the library's.
const tick = 100 * time.Millisecond

// mval is a lock value: the token of a client's Acquire call (client+1; 0
// means no key) and the attempt that wrote it. Under the old protocol every
// attempt writes the bare token, so att is 0 in keys and requests.
type mval struct{ tok, att uint8 }

func (v mval) String() string {
	switch {
	case v.tok == 0:
		return "none"
	case v.att == 0:
		return fmt.Sprintf("T%d", v.tok)
	}
	return fmt.Sprintf("T%d.%d", v.tok, v.att)
}

// mnode is one node: its lock key (value and expiry tick) and fence counter.
// setBy is a ghost: the attempt whose acquire last granted the key (or
// sbGrant: a release granted it to the waiting call), which the scripts
// cannot see; property 4 checks every delete against it.
type mnode struct {
	key   mval
	setBy uint8
	exp   int16
	ctr   uint8
}

// sbGrant is the ghost setBy of a key "T.0" a release set for a waiting call:
// only that call's own release may delete it.
const sbGrant = 0xff

// nodeAcquire restates the acquire script. New protocol: an absent key is
// set, our own value is refreshed (a resent request), a value of an earlier
// attempt of the same call is taken over; anything else is refused. Old
// protocol (v.att == 0 always): the same without the take-over. On a grant
// the counter is incremented and returned. A key of the call keeps its
// expiry if that is later than now+ttl (a share of the lease may have
// extended it): the expiry only moves later.
func nodeAcquire(n mnode, now, ttl int16, v mval) (mnode, bool, uint8) {
	switch {
	case n.key.tok == 0:
		n.key, n.exp = v, now+ttl
	case n.key == v:
		n.exp = max(n.exp, now+ttl)
	case n.key.tok == v.tok && n.key.att < v.att:
		n.key, n.exp = v, max(n.exp, now+ttl)
	default:
		return n, false, 0
	}
	n.ctr++
	return n, true, n.ctr
}

// nodeAcquireKeep restates the acquire script of the grant protocol: a key
// "T.0" a release granted to this very call is kept (refreshed, the counter
// incremented and returned), never taken over by "T.k" as an earlier
// attempt's value is, so that no attempt's exact cleanup can delete it.
// Everything else is nodeAcquire.
func nodeAcquireKeep(n mnode, now, ttl int16, v mval) (mnode, bool, uint8) {
	if n.key.tok != 0 && n.key.tok == v.tok && n.key.att == 0 && v.att > 0 {
		n.exp = max(n.exp, now+ttl)
		n.ctr++
		return n, true, n.ctr
	}
	return nodeAcquire(n, now, ttl, v)
}

// nodeGrant restates the grant step of release, run after it deleted the
// key or found it free: the key becomes "W.0" for the waiting call tok with a fresh TTL, and
// the counter is incremented and returned (the grant notice carries it).
func nodeGrant(n mnode, now, ttl int16, tok uint8) (mnode, uint8) {
	n.key, n.exp = mval{tok, 0}, now+ttl
	n.ctr++
	return n, n.ctr
}

// nodeWriteBack restates fence.lua: raise the counter to at least f.
func nodeWriteBack(n mnode, f uint8) (mnode, bool) {
	n.ctr = max(n.ctr, f)
	return n, true
}

// nodeExtend restates the extend script: if the key holds a value of call
// tok (new: any attempt, "T."-prefix; old: the bare token), its expiry
// becomes now+ttl unless it is later already: the expiry only moves later,
// so that one share of a lease asking for less never cuts another's short.
func nodeExtend(n mnode, now, ttl int16, tok uint8) (mnode, bool) {
	if n.key.tok == 0 || n.key.tok != tok {
		return n, false
	}
	n.exp = max(n.exp, now+ttl)
	return n, true
}

// nodeExtendOld restates extend.lua before the expiry only moved later: the
// key's expiry becomes now+ttl whatever it was. For a control.
func nodeExtendOld(n mnode, now, ttl int16, tok uint8) (mnode, bool) {
	if n.key.tok == 0 || n.key.tok != tok {
		return n, false
	}
	n.exp = now + ttl
	return n, true
}

// nodeCleanup restates the compare-and-delete of a failed attempt: delete
// only the exact value v.
func nodeCleanup(n mnode, v mval) (mnode, bool) {
	if n.key.tok == 0 || n.key != v {
		return n, false
	}
	n.key, n.exp, n.setBy = mval{}, 0, 0
	return n, true
}

// nodeRelease restates release: delete any value of call tok.
func nodeRelease(n mnode, tok uint8) (mnode, bool) {
	if n.key.tok == 0 || n.key.tok != tok {
		return n, false
	}
	n.key, n.exp, n.setBy = mval{}, 0, 0
	return n, true
}

// guardAccess restates the guard's rule. With the owner rule (new), an access
// is accepted iff f > highest, or f == highest from the recorded owner; the
// old rule accepts f >= highest. Fence 0 is refused. It returns the new
// (highest, owner) and whether the access was accepted.
func guardAccess(highest, owner, f, tok uint8, ownerRule bool) (uint8, uint8, bool) {
	switch {
	case f == 0 || f < highest:
		return highest, owner, false
	case f == highest && ownerRule && owner != tok:
		return highest, owner, false
	}
	return f, tok, true
}

// Message kinds.
const (
	kAcqReq uint8 = iota
	kAcqRep
	kWbReq
	kWbRep
	kExtReq
	kExtRep
	kCleanReq
	kRelReq
	kGrantNote // a release granted the key to a waiting call: node → client, val = the counter
	_          // (live requests are even, their replies odd)
	kShareReq  // the resumed share's extend (att 0: its resume round; k: its k-th extend), val = its TTL in ticks
	kShareRep
)

var kindNames = [...]string{"acquire", "acquire reply", "write-back", "write-back reply", "extend", "extend reply", "cleanup", "release", "grant notice", "", "share extend", "share extend reply"}

// Message modes: who waits for it.
const (
	mLive   uint8 = iota // the client's current round waits for its answer
	mLate                // an acquire round that was decided; the late handler waits
	mOrphan              // nobody: a cleanup, a release, or a request given up on
)

// mmsg is one message in flight, packed so that the state's message list
// sorts and hashes as plain integers: kind 4 bits, mode 2, client 2, node 3,
// attempt 3, value 8 (a grant's counter, 0 for a refusal; F for a
// write-back; 1/0 for an extend reply).
type mmsg uint32

func packMsg(kind, mode, c, node, att, val uint8) mmsg {
	return mmsg(uint32(kind) | uint32(mode)<<4 | uint32(c)<<6 | uint32(node)<<8 | uint32(att)<<11 | uint32(val)<<16)
}

func (m mmsg) kind() uint8   { return uint8(m & 15) }
func (m mmsg) mode() uint8   { return uint8(m>>4) & 3 }
func (m mmsg) client() uint8 { return uint8(m>>6) & 3 }
func (m mmsg) node() uint8   { return uint8(m>>8) & 7 }
func (m mmsg) att() uint8    { return uint8(m>>11) & 7 }
func (m mmsg) val() uint8    { return uint8(m >> 16) }
func (m mmsg) withMode(mode uint8) mmsg {
	return m&^(3<<4) | mmsg(mode)<<4
}

// Client phases.
const (
	phIdle      uint8 = iota // the Acquire call has not begun
	phAcquiring              // an attempt's acquire round is open
	phWriteBack              // the attempt's fence write-back round is open
	phFailed                 // the attempt failed; a retry may follow
	phHeld                   // an attempt succeeded (believed while now < deadline)
	phDone                   // gave up, released, or lost by an extend
)

// Round slots per node.
const (
	rsPending uint8 = iota
	rsOK
	rsRefused
	rsError
)

// mclient is one client with one Acquire call (token client+1).
type mclient struct {
	phase    uint8
	att      uint8 // current (or last) attempt
	extRound bool  // an extend round is open (phase held)
	start    int16 // tick the current attempt or extend began
	rs       [mNodes]uint8
	rv       [mNodes]uint8 // counters of grants in the current round
	mine     uint8         // nodes that granted or errored for the current attempt
	lateAtt  [mNodes]uint8 // old claim: late grants recorded (attempt), released on the next failure
	fence    uint8
	wbF      uint8 // F of the write-back round
	holdAtt  uint8 // the attempt that got the lock
	dl       int32 // local deadline in ms of model time
	extends  uint8
	accessed uint8 // bit 0: an access while valid; bit 1: an access after a pause
	floor    uint8 // ghost (property 1): largest fence completed before the call began
	// The grant protocol:
	begin    int16         // tick the Acquire call began
	queued   uint8         // nodes that have a queue entry of the call (an acquire of it was delivered there)
	gn       [mNodes]uint8 // grant notices received, per node: the counter (0: none)
	viaGrant bool          // the write-back round open, or the hold, came from the grant path
	// Resume (model_resume_test.go): the second share of the call's lease,
	// made by resuming its handle.
	sh mshare
}

// inCall reports whether the client's Acquire call is in progress: it
// neither holds nor has ended (a grant may go to it, a notice is recorded).
func (cl *mclient) inCall() bool {
	return cl.phase == phAcquiring || cl.phase == phWriteBack || cl.phase == phFailed
}

// mstate is the whole world. Times are absolute ticks; the hash encodes them
// relative to now, so worlds that differ only by a shift of time are one.
type mstate struct {
	now     int16
	nodes   [mNodes]mnode
	cl      [mClients]mclient
	nmsg    uint8
	msgs    [mMsgs]mmsg // sorted
	gHigh   uint8       // guard: highest fence accepted
	gOwner  uint8       // guard: its owner (token)
	nacc    uint8
	acc     [mAcc]uint16 // ghost (property 2): accepted (fence<<8 | token), sorted, unique
	doneMax uint8        // ghost (property 1): largest fence of a completed acquisition
}

func (s *mstate) addMsg(m mmsg) {
	if int(s.nmsg) == mMsgs {
		panic("model: too many messages in flight; raise mMsgs")
	}
	insertSorted(s.msgs[:], int(s.nmsg), m)
	s.nmsg++
}

// insertSorted puts x into the sorted xs[:n], which has room for it.
func insertSorted[E cmp.Ordered](xs []E, n int, x E) {
	i := n
	for i > 0 && xs[i-1] > x {
		xs[i] = xs[i-1]
		i--
	}
	xs[i] = x
}

func (s *mstate) delMsg(i int) {
	copy(s.msgs[i:s.nmsg], s.msgs[i+1:s.nmsg])
	s.nmsg--
	s.msgs[s.nmsg] = 0
}

// variant says which protocol the model runs.
type variant struct {
	perAttempt bool // attempt k writes "T.k" (new) instead of "T" (old)
	lateErrors bool // late errors are cleaned up like late grants (new)
	writeBack  bool // the fence write-back phase runs when planFence asks
	ownerGuard bool // the guard's equal-fence rule checks the owner (new)
	// grants: a release that deleted the key may grant it to a waiting
	// call ("W.0", with a grant notice); the acquire script keeps such a key
	// (nodeAcquireKeep); a client that gives up sends a release; a client
	// with notices from a quorum may hold through the grant path.
	grants bool
	// grantsToAny: a grant may go to any call that has a queue entry on the
	// node, also one that holds or has ended (the node cannot tell).
	grantsToAny bool
	// grantLeaseFullTTL: an alternative lease for the grant path, the
	// whole validity counted once from the call's begin (begin +
	// validity(ttl, 0)) instead of begin + validity(ttl, elapsed), which
	// subtracts the wait twice.
	grantLeaseFullTTL bool
	// A deliberate bug, for a control: the lease counts from the decision,
	// as if the round had taken no time (validity with elapsed 0).
	leaseFromDecision bool
	// extendFailLoses: a failed extend round ends the share and releases
	// the keys, as Lock.Extend does (the model's extend otherwise ends a
	// hold only when a majority answered "not ours", as the watchdog does
	// while its deadline lasts). For the resume gaps (model_resume_test.go).
	extendFailLoses bool
	// lateCleanupAfterLoss: the winning attempt's late answer that comes
	// after its lock was lost at the deadline is cleaned up, as the library
	// did before: the exact value goes, which a resumed share may count.
	// For the resume gaps' control (model_resume_test.go).
	lateCleanupAfterLoss bool
	// A deliberate bug, for a control: the extend script sets the key's
	// expiry to now+ttl whatever it was (extend.lua before it only moved
	// the expiry later), so one share asking for less cuts another short.
	oldExtend bool
	// Deliberate bugs of the grant protocol, for controls: the grant path
	// counts its lease from the decision instead of the call's begin; the
	// acquire script takes a grant "T.0" over by writing "T.k".
	grantLeaseFromDecision bool
	grantTakeOver          bool
}

var (
	newProtocol   = variant{perAttempt: true, lateErrors: true, writeBack: true, ownerGuard: true}
	oldProtocol   = variant{writeBack: true}
	grantProtocol = variant{perAttempt: true, lateErrors: true, writeBack: true, ownerGuard: true, grants: true}
)

// faults says what the environment may do.
type faults struct {
	loss        bool // a request or reply may fail (the client sees an error; the request may still run later), a given-up request may be lost
	earlyExpiry bool // a key may vanish before its TTL (a clock jump on the node)
	amnesia     bool // a node may restart without its data (key and counter gone)
	pauses      bool // a holder may pause after checking its deadline and access after it
}

// world is a model configuration: the protocol, the faults and the bounds.
type world struct {
	v        variant
	f        faults
	clients  int
	nodes    int
	attempts int   // attempts per Acquire call
	extends  int   // extends per hold
	ttl      int16 // TTL in ticks
	initCtr  uint8 // initial counters: every vector in [0, initCtr]^nodes with a 0 in it
	factor   float64
	// Smaller worlds for the controls, whose bugs need neither:
	noTime    bool // time does not pass (keys still vanish by early expiry, if allowed)
	noRelease bool // holders never release
	fixedCtr  bool // start from the counters ctr0 only, not every vector up to initCtr
	ctr0      [mNodes]uint8
	// resumeTTLs are the TTLs (ticks) a holder's handle may be resumed
	// with, making a second share of its lease (model_resume_test.go);
	// none: no resume.
	resumeTTLs []int16
	// mutexOnly checks property 3 as stated (two holders at once) without
	// the stronger invariant, so that a counterexample shows a rival
	// holding.
	mutexOnly bool
}

func (w *world) quorum() int { return w.nodes/2 + 1 }

func (w *world) ttlDur() time.Duration { return time.Duration(w.ttl) * tick }

// value is the lock value attempt att of client c writes.
func (w *world) value(c, att uint8) mval {
	if w.v.perAttempt {
		return mval{c + 1, att}
	}
	return mval{c + 1, 0}
}

// show prints a lock value as the world's protocol writes it: "T1.0" is a
// grant under the new protocols, "T1" the old protocol's bare token.
func (w *world) show(v mval) string {
	if w.v.perAttempt && v.tok != 0 && v.att == 0 {
		return fmt.Sprintf("T%d.0", v.tok)
	}
	return v.String()
}

// believes reports whether client c believes it holds the lock now.
func (w *world) believes(s *mstate, c int) bool {
	cl := &s.cl[c]
	return cl.phase == phHeld && int32(s.now)*int32(tick/time.Millisecond) < cl.dl
}

func (s *mstate) nowMs() int32 { return int32(s.now) * int32(tick/time.Millisecond) }

// Actions.
const (
	aBegin uint8 = iota
	aRetry
	aExtend
	aRelease
	aAccess
	aStaleAccess
	aDeliver
	aFail
	aLose
	aTick
	aExpire
	aAmnesia
	aGiveUp
	aGrantPath
	aResume      // the call's handle is resumed: a second share with TTL to (ticks)
	aShareExtend // the resumed share extends
	aShareRelease
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
		switch {
		case w.believes(s, c) && w.shareBelieves(s, c):
			who = fmt.Sprintf("c%d and its resumed share", c)
		case w.believes(s, c):
			who = fmt.Sprintf("c%d", c)
		case w.shareBelieves(s, c):
			who = fmt.Sprintf("c%d's resumed share", c)
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
		held := 0
		for n := 0; n < w.nodes; n++ {
			if s.nodes[n].key.tok == uint8(c+1) {
				held++
			}
		}
		if held < w.quorum() {
			return &mviolation{prop: 3, why: fmt.Sprintf("%s believes it holds the lock at t=%d, but only %d nodes hold a value of T%d (quorum %d): another client can take it", who, s.now, held, c+1, w.quorum())}
		}
	}
	return nil
}

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
		*nd, ok = w.extendStep(*nd, s.now, w.ttl, c+1)
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
		// its TTL (late.go).
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
