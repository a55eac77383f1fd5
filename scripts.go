package redlock

import (
	"embed"
	"strings"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// The Lua scripts the nodes run, one file each in lua/, each starting with
// its KEYS, ARGV and replies; and every key name the lock uses. Each
// script is registered here once, with the builder of its request beside
// it. A script runs as EVALSHA, and as EVAL after NOSCRIPT.

//go:embed lua/*.lua
var luaFiles embed.FS

// script returns the script made of the named files of lua/, in order (a
// script that uses the handOn fragment starts with handon.lua).
func script(files ...string) *transport.Script { return transport.NewScript(luaSource(files...)) }

// luaSource returns the named files of lua/, one after the other.
func luaSource(files ...string) string {
	var src strings.Builder
	for _, f := range files {
		b, err := luaFiles.ReadFile("lua/" + f)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		src.Write(b)
	}
	return src.String()
}

// keys are the names of what a lock keeps on each node. The braces around
// the name are a Redis Cluster hash tag: every key of a name lives in one
// slot.
type keys struct {
	lock       string // <prefix>{<name>}: the lock
	fence      string // <lock>:fence: the fence counter, never deleted
	queue      string // <lock>:q: the waiting order, by priority (queue.go)
	queueTimes string // <lock>:qt: the same entries, by expiry
	meta       string // <lock>:meta: a plain lock's metadata, "<token>:<text>" (a leader's "<token>#<term>:<value>"), expiring with it
	channel    string // <prefix>released:<lock>: where releases are announced
}

// appendKeys appends to b, in one string, everything keys holds:
//
//	<p>released:<p>{name}:fence<p>{name}:qt<p>{name}:meta
//
// where <p> is the key prefix (the channel ends with the lock key, which the
// fence key extends; the queue key is the start of the queue times key), and
// returns where each key ends, for keysIn.
func appendKeys(b []byte, prefix, name string) ([]byte, keyEnds) {
	b = append(b, prefix...)
	b = append(b, "released:"...)
	var e keyEnds
	e.lock0 = len(b)
	b = append(append(append(append(b, prefix...), '{'), name...), '}')
	e.lock1 = len(b)
	b = append(b, ":fence"...)
	e.queue0 = len(b)
	b = append(b, b[e.lock0:e.lock1]...)
	b = append(b, ":qt"...)
	e.meta0 = len(b)
	b = append(b, b[e.lock0:e.lock1]...)
	b = append(b, ":meta"...)
	e.end = len(b)
	return b, e
}

// keyEnds are the offsets appendKeys wrote the keys at.
type keyEnds struct{ lock0, lock1, queue0, meta0, end int }

// keysIn returns the keys that appendKeys wrote at the start of s.
func (e keyEnds) keysIn(s string) keys {
	kl := e.lock1 - e.lock0
	return keys{channel: s[:e.lock1], lock: s[e.lock0:e.lock1], fence: s[e.lock0:e.queue0],
		queue: s[e.queue0 : e.queue0+kl+2], queueTimes: s[e.queue0:e.meta0], meta: s[e.meta0:e.end]}
}

// keysOf returns the keys of name under prefix.
func keysOf(prefix, name string) keys {
	b, e := appendKeys(nil, prefix, name)
	return e.keysIn(string(b))
}

// keys returns the keys of name on c's nodes.
func (c *Client) keys(name string) keys { return keysOf(c.opts.KeyPrefix, name) }

// How an Acquire call uses the waiting order (ARGV[4] of acquire.lua).
const (
	queueWait  = "wait"  // waits its turn in the queue (default)
	queueTry   = "try"   // a try-lock: takes the free key only if nobody queues, never queues
	queueBarge = "barge" // ignores the queue (AcquireOptions.Barging)
)

// queueTTL is how long a waiter's entry lives after its last refresh
// (ARGV[7] of acquire.lua).
const queueTTL = time.Second

// queueTTLArg is queueTTL as the acquire script takes it.
var queueTTLArg = millis(queueTTL)

// place is a call's place in the waiting order as the scripts take it.
type place struct {
	mode     string // queueWait, queueTry or queueBarge
	member   string // queueWait: the call's entry, "<token>:<client>", and ":<ttl>:<fence>" when grantable
	priority string // queueWait: the call's rank in the queue, alike on every node
}

var (
	acquireScript     = script("acquire.lua")
	extendScript      = script("extend.lua")
	releaseScript     = script("handon.lua", "release.lua")
	cleanupScript     = script("handon.lua", "cleanup.lua")
	holdExtendScript  = script("hold_extend.lua")
	holdReleaseScript = script("handon.lua", "hold_release.lua") // its dropDead
	queueLeaveScript  = script("queue_leave.lua")
	fenceScript       = script("fence.lua")
	inspectScript     = script("holder_meta.lua", "inspect.lua")
	forceScript       = script("holder_meta.lua", "force_release.lua")
	announceScript    = script("announce.lua")

	// A semaphore's (permit.go): a slot is taken and extended by the
	// lock's scripts, wrapped in the semaphore's checks.
	permitAcquireScript = script("permit.lua", "acquire.lua", "permit_end.lua")
	permitExtendScript  = script("permit_extend.lua", "extend.lua", "permit_end.lua")
	permitScanScript    = script("permit_scan.lua")
)

// acquireRequest is attempt value's call of the acquire script: the value,
// then what the call's place in the waiting order fixed for every attempt.
// A call that does not queue barges, and sends neither the queue keys nor
// the queue arguments, unless the re-entrant form needs them at their
// places.
func (ls *lease) acquireRequest(w place, value string) *transport.Request {
	if ls.permit != nil {
		return ls.permitAcquireRequest(value)
	}
	k := ls.keys
	keys := []string{k.lock, k.fence, k.queue, k.queueTimes}
	reentrant := ls.hold != ""
	switch {
	case ls.meta != "" && !reentrant: // the plain form with metadata: its key is KEYS[5]
		member, priority, qttl := "", "", ""
		if w.mode == queueWait {
			member, priority, qttl = w.member, w.priority, queueTTLArg
		}
		return transport.NewRequest(acquireScript, append(keys, k.meta), value, ls.ttlArg, ls.fenceArg, w.mode, member, priority, qttl, ls.metaArg)
	case w.mode == queueWait && reentrant:
		return transport.NewRequest(acquireScript, keys, value, ls.ttlArg, ls.fenceArg, queueWait, w.member, w.priority, queueTTLArg, ls.metaArg)
	case w.mode == queueWait:
		return transport.NewRequest(acquireScript, keys, value, ls.ttlArg, ls.fenceArg, queueWait, w.member, w.priority, queueTTLArg)
	case w.mode == queueTry && reentrant: // never queues: needs no entry of its own
		return transport.NewRequest(acquireScript, keys, value, ls.ttlArg, ls.fenceArg, queueTry, "", "", "", ls.metaArg)
	case w.mode == queueTry:
		return transport.NewRequest(acquireScript, keys, value, ls.ttlArg, ls.fenceArg, queueTry)
	case reentrant:
		return transport.NewRequest(acquireScript, keys[:2], value, ls.ttlArg, ls.fenceArg, queueBarge, "", "", "", ls.metaArg)
	}
	return transport.NewRequest(acquireScript, keys[:2], value, ls.ttlArg, ls.fenceArg)
}

// extendRequest extends ls's lease to ttlArg ms (plain), or its hold
// (re-entrant), on a node that holds what the lease counts there, won (see
// counted); the node answers 1 when it did. Either way a key that lives
// longer keeps its expiry. A plain lease with metadata extends its meta key
// with the lock key.
func (ls *lease) extendRequest(ttlArg, won string) *transport.Request {
	switch {
	case ls.permit != nil:
		return ls.permitExtendRequest(ttlArg, won)
	case ls.hold == "" && ls.meta != "":
		return transport.NewRequest(extendScript, []string{ls.keys.lock, ls.keys.meta}, won, ttlArg)
	case ls.hold == "":
		return transport.NewRequest(extendScript, []string{ls.keys.lock}, won, ttlArg)
	}
	return transport.NewRequest(holdExtendScript, []string{ls.keys.lock}, ls.token, ls.hold, ttlArg, "0", won)
}

// addHoldRequest adds ls's hold to a re-entrant lock (Reenter, Resume).
func (ls *lease) addHoldRequest() *transport.Request {
	return transport.NewRequest(holdExtendScript, []string{ls.keys.lock}, ls.token, ls.hold, ls.ttlArg, "1", nestedHoldValue)
}

// releaseRequest deletes ls's key (any attempt's value of its call) or, in
// the re-entrant form, its hold and the key with the last hold, and
// announces the release to waiters. A plain lock's meta key goes with it
// (in the same DEL), whichever share releases.
func (ls *lease) releaseRequest() *transport.Request {
	k := ls.keys
	if ls.hold == "" {
		return transport.NewRequest(releaseScript, []string{k.lock, k.queue, k.queueTimes, k.fence, k.meta}, ls.prefix, k.channel)
	}
	return transport.NewRequest(holdReleaseScript, []string{k.lock, k.queue, k.queueTimes}, ls.token, ls.hold, k.channel, "")
}

// cleanupRequest removes what one failed attempt wrote (value) on a node,
// if the key still holds exactly that, and hands the freed key on to the
// head of the waiting order.
func (ls *lease) cleanupRequest(value string) *transport.Request {
	k := ls.keys
	if ls.hold == "" {
		return transport.NewRequest(cleanupScript, []string{k.lock, k.queue, k.queueTimes, k.fence, k.meta}, value, k.channel)
	}
	attempt := strings.TrimPrefix(value, ls.prefix)
	return transport.NewRequest(holdReleaseScript, []string{k.lock, k.queue, k.queueTimes}, ls.token, ls.hold, "", attempt)
}

// leaveRequest takes the entry of the call at w out of the queue; with
// gaveUp "1" a release's grant to it goes too.
func (ls *lease) leaveRequest(w place, gaveUp string) *transport.Request {
	k := ls.keys
	return transport.NewRequest(queueLeaveScript, []string{k.lock, k.queue, k.queueTimes}, w.member, k.channel, gaveUp)
}

// fenceRequest raises ls's fence counter to at least fence.
func (ls *lease) fenceRequest(fence string) *transport.Request {
	return transport.NewRequest(fenceScript, []string{ls.keys.fence}, fence)
}

// inspectRequest reads name's lock, holds, counter and the first
// MaxInspectWaiters waiters of its queue (read only).
func inspectRequest(k keys) *transport.Request {
	return transport.NewRequest(inspectScript, []string{k.lock, k.fence, k.queue, k.queueTimes, k.meta}, maxInspectWaitersArg)
}

// announceRequest records term beside ls's metadata (the leader's value)
// in its meta key, as "<token>#<term>:<value>", and publishes "<term>
// <value>" on the election channel of ls's name, if the node still holds
// what the lease won there (won, as extend matches it). Only this request
// writes a meta key in that form (see holder_meta.lua), so that no
// Metadata can forge a term.
func (ls *lease) announceRequest(term, won string) *transport.Request {
	k := ls.keys
	return transport.NewRequest(announceScript, []string{k.lock, k.meta}, won, electedChannel(k),
		term+" "+ls.meta, ls.token+"#"+term+":"+ls.meta)
}

// electedChannel is where the leaders of the election on k's lock are
// announced: <prefix>elected:<lock key>, beside the release channel
// <prefix>released:<lock key>.
func electedChannel(k keys) string {
	prefix := k.channel[:len(k.channel)-len(k.lock)-len("released:")]
	return prefix + "elected:" + k.lock
}

// forceRequest deletes name's lock (and a plain lock's meta key) whoever
// holds it, keeping the counter and the queue, and wakes the queue's head.
func forceRequest(k keys) *transport.Request {
	return transport.NewRequest(forceScript, []string{k.lock, k.queue, k.queueTimes, k.meta}, k.channel)
}
