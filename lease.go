package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"time"
)

// lease is what one Acquire call (or Resume, Reenter) fixes once and every
// later step of its lock reuses as it is: name, keys, token, TTL. It never
// changes after it is made, so the lock, its watchdog and the late answers
// of its attempts read it without a lock.
type lease struct {
	name     string
	keys     keys
	token    string // the call's token: [Lock.Token]
	prefix   string // token + ".": the start of every attempt's value
	first    string // prefix + "1": the first attempt's value (see value)
	ttl      time.Duration
	ttlArg   string        // ttl in whole ms, as the scripts take it
	timeout  time.Duration // per-node timeout under ttl
	fenceArg string        // "1" fenced, "0" not
	hold     string        // the re-entrant form (reentry.go): this lock's hold id; "" for a plain lock
	meta     string        // the holder's metadata (AcquireOptions.Metadata)
	metaArg  string        // what the acquire script stores of it: meta in the hash, "<token>:<meta>" in a plain lock's meta key
	tag      string        // Event.Hold of the lock: "" for Acquire's, random for Reenter's and Resume's
	permit   *permitSpec   // a semaphore's slot (permit.go); nil for a lock
	// What of the lease's events the observer gets (Options.Observe):
	// hidden, none (a semaphore's gate, its waiters' order); callReports,
	// none of the acquire and wait events (a semaphore's slot attempts:
	// AcquirePermit reports the call once). Node events are reported.
	hidden, callReports bool
}

// permitSpec is what a slot's lease adds: the semaphore's gate and limit
// keys as its scripts take them, and the slot.
type permitSpec struct {
	gate, limitKey string
	limitArg       string // the limit, in decimal
	yield          string // "1": the attempt yields to the gate's holder (permit.lua)
	slot           uint64
}

// fenceOf returns the permit fence of a slot won with counter value n:
// n*MaxPermits + slot, whatever the limit, so that two permits never share
// a fence and a permit taken after another was granted has a larger one,
// also when the limit changed in between (see Permit.Fence). permit.lua
// keeps n below 2^53, so the fence is at most 2^63-1.
func (p *permitSpec) fenceOf(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return n*MaxPermits + p.slot
}

// leaseSpec is what a new lease is made of besides name and ttl.
type leaseSpec struct {
	fenced    bool
	reentrant bool   // the hash form: the lease's hold is its token
	meta      string // the holder's metadata
	token     string // a given token (Resume, Reenter); "": a new random one
	hold      string // a given hold (Resume, Reenter of a re-entrant lock)
	tag       string // Event.Hold
	// keys, when set, are the lease's keys instead of the name's: a
	// semaphore's slot or gate (permit_wait.go), with permit for a slot.
	// A lease made again from another (a split) keeps both.
	keys   *keys
	permit *permitSpec
	// hidden, callReports: see lease.
	hidden, callReports bool
}

// tokenLen is the length of a token: 16 random bytes in unpadded base64.
const tokenLen = 22

// newLease makes the lease of name for ttl. Every string it is made of,
// but the name, is one allocation: the keys (appendKeys), then
// "<token>.1<ttl ms>".
func (c *Client) newLease(name string, ttl time.Duration, spec leaseSpec) *lease {
	ls := &lease{name: name, ttl: ttl, timeout: c.nodeTimeout(ttl), fenceArg: "0", meta: spec.meta, tag: spec.tag}
	if spec.fenced {
		ls.fenceArg = "1"
	}
	var buf [352]byte // room for the keys and token of a name up to about 85 bytes under the default prefix
	b, ends := appendKeys(buf[:0], c.opts.KeyPrefix, name)
	t0 := len(b)
	if spec.token == "" {
		var random [16]byte
		_, _ = rand.Read(random[:]) // crypto/rand.Read never fails
		b = base64.RawURLEncoding.AppendEncode(b, random[:])
	} else {
		b = append(b, spec.token...)
	}
	t1 := len(b)
	b = append(b, ".1"...)
	d0 := len(b)
	b = strconv.AppendInt(b, ttl.Milliseconds(), 10)
	s := string(b)
	ls.keys = ends.keysIn(s)
	if spec.keys != nil {
		ls.keys = *spec.keys
	}
	ls.permit = spec.permit
	ls.hidden, ls.callReports = spec.hidden, spec.callReports
	ls.token, ls.prefix, ls.first, ls.ttlArg = s[t0:t1], s[t0:t1+1], s[t0:d0], s[d0:]
	switch {
	case spec.hold != "":
		ls.hold = spec.hold
	case spec.reentrant:
		ls.hold = ls.token
	}
	ls.metaArg = ls.meta
	if ls.meta != "" && ls.hold == "" {
		ls.metaArg = ls.token + ":" + ls.meta
	}
	if c.sharedValue {
		ls.prefix = ls.token
	}
	return ls
}

// millis formats d in whole milliseconds, as the scripts take a TTL.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// value is what attempt number attempt writes to the lock key: each attempt
// of a call writes a value of its own, so that a delayed cleanup of one
// attempt can never delete the key of the next; attempt 0 is a release's
// grant to the call ("<token>.0", handon.lua). The lock's release matches
// the prefix, so it deletes every attempt's value of the call; its extend
// matches the value the lease won only (see counted).
func (ls *lease) value(attempt int) string {
	switch {
	case ls.prefix == ls.token: // the negative control: one value for all
		return ls.token
	case attempt == 1:
		return ls.first
	}
	return ls.prefix + strconv.Itoa(attempt)
}

// counted returns what a lease won by attempt (0: the releases' grants,
// grant.go) counts on a node, as its extend sends it (docs/design.md,
// "What a lease counts"): for a plain lock, the attempt's value — the
// extend script counts the call's grant "<token>.0" with it, which an
// attempt that met the grant kept; for the re-entrant form, the hold's
// field value: the winning attempt's number for the Acquire call's own hold,
// nestedHoldValue for a hold added by Reenter or Resume. A value of another
// attempt of the call is never counted: its exact cleanup may delete it at
// any time, however late.
func (ls *lease) counted(attempt int) string {
	switch {
	case ls.hold == "":
		return ls.value(attempt)
	case ls.hold != ls.token:
		return nestedHoldValue
	}
	return strconv.Itoa(attempt)
}

// newToken returns 128 random bits as URL-safe text (no '.', which
// separates the token from the attempt number in the value on the nodes):
// the proof of ownership every extend and release checks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}
