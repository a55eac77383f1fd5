package redlock

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// The waiting order (docs/design.md, "Waiting in order", has the whole
// argument). Each node keeps, beside a contended lock key, a sorted set of
// the waiting calls' entries ("<token>:<client>") scored by a priority every
// node compares alike, and their expiries by the node's clock. A free key
// goes only to the head, whom the release alone wakes; the order decides
// who tries first, never more. A waiter refreshes its entry with every
// attempt, at most queueRefresh apart; an entry not refreshed for queueTTL
// is dropped, so a dead waiter stalls the others for at most that long. A
// call that gives up leaves at once (leaveQueue, lateQueued); the holder's
// entry stays until its release.
const queueRefresh = queueTTL / 4

// waiter is one Acquire call's place in the waiting order: fixed when the
// call starts (mode, member, priority), what its last attempt learnt of
// the queue, and whether it still waits. It belongs to the call's wait
// loop; late answers of its attempts read member and the two flags.
type waiter struct {
	place          // fixed when the call starts
	grantable bool // a release may grant the call the key (release.lua): a plain lock's waiter

	gaveUp atomic.Bool // the call failed: its grants go when it leaves the queue
	done   atomic.Bool // the call no longer waits: it won or gave up

	behind       bool // the last attempt found another waiter first on a quorum (queued)
	headAttempts int  // failed attempts in a row not behind another waiter (queued)
	promoted     bool // the last attempt made the call the head of a free key (queued)
}

// newWaiter fixes how the call of ls uses the queue, in mode, and its
// priority: its start of contention, as every node will compare it.
func newWaiter(ls *lease, mode string, start time.Time, client string) *waiter {
	w := new(waiter)
	w.init(ls, mode, start, client)
	return w
}

// init is newWaiter for a waiter made elsewhere (see callParts).
func (w *waiter) init(ls *lease, mode string, start time.Time, client string) {
	w.mode = mode
	if mode == queueWait { // only a waiting call has an entry of its own
		w.member = ls.token + ":" + client
		if ls.form.grantable() {
			// A plain lock's waiter tells the nodes its TTL and fencing,
			// so that a release can grant it the key (release.lua). A
			// waiter with metadata is not granted: its next attempt takes
			// the key and writes the metadata beside it (form.go).
			w.grantable = true
			w.member += ":" + ls.ttlArg + ":" + ls.fenceArg
		}
		if ls.form == formShared {
			w.member += readerEntryMark // a reader's entry (rw.go)
		}
		w.priority = strconv.FormatInt(start.UnixMicro(), 10)
	}
}

// queued notes, after a failed attempt, whether a quorum of the nodes put
// the call behind another waiter (rank > 0), or made it the head of a free
// key (rank 0, TTL 0): it queued just then ahead of the waiter the nodes had
// been keeping the key for (whose entry had expired and been dropped, or a
// client with a slower clock), and its next attempt wins.
func (w *waiter) queued(quorum int, r *transport.Round[take]) {
	behind, head := 0, 0
	for i, rp := range r.Replies {
		if !r.Answered[i] || rp.Err != nil || rp.Val.ok {
			continue
		}
		switch {
		case rp.Val.rank > 0:
			behind++
		case rp.Val.rank == 0 && rp.Val.pttl == 0:
			head++
		}
	}
	w.behind, w.promoted = behind >= quorum, head >= quorum
	if w.behind {
		w.headAttempts = 0
	} else {
		w.headAttempts++
	}
}

// waitDelay is how long a call waits, at most, before its next attempt,
// given the policy's delay. A queued call waits no longer than
// queueRefresh, so that its entry is refreshed before it expires. A call
// behind another waiter on a quorum of the nodes polls no faster than that
// either: the release that makes it the head wakes it (see waker.notify),
// and until then no attempt of it could win; but only once notices reach it
// (woken), else it polls as the head does. At the head, the policy's
// backoff starts over (the delay of its first, second ... attempt as the
// head): its polls are the fallback for a lost notice, and the waits it
// spent behind others say nothing about how long the holder will take.
func (w *waiter) waitDelay(delay time.Duration, policy RetryPolicy, woken func() bool) time.Duration {
	switch {
	case w.mode != queueWait:
		return delay
	case w.promoted:
		return 0
	case w.behind && woken():
		return queueRefresh
	case w.behind:
		return min(delay, queueRefresh)
	}
	if d, ok := policy(w.headAttempts); ok && w.headAttempts > 0 {
		delay = min(delay, d)
	}
	return min(delay, queueRefresh)
}

// wakeOn returns the channel a waiting call of ls listens on and the id it
// is woken by. A queued call listens on its Client's own channel for the
// name (the release announces the head, by its queue entry, to the head's
// Client only: one notice per node, not one per node and subscribed
// Client); a barging call on the name's channel, id "" (woken when nobody
// queues).
func (c *Client) wakeOn(ls *lease, w *waiter) (channel, id string) {
	if w.mode == queueWait {
		return ls.keys.channel + ":" + c.waker.id, w.member
	}
	return ls.keys.channel, ""
}

// lateQueued handles a late answer from node that may have queued the call
// (a refusal, or an error whose script may have run): if the call no longer
// waits (it won or gave up), the entry is taken out again, as no release or
// leaveQueue that ran before it could have removed it.
func (c *Client) lateQueued(ctx context.Context, ls *lease, w *waiter, node int) {
	if w.mode != queueWait || !w.done.Load() {
		return
	}
	c.leaveNodes(ctx, ls, w, func(i int) bool { return i == node })
}

// leaveQueue takes the call's entry out of the queue on every node, best
// effort, waiting for them or the per-node timeout even if ctx has ended: a
// call that gave up must not keep the others waiting behind it. A release's
// grant to the call goes with it (the caller set w.gaveUp).
func (c *Client) leaveQueue(ctx context.Context, ls *lease, w *waiter) {
	if w.mode != queueWait {
		return
	}
	c.leaveNodes(ctx, ls, w, func(int) bool { return true })
}

// leaveNodes runs the queue-leave script for the call of ls on the nodes
// which selects, waiting for them or the per-node timeout even if ctx has
// ended. It goes through the nodes' senders, behind the call's attempts:
// an attempt still waiting to be sent when the call gave up reaches the
// node before the leave, so it cannot put the entry back after it.
func (c *Client) leaveNodes(ctx context.Context, ls *lease, w *waiter, which func(i int) bool) {
	sel := make([]bool, len(c.nodes))
	for i := range sel {
		sel[i] = which(i)
	}
	gaveUp := "0" // a call that won keeps the grants: they are its lock
	if w.gaveUp.Load() {
		gaveUp = "1"
	}
	sendRound(context.WithoutCancel(ctx), c, ls.leaveRequest(w.place, gaveUp), &transport.Spec[int64]{
		PerNode: ls.timeout, Which: sel, Parse: int64Reply, Accept: anyAnswer[int64]})
}
