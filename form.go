package redlock

import (
	"strconv"

	"github.com/redlock-go/redlock/internal/transport"
)

// The forms of a hold. A lease's form is fixed when the lease is made
// (newLease) and never worked out again: it says what the nodes keep for
// the hold and, in one place per form, which script every operation runs
// with which keys and arguments. A new kind of hold is one new form.
//
//	form          nodes keep                          made by
//	plain         "<token>.<attempt>" at the lock key  Acquire; Resume of a plain lock
//	with meta     the same and "<token>:<metadata>"   Acquire with Metadata, Campaign
//	              at its meta key, expiring with it
//	re-entrant    a hash of holds (reentry.go)         Acquire with Reentrant, Reenter, Resume
//	slot          a semaphore's slot: a plain lock     AcquirePermit (permit.go)
//	              under the semaphore's limit record
//	gate          the semaphore's waiters' lock        AcquirePermit's wait (permit_wait.go)
//
// Every script derives what it can from the lock key (its queue, its
// counter, its meta key: they share the name's hash tag), so that a
// request carries only what its form needs.
type form interface {
	// acquire is the request of one attempt, writing value, of a call at
	// place w in the waiting order.
	acquire(ls *lease, w place, value string) *transport.Request
	// extend extends the lease to ttlArg ms on a node that holds won, what
	// the lease counts there (counted).
	extend(ls *lease, ttlArg, won string) *transport.Request
	// release ends the lease on a node (any value of the call) and hands
	// the key on to the waiting order.
	release(ls *lease) *transport.Request
	// cleanup deletes what one failed attempt, value, wrote on a node.
	cleanup(ls *lease, value string) *transport.Request
	// counted is what a lease won by attempt (0: the releases' grants)
	// counts on a node (docs/design.md, "What a lease counts").
	counted(ls *lease, attempt int) string
	// grantable reports whether a release may grant the key to a waiting
	// call of this form (handon.lua), which then holds without a round.
	grantable() bool
	// reported reports whether the observer gets the lease's events of
	// kind k (node events are always reported).
	reported(k EventKind) bool
	// fence is the fence of a hold won with counter value n.
	fence(ls *lease, n uint64) uint64
	// handleKind is the form's kind in a Handle's text: 'p', 'm' or 'r';
	// 0 for a form that cannot be resumed.
	handleKind() byte
}

var (
	formPlain  form = plainForm{}
	formMeta   form = metaForm{}
	formHold   form = holdForm{}
	formSlot   form = slotForm{}
	formSlotM  form = slotForm{meta: true}
	formGate   form = gateForm{}
	formShared form = sharedForm{} // rw.go
)

// acquireArgs is the arguments of an acquire script for the string forms
// and the re-entrant one (acquire.lua, hold_acquire.lua): the value, the
// TTL, fencing and the call's use of the waiting order, then more.
func acquireArgs(buf *[8]string, ls *lease, w place, value string, more ...string) []string {
	args := append(buf[:0], value, ls.ttlArg, ls.fenceArg, w.mode)
	if w.mode == queueWait {
		args = append(args, w.member, w.priority, queueTTLArg)
	}
	return append(args, more...)
}

// plainForm is the plain lock: a string key, with a fence counter and a
// waiting order beside it. A release may grant it to its waiter.
type plainForm struct{}

func (plainForm) acquire(ls *lease, w place, value string) *transport.Request {
	var buf [8]string
	return transport.NewRequest(acquirePlainScript, []string{ls.keys.lock}, acquireArgs(&buf, ls, w, value)...)
}

func (plainForm) extend(ls *lease, ttlArg, won string) *transport.Request {
	return transport.NewRequest(extendPlainScript, []string{ls.keys.lock}, won, ttlArg)
}

func (plainForm) release(ls *lease) *transport.Request {
	return transport.NewRequest(releasePlainScript, []string{ls.keys.lock}, ls.prefix)
}

func (plainForm) cleanup(ls *lease, value string) *transport.Request {
	return transport.NewRequest(cleanupPlainScript, []string{ls.keys.lock}, value)
}

func (plainForm) counted(ls *lease, attempt int) string { return ls.value(attempt) }
func (plainForm) grantable() bool                       { return true }
func (plainForm) reported(EventKind) bool               { return true }
func (plainForm) fence(_ *lease, n uint64) uint64       { return n }
func (plainForm) handleKind() byte                      { return 'p' }

// metaForm is the plain lock with the holder's metadata at its meta key,
// written with the lock key and expiring with it: every script that writes
// or deletes the lock key does the same to the meta key. A release never
// grants it (the grant would leave the metadata out): the waiter's next
// attempt takes the key and writes the metadata with it.
type metaForm struct{ plainForm }

func (metaForm) acquire(ls *lease, w place, value string) *transport.Request {
	var buf [8]string
	return transport.NewRequest(acquireMetaScript, []string{ls.keys.lock}, acquireArgs(&buf, ls, w, value, ls.metaArg)...)
}

func (metaForm) extend(ls *lease, ttlArg, won string) *transport.Request {
	return transport.NewRequest(extendMetaScript, []string{ls.keys.lock}, won, ttlArg)
}

func (metaForm) release(ls *lease) *transport.Request {
	return transport.NewRequest(releaseMetaScript, []string{ls.keys.lock}, ls.prefix)
}

func (metaForm) cleanup(ls *lease, value string) *transport.Request {
	return transport.NewRequest(cleanupMetaScript, []string{ls.keys.lock}, value)
}

func (metaForm) grantable() bool  { return false }
func (metaForm) handleKind() byte { return 'm' }

// holdForm is the re-entrant lock (reentry.go): a hash of holds, the lease
// being one hold (ls.hold: the Acquire call's token, or the id of a hold
// added by Reenter or Resume).
type holdForm struct{}

func (holdForm) acquire(ls *lease, w place, value string) *transport.Request {
	var buf [8]string
	return transport.NewRequest(holdAcquireScript, []string{ls.keys.lock}, acquireArgs(&buf, ls, w, value, ls.meta)...)
}

func (holdForm) extend(ls *lease, ttlArg, won string) *transport.Request {
	return transport.NewRequest(holdExtendScript, []string{ls.keys.lock}, ls.token, ls.hold, ttlArg, "0", won)
}

func (holdForm) release(ls *lease) *transport.Request {
	return transport.NewRequest(holdReleaseScript, []string{ls.keys.lock}, ls.token, ls.hold, ls.keys.channel, "")
}

func (holdForm) cleanup(ls *lease, value string) *transport.Request {
	return transport.NewRequest(holdReleaseScript, []string{ls.keys.lock}, ls.token, ls.hold, "", value[len(ls.prefix):])
}

// counted is the hold's field value: the winning attempt's number for the
// Acquire call's own hold, nestedHoldValue for a hold added later.
func (holdForm) counted(ls *lease, attempt int) string {
	if ls.hold != ls.token {
		return nestedHoldValue
	}
	return strconv.Itoa(attempt)
}

func (holdForm) grantable() bool                 { return false }
func (holdForm) reported(EventKind) bool         { return true }
func (holdForm) fence(_ *lease, n uint64) uint64 { return n }
func (holdForm) handleKind() byte                { return 'r' }

// addHold is the request that adds ls's hold to a re-entrant lock (Reenter,
// Resume), or finds it added.
func (holdForm) addHold(ls *lease) *transport.Request {
	return transport.NewRequest(holdExtendScript, []string{ls.keys.lock}, ls.token, ls.hold, ls.ttlArg, "1", nestedHoldValue)
}

// slotForm is one slot of a semaphore (permit.go): a plain lock key of its
// own, taken and extended under the semaphore's limit record, with the
// semaphore's fence counter; its waiters queue at the semaphore's gate, so
// a slot's own attempts barge. AcquirePermit reports the call once: the
// slots' attempts and waits are not reported as locks of their own.
type slotForm struct{ meta bool }

func (f slotForm) acquire(ls *lease, w place, value string) *transport.Request {
	p := ls.permit
	keys := []string{ls.keys.lock} // the semaphore's keys are derived from it (permit.lua)
	if f.meta {
		return transport.NewRequest(slotMetaAcquireScript, keys, value, ls.ttlArg, ls.fenceArg, queueBarge, ls.metaArg, p.limitArg, p.yield)
	}
	return transport.NewRequest(slotAcquireScript, keys, value, ls.ttlArg, ls.fenceArg, queueBarge, p.limitArg, p.yield)
}

func (f slotForm) extend(ls *lease, ttlArg, won string) *transport.Request {
	s := slotExtendScript
	if f.meta {
		s = slotMetaExtendScript
	}
	return transport.NewRequest(s, []string{ls.keys.lock}, won, ttlArg, ls.permit.limitArg)
}

func (f slotForm) release(ls *lease) *transport.Request {
	s := slotReleaseScript
	if f.meta {
		s = slotMetaReleaseScript
	}
	return transport.NewRequest(s, []string{ls.keys.lock}, ls.prefix)
}

func (f slotForm) cleanup(ls *lease, value string) *transport.Request {
	s := slotCleanupScript
	if f.meta {
		s = slotMetaCleanupScript
	}
	return transport.NewRequest(s, []string{ls.keys.lock}, value)
}

func (slotForm) counted(ls *lease, attempt int) string { return ls.value(attempt) }
func (slotForm) grantable() bool                       { return false }
func (slotForm) reported(k EventKind) bool             { return k != EventAcquire && k != EventWait }
func (slotForm) fence(ls *lease, n uint64) uint64      { return ls.permit.fenceOf(n) }
func (slotForm) handleKind() byte                      { return 0 }

// gateForm is a semaphore's gate (permit_wait.go): a plain lock on keys of
// its own, which the semaphore's waiters take in the fair order; the
// observer sees none of its events (a semaphore reports its calls, not its
// waiters' order).
type gateForm struct{ plainForm }

func (gateForm) reported(EventKind) bool { return false }
func (gateForm) handleKind() byte        { return 0 }
