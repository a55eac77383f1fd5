package redlock

// The nodes of the protocol model (see model_test.go and docs/model.md).
// Each node step is a small pure function of (node state, request) ->
// (node state, reply), restating one Lua script, so that it can be compared
// with the script on a real Redis for the same inputs.

import (
	"fmt"
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

// nodeExtend restates the extend script: if the key holds the value the
// lease won (won: "T.w" of its winning attempt w, or "T.0" when the grant
// path made it) or the call's grant "T.0" (which an attempt that met it
// kept), its expiry becomes now+ttl unless it is later already: the expiry
// only moves later, so that one share of a lease asking for less never cuts
// another's short. Any other value of the call ("T.j" of a failed attempt,
// which its exact cleanup may delete at any time) is not the lease's.
func nodeExtend(n mnode, now, ttl int16, won mval) (mnode, bool) {
	if n.key.tok == 0 || n.key != won && n.key != (mval{won.tok, 0}) {
		return n, false
	}
	n.exp = max(n.exp, now+ttl)
	return n, true
}

// nodeExtendAnyAttempt restates extend.lua before it matched the won value
// only: any value of call tok ("T."-prefix) is extended, a failed attempt's
// too, which that attempt's delayed cleanup then deletes. For a control.
func nodeExtendAnyAttempt(n mnode, now, ttl int16, tok uint8) (mnode, bool) {
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
