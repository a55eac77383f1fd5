package redlock

// The state of the protocol model: messages in flight, clients, the world
// (its size, its variant of the protocol and its faults).

import (
	"cmp"
	"fmt"
	"time"
)

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
	// A deliberate bug, for a control: the extend script extends any value
	// of the call ("T.*"), as extend.lua did before it matched the value the
	// lease won: a failed attempt's delayed acquire sets "T.j" on a node, the
	// lease counts it, and the attempt's exact cleanup deletes it.
	anyAttemptExtend bool
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
