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
	if ls.fenced {
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
