package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// The re-entrant form of a lock (docs/design.md, "Re-entry and resume").
// A plain lock is a string key, "<token>.<attempt>", set by SET NX PX. A lock
// acquired with [AcquireOptions].Reentrant is one hash under
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
// nestedHoldValue is what a nested hold's field holds: its one attempt.
const nestedHoldValue = "0"

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
// The lock must have been acquired with [AcquireOptions].Reentrant; Go has no thread identity, so re-entry is always explicit. To
// re-enter from another process, pass [Lock.Handle] and call
// [Client.Resume] there. Reenter fails, with an error matching
// [ErrNotAcquired], when the lock has ended or a quorum no longer holds
// it; it then leaves nothing behind.
func (l *Lock) Reenter(ctx context.Context, ttl time.Duration, opts *ResumeOptions) (*Lock, error) {
	if err := checkCtx(ctx, "Reenter"); err != nil {
		return nil, err
	}
	if l.ls.form != formHold {
		return nil, invalidf("redlock: Reenter %q: the lock is not re-entrant: acquire it with AcquireOptions.Reentrant", l.ls.name)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("redlock: Reenter %q: the lock has ended: %w (%w)", l.ls.name, ErrNotAcquired, err)
	}
	nl, err := l.c.join(ctx, l.Handle(), ttl, opts)
	var qe *QuorumError
	if errors.As(err, &qe) {
		qe.Op = "reenter"
	}
	return nl, err
}

// join makes a lock of h's on this client: for a re-entrant h a new hold
// (added on the nodes), else a share of h's own lease (extended on the
// nodes). Either way it needs a quorum of the nodes that hold h's token, and
// counts its deadline from its own round.
func (c *Client) join(ctx context.Context, h Handle, ttl time.Duration, opts *ResumeOptions) (*Lock, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	spec := leaseSpec{form: formPlain, fenced: h.fence != 0, token: h.token, tag: newToken()}
	switch h.kind {
	case 'r': // a hold of its own
		spec.form, spec.hold = formHold, spec.tag
	case 'm':
		spec.form = formMeta
	case 's': // a reader's share (rw.go)
		spec.form = formShared
	}
	ls := c.newLease(h.name, ttl, spec)
	hold := ls.form == formHold
	cl := newCall(ctx, ls)
	start := c.clock.Now()
	cl.begin(1)
	value := ls.prefix + nestedHoldValue // what cleanup matches: the hold's one attempt
	// A plain share counts what the sender's lease counts; a hold, its own
	// field (lease.counted).
	won := ls.counted(h.attempt)
	req := ls.extendRequest(ls.ttlArg, won)
	if hold {
		req = holdForm{}.addHold(ls)
	}
	r := sendRound(ctx, c, req, observed(ctx, c, &transport.Spec[int64]{
		Need: c.quorum, PerNode: ls.timeout, Parse: int64Reply, Accept: isOne,
		Late: func(rp transport.Reply[int64]) {
			if hold && (rp.Err != nil || rp.Val == 1) && cl.lateAnswer(1, rp.Node) {
				c.cleanup(ctx, ls, value, []int{rp.Node})
			}
		}}, EventAcquire, ls.name))
	now := c.clock.Now()
	v := validity(ttl, now.Sub(start), c.opts.DriftFactor)
	until := start.Add(v)
	ev := Event{Kind: EventAcquire, Name: h.name, Token: h.token, Hold: ls.tag, Fence: h.fence, Start: start, End: now, Attempts: 1,
		Shared: ls.form == formShared}
	if r.OK >= c.quorum && v > 0 && ctx.Err() == nil && now.Before(until) && !c.isClosed() {
		cl.win()
		l := newLock(c, cl, won, h.fence, until)
		ev.Until = until
		c.observe(ctx, ev)
		if opts != nil && opts.AutoExtend {
			l.startWatchdog()
		}
		return l, nil
	}
	qerr := &QuorumError{Op: "resume", Name: h.name, Quorum: c.quorum, Agreed: r.OK, Validity: v, Attempts: 1, Err: ctx.Err(),
		Nodes: nodeErrorsOf(c, r, ls.timeout, func(v int64) error {
			if v == 1 {
				return nil
			}
			return notOursError{}
		}), sentinel: ErrNotAcquired}
	if hold {
		var mine []int
		for i, rp := range r.Replies {
			if r.Answered[i] && (rp.Err != nil || rp.Val == 1) {
				mine = append(mine, i)
			}
		}
		c.cleanup(ctx, ls, value, append(mine, cl.fail()...))
	} else {
		cl.fail()
	}
	ev.Err = qerr
	c.observe(ctx, ev)
	return nil, qerr
}
