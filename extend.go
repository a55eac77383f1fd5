package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// Extend resets the lease to ttl on a quorum of the nodes, on the nodes
// that still hold this lock's token. The new local deadline counts from the
// start of the extend: ttl less the time it took and the drift allowance.
// A node whose key already lives longer keeps its expiry: another share of
// the lease (a resumed handle, another hold) may count on it.
//
// A failed extend ends the lock: the error matches [ErrLost], Done fires
// and Err returns the error. When a majority of the nodes no longer hold
// the lock, the keys left are released; otherwise they are left to expire
// with their TTL, since another share of the lease may still hold them.
// (The watchdog of [AcquireOptions].AutoExtend is more patient: it retries
// a failed round while the lease lasts.) An extend never re-creates an
// expired key, and an extend that returns after the deadline passed never
// revives the lock. Extending a lock that has ended returns Err. If ctx has
// already ended, Extend returns its error and changes nothing.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkCtx(ctx, "Extend"); err != nil {
		return err
	}
	if err := l.c.checkTTL(ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	turn := l.extendTurn()
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-turn }()
	if err := l.Err(); err != nil {
		return err
	}
	out, ev, err := l.extendRound(ctx, ttl)
	l.c.observeOf(ctx, l.ls, ev)
	if err != nil {
		// The keys are released even if ctx ended meanwhile.
		l.lose(context.WithoutCancel(ctx), out, err)
		return l.Err()
	}
	return nil
}

// extendOutcome is what a failed extend round says of the lease.
type extendOutcome int

const (
	extended extendOutcome = iota // a quorum extended in time
	missed                        // no quorum, but the lease may still stand: a watchdog retries
	expired                       // the local deadline passed: the lease is over for this share
	gone                          // a majority answered that the key is not ours: over for every share
)

// extendRound runs one extend round of ttl on every node and moves the
// deadline if a quorum extended in time. It returns a nil error on success;
// otherwise the round's error (matching ErrLost) and what it says of the
// lease; and the round's event, for the caller to report. A failed round never moves the deadline later; it moves it
// earlier only when the nodes that did extend, with a ttl shorter than what
// is left, will drop the key sooner. The caller holds the extend turn (Lock.extendTurn).
func (l *Lock) extendRound(ctx context.Context, ttl time.Duration) (extendOutcome, Event, error) {
	c := l.c
	start := c.clock.Now()
	timeout := c.nodeTimeout(ttl)
	ttlArg := l.ls.ttlArg
	if ttl != l.ls.ttl {
		ttlArg = millis(ttl)
	}
	r := sendRound(ctx, c, l.ls.extendRequest(ttlArg, l.won), observed(ctx, c, &transport.Spec[int64]{
		Need: c.quorum, PerNode: timeout, Parse: int64Reply, Accept: isOne}, EventExtend, l.ls.name))
	now := c.clock.Now()
	v := validity(ttl, now.Sub(start), c.opts.DriftFactor)
	candidate := start.Add(v)

	out := extended
	var err error
	l.mu.Lock()
	switch {
	case l.err != nil:
		// Ended while the round was on its way: it stays ended.
		err, out = l.err, expired
	case !now.Before(l.until):
		// The deadline passed before the round returned (its timer may not
		// have run yet): the lease had a gap, so the lock is lost.
		err, out = l.extendError(ctx, r, timeout, v), expired
	case r.OK >= c.quorum && now.Before(candidate) && ctx.Err() == nil:
		l.setDeadlineLocked(candidate)
		l.cause = nil
	default:
		err, out = l.extendError(ctx, r, timeout, v), missed
		notOurs := 0
		for i, rp := range r.Replies {
			if r.Answered[i] && rp.Err == nil && rp.Val != 1 {
				notOurs++
			}
		}
		// Nodes that did extend ran PEXPIRE ttl after start (or kept a
		// longer expiry), so they hold the key until at least
		// start+ttl-drift on our clock; the others keep their old expiry.
		// Only a ttl shorter than what is left can bring the deadline
		// forward. (Not start+validity: the elapsed time of a round that
		// failed says nothing about when its nodes acted.)
		if bound := start.Add(ttl - drift(ttl, c.opts.DriftFactor)); bound.Before(l.until) {
			l.setDeadlineLocked(bound)
		}
		switch {
		case notOurs >= c.quorum:
			out = gone
		case !now.Before(l.until):
			out = expired
		}
		l.cause = err
	}
	until := l.until
	if l.err != nil {
		until = time.Time{}
	}
	l.mu.Unlock()
	return out, Event{Kind: EventExtend, Name: l.ls.name, Token: l.ls.token, Hold: l.ls.tag, Fence: l.fence,
		Start: start, End: now, Until: until, Err: err}, err
}

// extendError describes a failed extend round.
func (l *Lock) extendError(ctx context.Context, r *transport.Round[int64], timeout, v time.Duration) *QuorumError {
	c := l.c
	return &QuorumError{Op: "extend", Name: l.ls.name, Quorum: c.quorum, Agreed: r.OK, Validity: v,
		Nodes: nodeErrorsOf(c, r, timeout, func(v int64) error {
			if v == 1 {
				return nil
			}
			return notOursError{}
		}), Err: ctx.Err(), sentinel: ErrLost}
}

// lose ends the lock as lost with err. When out says a majority of the
// nodes no longer hold it (gone), the keys it may still hold on the others
// are released, so that nobody waits for their TTL; it waits for the nodes
// until the per-node timeout or ctx ends. Otherwise the keys are left to
// their TTL: another share of the lease (a resumed handle) may still count
// on them, and no share may cut another's lease short.
func (l *Lock) lose(ctx context.Context, out extendOutcome, err error) {
	if l.end(err, 0) && out == gone {
		l.c.releaseAll(ctx, l.call)
	}
}
