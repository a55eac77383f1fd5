package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// Handoff by grant (docs/design.md, "Waiting in order", has the argument).
// A release that frees a key whose queue's head waits for a plain lock sets
// the key to "<token>.0" for the head's TTL (with a fence, if fenced) and
// says so in its notice; a head granted by a quorum holds the lock without a
// round of its own. Its validity counts from the start of its call's first
// attempt, since no grant can come before it and nothing shortens a
// granted key. A call that has waited longer than 1/grantShare of its TTL
// makes one more attempt instead, which succeeds on the grants, so that its
// validity counts from that attempt.
const grantShare = 10

// takeGrant returns the lock that the releases' grants to the call cl
// made, fences being the grants' fences (one per granting node), or nil
// when they are too few, the wait was too long, a fence write-back failed
// or the Client was closed: the caller then makes an attempt. first is when
// the call's first attempt began.
func (c *Client) takeGrant(ctx context.Context, cl *call, fences []uint64, first time.Time) *Lock {
	ls := cl.ls
	if len(fences) < c.quorum || ctx.Err() != nil {
		return nil
	}
	elapsed := c.clock.Now().Sub(first)
	if elapsed > ls.ttl/grantShare {
		return nil
	}
	v := validity(ls.ttl, elapsed, c.opts.DriftFactor)
	var fence uint64
	if ls.fenceArg == "1" {
		var failed *transport.Round[int64]
		if fence, v, failed = c.settleFence(ctx, ls, fences, first); failed != nil {
			return nil
		}
	}
	until := first.Add(v)
	if v <= 0 || !c.clock.Now().Before(until) || c.isClosed() {
		return nil
	}
	cl.winGrant()
	return newLock(c, cl, ls.counted(0), fence, until)
}

// split ends the call as if it gave up, and makes a new call take its place
// in the waiting order (the same priority) and its local turn. It is for a
// call whose attempt failed while releases had granted it the key on some
// nodes: the nodes granted the key to different waiters (a waiter's entry
// reached a node after a release there had picked the next head), and
// every grant stays while its call waits, since the call may count it from
// its notice; no waiter reaches a quorum, and none would give way. Leaving
// the queue takes the call's grants away (queue_leave.lua) and hands the key
// on; its late notices no longer name a waiting call. The new call starts
// afresh: its validity counts from its own first attempt.
func (a *acquisition) split(ctx context.Context) {
	c, ls, w := a.c, a.cl.ls, a.w
	w.gaveUp.Store(true) // before done: see lateQueued
	w.done.Store(true)
	c.leaveQueue(ctx, ls, w)
	nls := c.newLease(ls.name, ls.ttl, leaseSpec{fenced: ls.fenceArg == "1", reentrant: ls.hold != "", meta: ls.meta,
		keys: &ls.keys, permit: ls.permit})
	ncl := newCall(a.cl.ctx, nls)
	ncl.leaveTurn, ncl.retry = a.cl.leaveTurn, a.cl.retry
	nw := newWaiter(nls, w.mode, c.clock.Now(), c.waker.id)
	nw.priority = w.priority
	// Its next attempt comes after the policy's first delay, as a head's
	// does: the other waiters of the split start over too, and their
	// jittered attempts reach the nodes one after the other.
	nw.headAttempts = 1
	a.cl, a.w, a.first = ncl, nw, c.clock.Now()
}
