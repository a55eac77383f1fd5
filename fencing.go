package redlock

import (
	"context"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// fencePlan is what phase 1 of a fenced acquisition decided.
type fencePlan struct {
	fence     uint64 // F: the largest counter value among the granting nodes
	writeBack bool   // phase 2 is needed: fewer than a quorum already hold F
}

// planFence picks the candidate fence F from the counter values the granting
// nodes returned (phase 1) and decides whether the write-back (phase 2) can
// be skipped.
//
// Why write back at all: a later acquisition's quorum intersects the
// write-back quorum in at least one node whose counter is already >= F, so
// its INCR there returns more than F, and so does its max. The max of the
// INCRs alone does not give that: the nodes that returned F may be a
// minority, and a later quorum may avoid them all.
//
// The fast path: nodes whose INCR returned exactly F already hold F; when
// they alone are a quorum (the normal case, as healthy nodes' counters move
// together), they are the write-back quorum and phase 2 is skipped.
func planFence(granted []uint64, quorum int) fencePlan {
	var f uint64
	for _, v := range granted {
		f = max(f, v)
	}
	atF := 0
	for _, v := range granted {
		if v == f {
			atF++
		}
	}
	return fencePlan{fence: f, writeBack: atF < quorum}
}

// writeBackFence raises ls's fence counter to at least f on every node and
// returns the round, which needs a quorum of acknowledgements. It never
// lowers a counter.
func (c *Client) writeBackFence(ctx context.Context, ls *lease, f uint64, timeout time.Duration) *transport.Round[int64] {
	return sendRound(ctx, c, ls.fenceRequest(strconv.FormatUint(f, 10)), &transport.Spec[int64]{
		Need: c.quorum, PerNode: timeout, Parse: int64Reply, Accept: isOne})
}

// settleFence picks the fence of an acquisition of ls that began at start,
// whose granting nodes returned the counters granted, and writes it back to
// a quorum when planFence asks for it. It returns the fence and the
// acquisition's validity after that; failed is the write-back round when it
// missed its quorum (the acquisition fails), and nil otherwise. An attempt
// (try) and the grants of releases (takeGrant) settle their fences alike.
func (c *Client) settleFence(ctx context.Context, ls *lease, granted []uint64, start time.Time) (fence uint64, v time.Duration, failed *transport.Round[int64]) {
	plan := planFence(granted, c.quorum)
	v = validity(ls.ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
	if !plan.writeBack {
		return plan.fence, v, nil
	}
	if wb := c.writeBackFence(ctx, ls, plan.fence, min(ls.timeout, v)); wb.OK < c.quorum {
		return plan.fence, v, wb
	}
	return plan.fence, validity(ls.ttl, c.clock.Now().Sub(start), c.opts.DriftFactor), nil
}
