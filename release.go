package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Release deletes the lock's key on every node that still holds its token,
// in parallel, and returns as soon as a quorum has deleted it (or every
// node answered, or the per-node timeout passed, or ctx ended): a slow or
// dead minority never delays it. The deletes are sent regardless of ctx.
// Nodes that had not answered by then (stragglers) are finished in the
// background by goroutines the Client owns ([Client.Close] waits for them);
// their failures go to [Options].Logger, not into the error. Locally the
// lock is released whatever the nodes answered, and waiters are woken.
//
// A watchdog extend in flight does not delay Release: Release stops the
// watchdog and cancels its round without waiting for the nodes' answers.
// That is safe because the extend script only resets the TTL of a key that
// still holds this lock's token and never re-creates one: an extend that
// reaches a node after the delete finds nothing to extend.
//
// The error joins the failures of the nodes that answered in time (and
// names the silent ones when no quorum deleted). If the lock had been lost
// before, it also matches [ErrLost]: the critical section may have
// overlapped another holder. Releasing twice returns [ErrReleased].
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrReleased
	}
	l.released = true
	l.mu.Unlock()
	c := l.c
	start := c.clock.Now()
	l.end(ErrReleased, 0)
	l.call.released() // late grants now clean up after themselves
	l.stopWatchdog()
	r := c.releaseQuorum(ctx, l.ls, l.call.leaveTurn)
	var errs []error
	if err := l.Err(); errors.Is(err, ErrLost) {
		errs = append(errs, fmt.Errorf("redlock: %q was lost before Release: %w", l.ls.name, err))
	}
	quorum := r.ok >= c.quorum
	for i, err := range nodeErrorsOf(c, r, c.opts.NodeTimeout, func(int64) error { return nil }) {
		if err != nil && (r.answered[i] || !quorum) { // a straggler of a quorum is not a failure (yet)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	err := errors.Join(errs...)
	c.observe(Event{Kind: EventRelease, Name: l.ls.name, Token: l.ls.token, Hold: l.ls.tag, Fence: l.fence, Start: start, End: c.clock.Now(), Err: err})
	return err
}

// releaseRequest returns the call that deletes ls's key on a node if it
// holds a value of ls's call (any attempt's) — for a re-entrant lock, the
// call's hold, and the key with the last hold — announcing the release to
// waiters.
func (c *Client) releaseRequest(ls *lease) *request {
	r := ls.releaseRequest(ls.channel)
	r.queued = &ls.releaseQueued
	return r.observed(EventRelease, ls.name)
}

func releaseAccepted(_ int64, err error) bool { return err == nil }

// releaseQuorum deletes ls's key on every node and returns once a quorum
// confirmed (or every node answered, the per-node timeout passed, or ctx
// ended), after calling handoff, so that the next local holder need not
// wait for a slow minority either. The stragglers' calls go on in the
// goroutines of c.goes, and one more there waits for their answers until
// the node timeout, to log their failures. After Close it waits for every
// node (or the timeout, or ctx), as nobody would join them.
func (c *Client) releaseQuorum(ctx context.Context, ls *lease, handoff func()) *round[int64] {
	need := c.quorum
	if c.isClosed() {
		need = 0
	}
	start := time.Now()
	var late chan reply[int64]
	var onLate func(reply[int64])
	if c.opts.Logger != nil {
		late = make(chan reply[int64], len(c.nodes)) // one send per node at most: never blocks
		onLate = func(rp reply[int64]) { late <- rp }
	}
	r := scriptRound(ctx, c, need, c.opts.NodeTimeout, c.releaseRequest(ls), nil, int64Reply, releaseAccepted, onLate)
	handoff()
	var pending []int
	for i, answered := range r.answered {
		if !answered {
			pending = append(pending, i)
		}
	}
	if late != nil && len(pending) > 0 {
		left := c.opts.NodeTimeout - time.Since(start)
		c.goes.Go(func() { c.reportStragglers(ls, late, pending, left) })
	}
	return r
}

// reportStragglers waits, for at most left, for the answers of the pending
// nodes of a release round and logs those that failed or never came.
func (c *Client) reportStragglers(ls *lease, late <-chan reply[int64], pending []int, left time.Duration) {
	report := func(i int, err error) {
		c.warn(msgStraggler, "lock", ls.name, "node", i, "addr", c.nodes[i].addr, "err", err)
	}
	waiting := make(map[int]bool, len(pending))
	for _, i := range pending {
		waiting[i] = true
	}
	t := time.NewTimer(left)
	defer t.Stop()
	for len(waiting) > 0 {
		select {
		case rp := <-late:
			delete(waiting, rp.node)
			if rp.err != nil {
				report(rp.node, rp.err)
			}
		case <-t.C:
			for _, i := range pending {
				if waiting[i] {
					report(i, nodeTimeoutError{after: c.opts.NodeTimeout})
				}
			}
			return
		}
	}
}

// msgStraggler is logged for a node that failed to delete a released key
// after Release returned.
const msgStraggler = "redlock: a node failed to delete a released lock after Release returned; the key expires with its TTL"

// releaseAll deletes ls's key on every node and waits for every node, or
// the timeout, or ctx: a lost lock's keys are released so that nobody
// waits for their TTL. The deletes are sent whatever ctx says; callers that
// must wait for them even if their ctx has ended pass one without cancel.
func (c *Client) releaseAll(ctx context.Context, ls *lease) {
	scriptRound(ctx, c, 0, c.opts.NodeTimeout, c.releaseRequest(ls), nil, int64Reply, releaseAccepted, nil)
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
	r := scriptRound(context.WithoutCancel(ctx), c, 0, ls.timeout, ls.cleanupRequest(value), set,
		int64Reply, func(int64, error) bool { return true }, nil)
	if c.opts.Logger == nil {
		return
	}
	for i, err := range nodeErrorsOf(c, r, ls.timeout, func(int64) error { return nil }) {
		if set[i] && err != nil {
			c.warn("redlock: cleanup of a failed attempt failed on a node; its key expires with its TTL",
				"lock", ls.name, "node", i, "err", err)
		}
	}
}
