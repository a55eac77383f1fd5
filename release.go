package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
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
	if err := checkCtx(ctx, "Release"); err != nil {
		return err
	}
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
	r := c.releaseQuorum(ctx, l.call)
	var errs []error
	if err := l.Err(); errors.Is(err, ErrLost) {
		errs = append(errs, fmt.Errorf("redlock: %q was lost before Release: %w", l.ls.name, err))
	}
	quorum := r.OK >= c.quorum
	if !quorum || answeredError(r) { // (the common case makes no error to drop)
		for i, err := range nodeErrorsOf(c, r, c.opts.NodeTimeout, noRefusal[int64]) {
			if err != nil && (r.Answered[i] || !quorum) { // a straggler of a quorum is not a failure (yet)
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 && ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	err := errors.Join(errs...)
	c.observeOf(ctx, l.ls, Event{Kind: EventRelease, Name: l.ls.name, Token: l.ls.token, Hold: l.ls.tag, Fence: l.fence, Start: start, End: c.clock.Now(), Err: err})
	return err
}

func releaseAccepted(_ int64, err error) bool { return err == nil }

// answeredError reports whether a node that answered in round r answered
// with an error.
func answeredError[T any](r *transport.Round[T]) bool {
	for i, rp := range r.Replies {
		if r.Answered[i] && rp.Err != nil {
			return true
		}
	}
	return false
}

// releaseQuorum deletes the key of cl's lock on every node and returns once
// a quorum confirmed (or every node answered, the per-node timeout passed,
// or ctx ended), after handing cl's local turn on, so that the next local
// holder need not wait for a slow minority either. The stragglers' calls go
// on in the goroutines of c.goes, and one more there waits for their
// answers until the node timeout, to log their failures. After Close it
// waits for every node (or the timeout, or ctx), as nobody would join them.
func (c *Client) releaseQuorum(ctx context.Context, cl *call) *transport.Round[int64] {
	ls := cl.ls
	need := c.quorum
	if c.isClosed() {
		need = 0
	}
	start := time.Now()
	spec := &transport.Spec[int64]{Need: need, PerNode: c.opts.NodeTimeout, Parse: int64Reply, Accept: releaseAccepted,
		Queued: &cl.releaseQueued}
	var late chan transport.Reply[int64]
	if c.opts.Logger != nil {
		late = make(chan transport.Reply[int64], len(c.nodes)) // one send per node at most: never blocks
		spec.Late = func(rp transport.Reply[int64]) { late <- rp }
	}
	r := sendRound(ctx, c, ls.releaseRequest(), observed(ctx, c, spec, EventRelease, ls.name))
	cl.leaveTurn()
	var pending []int
	for i, answered := range r.Answered {
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
func (c *Client) reportStragglers(ls *lease, late <-chan transport.Reply[int64], pending []int, left time.Duration) {
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
			delete(waiting, rp.Node)
			if rp.Err != nil {
				report(rp.Node, rp.Err)
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

// releaseAll deletes the key of cl's lock on every node and waits for
// every node, or the timeout, or ctx: a lost lock's keys are released so
// that nobody waits for their TTL. The deletes are sent whatever ctx says;
// callers that must wait for them even if their ctx has ended pass one
// without cancel.
func (c *Client) releaseAll(ctx context.Context, cl *call) {
	sendRound(ctx, c, cl.ls.releaseRequest(), observed(ctx, c, &transport.Spec[int64]{
		PerNode: c.opts.NodeTimeout, Parse: int64Reply, Accept: releaseAccepted, Queued: &cl.releaseQueued},
		EventRelease, cl.ls.name))
}
