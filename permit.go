package redlock

import (
	"context"
	"strconv"
	"time"
)

// A semaphore: at most limit holders of a name at once. It is limit slots,
// each a lock of its own on the quorum, and a permit is one slot won: the
// quorum proves each slot's exclusion as it proves a lock's, so no more
// than limit permits are valid at once (with the lock's assumptions:
// honest clocks within the drift allowance, nodes that keep their keys).
// Counting permits per node and asking a majority would not do: with three
// nodes and limit 2, permits on nodes {1,2}, {2,3} and {1,3} each have a
// majority while no node holds more than two (docs/design.md, the model's
// TestModelSemaphoreControlNaiveCount).
//
// A permit is taken with the lock's own scripts, wrapped in the
// semaphore's checks (lua/permit.lua): the limit every client must agree
// on, and the waiting order. Waiters queue at the semaphore's gate, a lock
// with the lock's fair queue: its holder is the waiter that has waited
// longest, and takes the next freed slot; a call that finds a free slot
// while the gate is held yields to it (permit_wait.go).

// MaxPermits is the largest limit of a semaphore.
const MaxPermits = 1024

// Permit is one of the limit permits of a semaphore ([Client.AcquirePermit]):
// a slot of the semaphore held on a quorum, with its own token, fence and
// lease, kept and lost exactly like a [Lock]'s. All methods are safe for
// concurrent use.
type Permit struct {
	l     *Lock
	c     *Client
	slot  int
	limit int
}

// Name returns the semaphore's name.
func (p *Permit) Name() string { return p.l.Name() }

// Slot returns which of the semaphore's slots the permit holds, in [0,
// Limit): no other valid permit holds the same slot.
func (p *Permit) Slot() int { return p.slot }

// Limit returns the semaphore's limit.
func (p *Permit) Limit() int { return p.limit }

// Token returns the random token that proves ownership of the slot.
func (p *Permit) Token() string { return p.l.Token() }

// Fence returns the permit's fencing token: the semaphore's counter, taken
// on the quorum as a lock's is, times [MaxPermits], plus the slot. So
// fences are ordered across all permits of the name, whatever limits they
// were taken with (a permit acquired after another's acquisition completed
// has a larger fence), and no two permits share one: they differ in the
// slot when the counter values are equal.
//
// With up to limit holders at once, a store cannot keep one highest fence
// per resource (each permit's write would refuse the older permits that
// are still valid). Guard per slot instead: a resource name that includes
// [Permit.Slot] (see package guard); a holder whose permit expired is then
// refused once the slot's next holder has written. 0 with NoFence.
func (p *Permit) Fence() uint64 { return p.l.Fence() }

// ValidUntil returns the local deadline of the permit, as [Lock.ValidUntil].
func (p *Permit) ValidUntil() time.Time { return p.l.ValidUntil() }

// Done is closed when the permit ends: at its local deadline unless an
// extend succeeded first, when it is lost, or on Release (see [Lock.Done]).
func (p *Permit) Done() <-chan struct{} { return p.l.Done() }

// Err returns nil while the permit is held, then why it ended, as
// [Lock.Err].
func (p *Permit) Err() error { return p.l.Err() }

// Context returns a context derived from parent, cancelled when the permit
// ends, as [Lock.Context].
func (p *Permit) Context(parent context.Context) context.Context { return p.l.Context(parent) }

// Extend extends the permit to ttl on a quorum, as [Lock.Extend]; the
// nodes keep the semaphore's limit at least as long.
func (p *Permit) Extend(ctx context.Context, ttl time.Duration) error { return p.l.Extend(ctx, ttl) }

// Release gives the permit back, as [Lock.Release]; a waiter of the
// semaphore is woken to take the slot.
func (p *Permit) Release(ctx context.Context) error {
	err := p.l.Release(ctx)
	p.c.hints.put(p.l.ls.name, p.slot)
	return err
}

// AcquirePermit takes one of limit permits of the semaphore name for ttl:
// it succeeds when a quorum of the nodes granted it one of the limit slots
// within the validity, as [Client.Acquire] takes a lock, and returns as
// soon as a quorum did. The permit frees itself at the end of its TTL
// unless extended (opts.AutoExtend runs the lock's watchdog on it).
//
// A call that finds every permit held waits in the semaphore's order (the
// lock's fair queue): the waiter that has waited longest takes the next
// permit freed, woken by the release's notice; calls that come later,
// even to a free slot, wait behind it. opts.Retry bounds the wait as for
// Acquire ([NoRetry]: one try, see [Client.TryAcquirePermit]).
//
// Every client of a name must use the same limit, 1 to [MaxPermits]: when
// a quorum of the nodes hold live permits taken with another, the call
// fails at once with [ErrLimitMismatch] (which says when a new limit
// applies). opts.Reentrant and opts.Barging do not apply to permits. A
// semaphore's keys are apart from those of a lock of the same name.
//
// Errors are those of Acquire: a failed call matches [ErrNotAcquired], and
// [ErrHeld] when every permit was held; a [*QuorumError] in it names each
// node's answer. Bad arguments (those options too) match [ErrInvalid].
func (c *Client) AcquirePermit(ctx context.Context, name string, limit int, ttl time.Duration, opts *AcquireOptions) (*Permit, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "AcquirePermit"); err != nil {
		return nil, err
	}
	return c.acquirePermit(ctx, "AcquirePermit", name, limit, ttl, opts)
}

// acquirePermit is AcquirePermit for op (AcquirePermit, TryAcquirePermit),
// with c made by New and ctx not nil.
func (c *Client) acquirePermit(ctx context.Context, op, name string, limit int, ttl time.Duration, opts *AcquireOptions) (*Permit, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkLimit(op, name, limit); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	var o AcquireOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Reentrant:
		return nil, invalidf("redlock: %s %q: permits are not re-entrant: leave AcquireOptions.Reentrant unset", op, name)
	case o.Barging:
		return nil, invalidf("redlock: %s %q: permits always wait in order: leave AcquireOptions.Barging unset", op, name)
	}
	if err := checkMetadata(o.Metadata); err != nil {
		return nil, err
	}
	if o.Retry == nil {
		o.Retry = DefaultRetry()
	}
	s := &semCall{c: c, name: name, limit: limit, ttl: ttl, o: o, keys: semKeysOf(c.opts.KeyPrefix, name),
		limitArg: strconv.Itoa(limit), start: c.clock.Now()}
	return s.run(ctx)
}

// TryAcquirePermit makes one try for a permit of the semaphore name, without
// waiting: [Client.AcquirePermit] with [NoRetry]. It fails at once when
// every permit is held, or when a waiter comes first.
func (c *Client) TryAcquirePermit(ctx context.Context, name string, limit int, ttl time.Duration, opts *AcquireOptions) (*Permit, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "TryAcquirePermit"); err != nil {
		return nil, err
	}
	o, err := oneTry("TryAcquirePermit", "AcquirePermit", name, opts)
	if err != nil {
		return nil, err
	}
	return c.acquirePermit(ctx, "TryAcquirePermit", name, limit, ttl, o)
}

// checkLimit refuses a limit a semaphore cannot have, for op.
func checkLimit(op, name string, limit int) error {
	if limit < 1 || limit > MaxPermits {
		return invalidf("redlock: %s %q: limit %d: a semaphore has 1 to %d permits", op, name, limit, MaxPermits)
	}
	return nil
}
