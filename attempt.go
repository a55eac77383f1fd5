package redlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// grant is one node's answer to the acquire script.
type grant struct {
	ok    bool
	fence uint64 // the counter after the increment, when ok and fenced
	pttl  int64  // the holder's remaining TTL in ms, when not ok
	rank  int64  // when not ok: the caller's rank in the queue (0: the head), -1 when not queued
}

// parseGrant reads the acquire script's reply: "1:<fence>", or
// "0:<pttl>", the latter followed by ":<rank>", the caller's rank in the
// queue, when it queues.
func parseGrant(s string) (grant, error) {
	status, rest, ok := strings.Cut(s, ":")
	switch {
	case ok && status == "1":
		f, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return grant{}, fmt.Errorf("fence counter %q from the acquire script is not a uint64", rest)
		}
		return grant{ok: true, fence: f}, nil
	case ok && status == "0":
		g := grant{rank: -1}
		pttl, rank, queued := strings.Cut(rest, ":")
		var err error
		if g.pttl, err = strconv.ParseInt(pttl, 10, 64); err == nil && queued {
			g.rank, err = strconv.ParseInt(rank, 10, 64)
		}
		if err == nil {
			return g, nil
		}
	}
	return grant{}, fmt.Errorf("unexpected reply %q from the acquire script", s)
}

// grantReply reads a node's reply to the acquire script. The reply is one
// string, not a table, so that reading it takes no allocation but the
// string's.
func grantReply(cmd *redis.Cmd) (grant, error) {
	s, err := cmd.Text()
	if err != nil {
		return grant{}, err
	}
	return parseGrant(s)
}

// granted accepts a node that granted the lock.
func granted(g grant, err error) bool { return err == nil && g.ok }

// try makes attempt number attempt of the call cl, in its place w in the
// waiting order.
func (c *Client) try(ctx context.Context, cl *call, w *waiter, attempt int) (*Lock, *QuorumError) {
	ls := cl.ls
	start := c.clock.Now()
	value := ls.value(attempt)
	cl.begin(attempt)
	r := sendRound(ctx, c, ls.acquireRequest(w.place, value), observed(ctx, c, &transport.Spec[grant]{
		Need: c.quorum, PerNode: ls.timeout, Parse: grantReply, Accept: granted,
		Late: func(rp transport.Reply[grant]) {
			if (rp.Err != nil || rp.Val.ok) && cl.lateAnswer(attempt, rp.Node) {
				c.cleanup(ctx, ls, value, []int{rp.Node})
				if rp.Err == nil && !w.done.Load() {
					cl.lateWin() // after the cleanup: the next attempt finds the key free
				}
			}
			if rp.Err != nil || !rp.Val.ok {
				c.lateQueued(ctx, ls, w, rp.Node)
			}
		}}, EventAcquire, ls.name))

	v := validity(ls.ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
	// What the error says if the attempt fails: made only then.
	op, agreed := "acquire", r.OK
	var nodes []error // a failed write-back's

	if r.OK >= c.quorum && v > 0 && ctx.Err() == nil {
		var fence uint64
		ok := true
		if ls.fenceArg == "1" {
			var buf [8]uint64
			fences := buf[:0]
			for i, rp := range r.Replies {
				if r.Answered[i] && rp.Err == nil && rp.Val.ok {
					fences = append(fences, rp.Val.fence)
				}
			}
			var wb *transport.Round[int64]
			if fence, v, wb = c.settleFence(ctx, ls, fences, start); wb != nil {
				ok = false
				op, agreed = "fence write-back", wb.OK
				nodes = nodeErrorsOf(c, wb, min(ls.timeout, v), noRefusal[int64])
			} else {
				ok = v > 0
			}
		}
		// Success needs a deadline still ahead when we return, not only a
		// positive validity: the deadline counts from the start. A Client
		// closed meanwhile hands out no lock: the attempt is undone below.
		until := start.Add(v)
		if ok && c.clock.Now().Before(until) && !c.isClosed() {
			cl.win()
			return newLock(c, cl, ls.counted(attempt), fence, until), nil
		}
		if ok {
			v = until.Sub(c.clock.Now())
		}
	}

	qerr := &QuorumError{Op: op, Name: ls.name, Quorum: c.quorum, Agreed: agreed, Validity: v, Nodes: nodes, sentinel: ErrNotAcquired}
	if qerr.Nodes == nil { // not a failed write-back, which named its own nodes
		qerr.Nodes = nodeErrorsOf(c, r, ls.timeout, func(g grant) error {
			if g.ok {
				return nil
			}
			qerr.Held++
			return &HeldError{TTL: time.Duration(g.pttl) * time.Millisecond}
		})
	}

	w.queued(c.quorum, r)

	// Failed: clean up where this attempt may have set the key. Nodes that
	// said "held" hold nothing of this attempt's; nodes still pending clean
	// up after themselves when they answer.
	var mine []int
	for i, rp := range r.Replies {
		if r.Answered[i] && (rp.Err != nil || rp.Val.ok) {
			mine = append(mine, i)
		}
	}
	mine = append(mine, cl.fail()...)
	c.cleanup(ctx, ls, value, mine)
	return nil, qerr
}

// cleanup deletes the key of one failed attempt (its exact value) on the
// given nodes, waiting for them or the per-node timeout, even if ctx has
// ended; failures are logged (the key expires with its TTL). Nobody waits
// for such a key, so nobody is woken: waking every waiter for it would
// start a storm of attempts.
func (c *Client) cleanup(ctx context.Context, ls *lease, value string, which []int) {
	if len(which) == 0 {
		return
	}
	set := make([]bool, len(c.nodes))
	for _, i := range which {
		set[i] = true
	}
	r := sendRound(context.WithoutCancel(ctx), c, ls.cleanupRequest(value), &transport.Spec[int64]{
		PerNode: ls.timeout, Which: set, Parse: int64Reply, Accept: anyAnswer[int64]})
	if c.opts.Logger == nil {
		return
	}
	for i, err := range nodeErrorsOf(c, r, ls.timeout, noRefusal[int64]) {
		if set[i] && err != nil {
			c.warn("redlock: cleanup of a failed attempt failed on a node; its key expires with its TTL",
				"lock", ls.name, "node", i, "err", err)
		}
	}
}
