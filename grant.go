package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// Handoff by grant (docs/design.md, "Waiting in order"). When a release
// frees a key whose queue's head waits for a plain lock, the release script
// sets the key to "<token>.0" for the head's TTL, increments the fence
// counter if the head is fenced, and tells the head so in its notice
// (release.lua). A head that hears of such grants from a quorum of the nodes
// holds the lock without a round of its own, which halves the time a
// handoff between processes takes.
//
// Its validity counts from the start of its call's first attempt: a grant
// needs the call's queue entry on the node, which only an attempt of the
// call can have put there, so every grant came after that start, and each
// grant's key lives at least the TTL from then (nothing shortens it: the
// call's own attempts keep it and only refresh it, a failed attempt's
// cleanup deletes its own value only, and the key goes only with the lock's
// release, the call's leaving the queue when it gives up, or a forced
// release). The fences are those the grants returned, planned and written
// back like an attempt's.
//
// A call that has waited longer than 1/grantShare of its TTL does not take
// the lock from the grants but makes one more attempt, which finds the
// grants and succeeds on them, so that its lock's validity counts from that
// attempt rather than from the start of a long wait. (A lock's deadline is
// its start plus its validity, which is the TTL less the time since the
// start and the drift: a lock taken from the grants keeps at least
// 1-2/grantShare of its TTL, less the drift.)
//
// A grant goes only to a head whose Client listens on the node (the release
// undoes it otherwise): a waiter whose process is gone is skipped as before,
// when its entry expires. A waiter that hangs without closing its
// connections, and becomes the head meanwhile, holds the key as a hung
// holder does: until the TTL.
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
	return newLock(c, cl, fence, until)
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
	nls := c.newLease(ls.name, ls.ttl, leaseSpec{fenced: ls.fenceArg == "1", reentrant: ls.hold != "", meta: ls.meta})
	ncl := newCall(nls)
	ncl.leaveTurn, ncl.retry = a.cl.leaveTurn, a.cl.retry
	nw := newWaiter(nls, w.mode, c.clock.Now(), c.waker.id)
	nw.priority = w.priority
	// Its next attempt comes after the policy's first delay, as a head's
	// does: the other waiters of the split start over too, and their
	// jittered attempts reach the nodes one after the other.
	nw.headAttempts = 1
	a.cl, a.w, a.first = ncl, nw, c.clock.Now()
}
