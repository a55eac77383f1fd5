package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"time"
)

// lease is what one Acquire call (or Resume, Reenter) fixes once and every
// later step of its lock reuses as it is: name, form, keys, token, TTL. It
// never changes after it is made, so the lock, its watchdog and the late
// answers of its attempts read it without a lock.
type lease struct {
	name     string
	form     form // the kind of hold: what its requests are (form.go)
	keys     keys
	token    string // the call's token: [Lock.Token]
	prefix   string // token + ".": the start of every attempt's value
	first    string // prefix + "1": the first attempt's value (see value)
	ttl      time.Duration
	ttlArg   string        // ttl in whole ms, as the scripts take it
	timeout  time.Duration // per-node timeout under ttl
	fenced   bool          // the lease takes a fence
	fenceArg string        // fenced as the scripts take it: "1" or "0"
	hold     string        // the re-entrant form: this lease's hold id
	meta     string        // the holder's metadata (AcquireOptions.Metadata), for the forms that keep it
	metaArg  string        // what the meta key keeps of it: "<token>:<meta>"
	tag      string        // Event.Hold of the lock: "" for Acquire's, random for Reenter's and Resume's
	permit   *permitSpec   // the slot form: the semaphore's keys and the slot (permit.go)
	multi    *multiSpec    // the set form: the names' keys (multi.go)
}

// permitSpec is what a slot's lease adds: the limit and the slot (the
// slot's scripts derive the semaphore's keys from the slot's: permit.lua).
type permitSpec struct {
	limitArg string // the limit, in decimal
	yield    string // "1": the attempt yields to the gate's holder (permit.lua)
	slot     uint64
}

// fenceOf returns the permit fence of a slot won with counter value n:
// n*MaxPermits + slot, so that two permits never share a fence and a
// permit taken after another was granted has a larger one, whatever the
// limits of the two (see Permit.Fence). permit.lua keeps n below 2^53-1,
// so the fence fits 64 bits.
func (p *permitSpec) fenceOf(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return n*MaxPermits + p.slot
}

// leaseSpec is what a new lease is made of besides name and ttl.
type leaseSpec struct {
	form   form // nil: formPlain
	fenced bool
	meta   string // the holder's metadata
	token  string // a given token (Resume, Reenter); "": a new random one
	hold   string // the re-entrant form: a given hold (Resume, Reenter); "": the token
	tag    string // Event.Hold
	// keys, when set, are the lease's keys instead of the name's: a
	// semaphore's slot or gate (permit_wait.go), with permit for a slot.
	keys   *keys
	permit *permitSpec
	multi  *multiSpec // the set form (multi.go)
}

// tokenLen is the length of a token: 16 random bytes in unpadded base64.
const tokenLen = 22

// newLease makes the lease of name for ttl. Every string it is made of,
// but the name, is one allocation: the keys (appendKeys), then
// "<token>.1<ttl ms>".
func (c *Client) newLease(name string, ttl time.Duration, spec leaseSpec) *lease {
	ls := &lease{name: name, form: spec.form, ttl: ttl, timeout: c.nodeTimeout(ttl), fenced: spec.fenced, fenceArg: "0",
		meta: spec.meta, tag: spec.tag, permit: spec.permit, multi: spec.multi}
	if spec.fenced {
		ls.fenceArg = "1"
	}
	if ls.form == nil {
		ls.form = formPlain
	}
	var buf [352]byte // room for the keys and token of a name up to about 85 bytes under the default prefix
	b, ends := appendKeys(buf[:0], c.opts.KeyPrefix, name)
	ls.keys = ends.keysIn(ls.withToken(c, b, spec.token, len(b)))
	if spec.keys != nil {
		ls.keys = *spec.keys
	}
	if ls.form == formHold {
		ls.hold = spec.hold
		if ls.hold == "" {
			ls.hold = ls.token
		}
	}
	return ls
}

// withToken appends token (a new random one when "") and the TTL to b,
// whose first t0 bytes are kept, and sets ls's token and what is made of
// it. It returns b as a string, in one allocation.
func (ls *lease) withToken(c *Client, b []byte, token string, t0 int) string {
	b = b[:t0]
	if token == "" {
		var random [16]byte
		_, _ = rand.Read(random[:]) // crypto/rand.Read never fails
		b = base64.RawURLEncoding.AppendEncode(b, random[:])
	} else {
		b = append(b, token...)
	}
	t1 := len(b)
	b = append(b, ".1"...)
	d0 := len(b)
	b = strconv.AppendInt(b, ls.ttl.Milliseconds(), 10)
	s := string(b)
	ls.token, ls.prefix, ls.first, ls.ttlArg = s[t0:t1], s[t0:t1+1], s[t0:d0], s[d0:]
	ls.metaArg = ""
	if ls.meta != "" {
		ls.metaArg = ls.token + ":" + ls.meta
	}
	if c.sharedValue {
		ls.prefix = ls.token
	}
	return s
}

// renewed returns a copy of ls, every field kept but the token (a new
// random one) and what is made of it: the lease of a call that takes the
// place of ls's (a split, grant.go).
func (ls *lease) renewed(c *Client) *lease {
	n := *ls
	n.withToken(c, nil, "", 0)
	if n.form == formHold && ls.hold == ls.token {
		n.hold = n.token
	}
	return &n
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
// grant.go) counts on a node, as its extend sends it (the form's counted).
func (ls *lease) counted(attempt int) string { return ls.form.counted(ls, attempt) }

// newToken returns 128 random bits as URL-safe text (no '.', which
// separates the token from the attempt number in the value on the nodes):
// the proof of ownership every extend and release checks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}
