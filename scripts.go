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
	// The string forms (form.go): each script is its form's prelude and
	// the shared body.
	acquirePlainScript = script("form_plain.lua", "acquire.lua", "counter.lua", "queue.lua", "acquire_taken.lua")
	acquireMetaScript  = script("form_meta.lua", "acquire.lua", "counter.lua", "queue.lua", "acquire_taken.lua")
	extendPlainScript  = script("meta_none.lua", "extend.lua")
	extendMetaScript   = script("meta_key.lua", "extend.lua")
	releasePlainScript = script("meta_none.lua", "channel_lock.lua", "release.lua", "handon.lua", "release_queued.lua")
	releaseMetaScript  = script("meta_key.lua", "channel_lock.lua", "release.lua", "handon.lua", "release_queued.lua")
	cleanupPlainScript = script("meta_none.lua", "channel_lock.lua", "cleanup.lua", "handon.lua", "cleanup_queued.lua")
	cleanupMetaScript  = script("meta_key.lua", "channel_lock.lua", "cleanup.lua", "handon.lua", "cleanup_queued.lua")

	// The re-entrant form (reentry.go).
	holdAcquireScript = script("hold_acquire.lua", "counter.lua", "queue.lua", "hold_acquire_rest.lua")
	holdExtendScript  = script("hold_extend.lua")
	holdReleaseScript = script("hold_release.lua", "handon.lua", "hold_release_rest.lua")

	// A semaphore's slot (permit.go): the string form's scripts, wrapped
	// in the semaphore's checks.
	slotAcquireScript     = script("permit.lua", "form_slot.lua", "acquire.lua", "counter.lua", "queue.lua", "acquire_taken.lua", "permit_end.lua")
	slotMetaAcquireScript = script("permit.lua", "form_slot_meta.lua", "acquire.lua", "counter.lua", "queue.lua", "acquire_taken.lua", "permit_end.lua")
	slotExtendScript      = script("permit_extend.lua", "meta_none.lua", "extend.lua", "permit_end.lua")
	slotMetaExtendScript  = script("permit_extend.lua", "meta_key.lua", "extend.lua", "permit_end.lua")
	slotReleaseScript     = script("meta_none.lua", "channel_slot.lua", "release.lua", "handon.lua", "release_queued.lua")
	slotMetaReleaseScript = script("meta_key.lua", "channel_slot.lua", "release.lua", "handon.lua", "release_queued.lua")
	slotCleanupScript     = script("meta_none.lua", "channel_slot.lua", "cleanup.lua", "handon.lua", "cleanup_queued.lua")
	slotMetaCleanupScript = script("meta_key.lua", "channel_slot.lua", "cleanup.lua", "handon.lua", "cleanup_queued.lua")
	permitScanScript      = script("permit_scan.lua")

	// Every form's.
	queueLeaveScript = script("queue_leave.lua")
	markScript       = script("mark.lua")
	fenceScript      = script("fence.lua")
	inspectScript    = script("holder_meta.lua", "inspect.lua")
	forceScript      = script("holder_meta.lua", "force_release.lua")
	announceScript   = script("announce.lua")
)

// The requests of a lease, each its form's (form.go).

func (ls *lease) acquireRequest(w place, value string) *transport.Request {
	return ls.form.acquire(ls, w, value)
}

func (ls *lease) extendRequest(ttlArg, won string) *transport.Request {
	return ls.form.extend(ls, ttlArg, won)
}

func (ls *lease) releaseRequest() *transport.Request { return ls.form.release(ls) }

func (ls *lease) cleanupRequest(value string) *transport.Request {
	return ls.form.cleanup(ls, value)
}

// leaveRequest takes the entry of the call at w out of the queue; with
// gaveUp "1" a release's grant to it goes too.
func (ls *lease) leaveRequest(w place, gaveUp string) *transport.Request {
	if ls.multi != nil {
		return ls.multi.leaveRequest(w) // a set is never granted a key: nothing to give up
	}
	k := ls.keys
	return transport.NewRequest(queueLeaveScript, []string{k.lock}, w.member, k.channel, gaveUp)
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
