package redlock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// The re-entrant form of a lock (docs/design.md, "Re-entry and resume").
// A plain lock is a string key, "<token>.<attempt>", set by SET NX PX. A lock
// acquired with [AcquireOptions].Reentrant (or Metadata) is one hash under
// the same key, with one TTL and no other key:
//
//	rl-owner  the token of the Acquire call that made it (a hash
//	          without it is not a lock: WRONGTYPE, as any other key)
//	rl-fence  the fence counter after this node's increment (for Inspect)
//	rl-ttl    the longest TTL any hold asked for, in ms: the key's TTL
//	rl-meta   the holder's metadata
//	h:<id>    one field per hold: h:<token> for the Acquire call's own
//	          hold (valued with its attempt number), h:<random id> for
//	          each nested acquire or resume
//
// A hold is released by removing its field; the key is deleted only with
// the last one. A node that missed the add of a hold has nothing to remove,
// so a quorum that granted a hold keeps the key until that hold is released
// or the TTL ends: no node frees the lock early on a quorum.
var (
	//go:embed hold_extend.lua
	holdExtendSrc string
	//go:embed hold_release.lua
	holdReleaseSrc string

	holdExtendScript  = redis.NewScript(holdExtendSrc)
	holdReleaseScript = redis.NewScript(handOnSrc + holdReleaseSrc) // its dropDead
)

// MaxMetadataLen is the longest [AcquireOptions].Metadata accepted, in bytes.
const MaxMetadataLen = 256

// checkMetadata says what is wrong with a holder's metadata, if anything.
func checkMetadata(m string) error {
	switch {
	case len(m) > MaxMetadataLen:
		return fmt.Errorf("redlock: Metadata of %d bytes is longer than %d: keep it to a short holder id such as \"host:pid:job\"", len(m), MaxMetadataLen)
	case !utf8.ValidString(m):
		return errors.New("redlock: Metadata is not valid UTF-8: use printable text such as \"host:pid:job\"")
	}
	return nil
}

// nestedHoldValue is what a nested hold's field holds: its one attempt.
const nestedHoldValue = "0"

// extendRequest returns the extend request of ls's form: the node answers
// 1 when it extended ls's hold, 0 when it holds nothing of ls's.
func (ls *lease) extendRequest(ttlArg string) *request {
	if ls.hold == "" {
		return newRequest(extendScript, []string{ls.key}, ls.prefix, ttlArg)
	}
	return newRequest(holdExtendScript, []string{ls.key}, ls.token, ls.hold, ttlArg, "0")
}

// releaseRequest returns the release request of ls's form.
func (ls *lease) releaseRequest(channel string) *request {
	keys := []string{ls.key, ls.queueKey, ls.queueTimesKey}
	if ls.hold == "" {
		return newRequest(releaseScript, append(keys, ls.fenceKey), ls.prefix, channel)
	}
	return newRequest(holdReleaseScript, keys, ls.token, ls.hold, channel, "")
}

// cleanupRequest returns the request that removes what one failed attempt
// wrote (value) on a node, if the key still holds exactly that, and hands
// the freed key on to the head of the waiting order (cleanup.lua).
func (ls *lease) cleanupRequest(value string) *request {
	if ls.hold == "" {
		return newRequest(cleanupScript, []string{ls.key, ls.queueKey, ls.queueTimesKey, ls.fenceKey}, value, ls.channel)
	}
	attempt := strings.TrimPrefix(value, ls.prefix)
	return newRequest(holdReleaseScript, []string{ls.key, ls.queueKey, ls.queueTimesKey}, ls.token, ls.hold, "", attempt)
}

// ResumeOptions configures [Client.Resume] and [Lock.Reenter]. A nil
// *ResumeOptions means no auto-extend.
type ResumeOptions struct {
	// AutoExtend starts a watchdog for the returned lock, as
	// [AcquireOptions].AutoExtend does.
	AutoExtend bool
}

// Reenter takes the lock again for a nested critical section of the same
// flow of work: it adds a hold of its own to the lock on a quorum of the
// nodes and returns it as a new *Lock, with the same name, token and fence
// and a local deadline of its own, counted from the start of this call. The
// nodes keep the lock until every hold is released (or the TTL ends):
// releasing the returned lock never frees the outer one, and releasing the
// outer one first leaves the lock held for this one. The key's TTL becomes
// the longest any hold asked for; a shorter ttl never shortens it.
//
// The lock must have been acquired with [AcquireOptions].Reentrant (or
// Metadata); Go has no thread identity, so re-entry is always explicit. To
// re-enter from another process, pass [Lock.Handle] and call
// [Client.Resume] there. Reenter fails, with an error matching
// [ErrNotAcquired], when the lock has ended or a quorum no longer holds
// it; it then leaves nothing behind.
func (l *Lock) Reenter(ctx context.Context, ttl time.Duration, opts *ResumeOptions) (*Lock, error) {
	if l.ls.hold == "" {
		return nil, fmt.Errorf("redlock: Reenter %q: the lock is not re-entrant: acquire it with AcquireOptions.Reentrant", l.ls.name)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("redlock: Reenter %q: the lock has ended: %w (%w)", l.ls.name, ErrNotAcquired, err)
	}
	return l.c.join(ctx, "reenter", l.Handle(), ttl, opts)
}

// join makes a lock of h's on this client: for a re-entrant h a new hold
// (added on the nodes), else a share of h's own lease (extended on the
// nodes). Either way it needs a quorum of the nodes that hold h's token, and
// counts its deadline from its own round.
func (c *Client) join(ctx context.Context, op string, h Handle, ttl time.Duration, opts *ResumeOptions) (*Lock, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	ls := c.newLease(h.name, ttl, h.fence != 0)
	ls.token, ls.prefix = h.token, h.token+"."
	ls.queueKey, ls.queueTimesKey = queueKeys(ls.key)
	add := "0"
	ls.tag = newToken()
	if h.reentrant {
		ls.hold, add = ls.tag, "1"
	}
	cl := &call{leaveTurn: func() {}}
	start := c.clock.Now()
	cl.begin(1)
	value := ls.prefix + nestedHoldValue // what cleanup matches: the hold's one attempt
	req := ls.extendRequest(ls.ttlArg)
	if ls.hold != "" {
		req = newRequest(holdExtendScript, []string{ls.key}, ls.token, ls.hold, ls.ttlArg, add)
	}
	r := scriptRound(ctx, c, c.quorum, ls.timeout, req.observed(EventAcquire, ls.name), nil,
		int64Reply,
		func(v int64, err error) bool { return err == nil && v == 1 },
		func(rp reply[int64]) {
			if ls.hold != "" && (rp.err != nil || rp.val == 1) && cl.lateAnswer(1, rp.node) {
				c.cleanup(ctx, ls, value, []int{rp.node})
			}
		})
	now := c.clock.Now()
	v := validity(ttl, now.Sub(start), c.opts.DriftFactor)
	until := start.Add(v)
	ev := Event{Kind: EventAcquire, Name: h.name, Token: h.token, Hold: ls.tag, Fence: h.fence, Start: start, End: now, Attempts: 1}
	if r.ok >= c.quorum && v > 0 && ctx.Err() == nil && now.Before(until) && !c.isClosed() {
		cl.win()
		l := newLock(c, ls, h.fence, until, cl)
		ev.Until = until
		c.observe(ev)
		if opts != nil && opts.AutoExtend {
			l.startWatchdog()
		}
		return l, nil
	}
	qerr := &QuorumError{Op: op, Name: h.name, Quorum: c.quorum, Agreed: r.ok, Validity: v, Attempts: 1, Err: ctx.Err(),
		Nodes: nodeErrorsOf(c, r, ls.timeout, func(v int64) error {
			if v == 1 {
				return nil
			}
			return notOursError{}
		}), sentinel: ErrNotAcquired}
	if ls.hold != "" {
		var mine []int
		for i, rp := range r.replies {
			if r.answered[i] && (rp.err != nil || rp.val == 1) {
				mine = append(mine, i)
			}
		}
		c.cleanup(ctx, ls, value, append(mine, cl.fail()...))
	} else {
		cl.fail()
	}
	ev.Err = qerr
	c.observe(ev)
	return nil, qerr
}
