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

// take is one node's answer to an attempt (the acquire script): taken
// (ok), or refused. "Grant" is the release's hand-off of a free key to a
// waiter (grant.go, handon.lua), never this.
type take struct {
	ok    bool
	fence uint64 // the counter after the increment, when ok and fenced
	pttl  int64  // the holder's remaining TTL in ms, when not ok
	rank  int64  // when not ok: the caller's rank in the queue (0: the head), -1 when not queued
	more  string // a set's (multi.go), when ok: the fences of its names after the first, comma-separated
}

// parseTake reads the acquire script's reply: "1:<fence>", or
// "0:<pttl>", the latter followed by ":<rank>", the caller's rank in the
// queue, when it queues.
func parseTake(s string) (take, error) {
	status, rest, ok := strings.Cut(s, ":")
	switch {
	case ok && status == "1":
		f, err := strconv.ParseUint(rest, 10, 64)
		var more string
		if err != nil {
			if first, others, set := strings.Cut(rest, ","); set { // a set's fences (multi_acquire.lua)
				f, err = strconv.ParseUint(first, 10, 64)
				more = others
			}
		}
		if err != nil {
			return take{}, fmt.Errorf("fence counter %q from the acquire script is not a uint64", rest)
		}
		return take{ok: true, fence: f, more: more}, nil
	case ok && status == "0":
		g := take{rank: -1}
		pttl, rank, queued := strings.Cut(rest, ":")
		var err error
		if g.pttl, err = strconv.ParseInt(pttl, 10, 64); err == nil && queued {
			g.rank, err = strconv.ParseInt(rank, 10, 64)
		}
		if err == nil {
			return g, nil
		}
	}
	return take{}, fmt.Errorf("unexpected reply %q from the acquire script", s)
}

// takeReply reads a node's reply to the acquire script: an integer, the
// fence of a take in the script's common case (lua/acquire.lua), or one
// string (parseTake). Neither is a table, so that reading it takes no
// allocation but the string's, and the common case's none.
func takeReply(cmd *redis.Cmd) (take, error) {
	if err := cmd.Err(); err != nil {
		return take{}, err
	}
	return takeOf(cmd.Val())
}

// takeOf reads the value of the acquire script's reply (see takeReply).
func takeOf(v any) (take, error) {
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return take{}, fmt.Errorf("fence counter %d from the acquire script is below 0", v)
		}
		return take{ok: true, fence: uint64(v)}, nil
	case string:
		return parseTake(v)
	}
	return take{}, fmt.Errorf("unexpected reply %v (%T) from the acquire script", v, v)
}

// lateCovered reports whether a late answer of node to one of cl's
// acquire calls needs no cleanup: it came back (the script ran there) and a
// release of the call was queued on the node's sender, which writes a
// node's next calls only once the calls before them answered, so the
// release runs after it there and deletes any attempt's value of the call.
// A late error is never covered: its script may still run, after the
// release, on a connection the error left behind. Nothing but the cost of a
// cleanup rests on this: an uncovered stray value is counted by no lease
// (docs/design.md, "What a lease counts") and expires with its TTL.
func (c *Client) lateCovered(cl *call, node int, err error) bool {
	return err == nil && c.links[node].Sender != nil && cl.releaseQueued.Load()
}

// taken accepts a node that took the key for the attempt.
func taken(g take, err error) bool { return err == nil && g.ok }

// try makes attempt number attempt of the call cl, in its place w in the
// waiting order.
func (c *Client) try(ctx context.Context, cl *call, w *waiter, attempt int) (*Lock, *QuorumError) {
	ls := cl.ls
	start := c.clock.Now()
	value := ls.value(attempt)
	cl.begin(attempt)
	r := sendRound(ctx, c, ls.acquireRequest(w.place, value), observed(ctx, c, &transport.Spec[take]{
		Need: c.quorum, PerNode: ls.timeout, Parse: takeReply, Accept: taken,
		Late: func(rp transport.Reply[take]) {
			if (rp.Err != nil || rp.Val.ok) && cl.lateAnswer(attempt, rp.Node) && !c.lateCovered(cl, rp.Node, rp.Err) {
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
		if ls.fenced {
			var wb *transport.Round[int64]
			if ls.multi != nil {
				fence, v, wb = c.settleMultiFences(ctx, cl, r, start) // a fence per name (multi.go)
			} else {
				var buf [8]uint64
				fences := buf[:0]
				for i, rp := range r.Replies {
					if r.Answered[i] && rp.Err == nil && rp.Val.ok {
						fences = append(fences, rp.Val.fence)
					}
				}
				fence, v, wb = c.settleFence(ctx, ls, fences, start)
			}
			if wb != nil {
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
		qerr.Nodes = nodeErrorsOf(c, r, ls.timeout, func(g take) error {
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
