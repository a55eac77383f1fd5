package redlock

import (
	"context"
	"errors"
	"time"
)

// semCall is one AcquirePermit call: which semaphore, and how it waits.
type semCall struct {
	c        *Client
	name     string
	limit    int
	ttl      time.Duration
	o        AcquireOptions
	keys     semKeys
	limitArg string
	start    time.Time

	// What the call reports to the observer, once: its slot attempts and
	// its wait at the gate are not reported as lock events of their own.
	attempts  int       // slot attempts made
	waitStart time.Time // when the call began to wait at the gate; zero: it did not
}

// run takes a permit (see acquire) and reports the call: EventAcquire
// with the semaphore's limit, once.
func (s *semCall) run(ctx context.Context) (*Permit, error) {
	p, err := s.acquire(ctx)
	c := s.c
	if !s.waitStart.IsZero() {
		c.observe(ctx, Event{Kind: EventWait, Name: s.name, Start: s.waitStart, End: c.clock.Now(), Err: err, Limit: s.limit})
	}
	ev := Event{Kind: EventAcquire, Name: s.name, Start: s.start, End: c.clock.Now(), Attempts: s.attempts, Err: err, Limit: s.limit}
	if p != nil {
		ev.Token, ev.Fence, ev.Until = p.Token(), p.Fence(), p.ValidUntil()
	}
	c.observe(ctx, ev)
	return p, err
}

// acquire takes a permit: first the slot this Client last saw free, then
// one a scan of the nodes shows free on a quorum, each yielding to a waiter
// that holds the gate; then, if the policy waits, in the semaphore's order.
func (s *semCall) acquire(ctx context.Context) (*Permit, error) {
	p, err := s.take(ctx, s.c.hints.get(s.name, s.limit), true)
	if p != nil || s.final(ctx, err) {
		return p, err
	}
	var qe *QuorumError
	if errors.As(err, &qe) && qe.Held > 0 { // the slot was busy, not yielded: look for a free one
		sc, serr := s.scan(ctx)
		switch {
		case serr != nil:
			return nil, serr
		case sc.slot >= 0:
			if p, err = s.take(ctx, sc.slot, true); p != nil || s.final(ctx, err) {
				return p, err
			}
		case sc.held > 0:
			err = s.allHeld(sc, nil)
		}
	}
	if _, retries := s.o.Retry(1); !retries {
		return nil, err
	}
	return s.queue(ctx)
}

// final reports whether err ends the call: anything but a slot refused, or
// ctx ended, the Client closed, a limit in force on a quorum, or nodes
// that refuse for good.
func (s *semCall) final(ctx context.Context, err error) bool {
	if !errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrLimitMismatch) || s.c.stopped(ctx) != nil {
		return true
	}
	var qe *QuorumError
	return errors.As(err, &qe) && s.c.hopeless(qe)
}

// take makes one attempt at slot, as a try-lock of the slot's lease;
// yield: the attempt gives way to the gate's holder.
func (s *semCall) take(ctx context.Context, slot int, yield bool) (*Permit, error) {
	c := s.c
	k := s.keys.slotKeys(slot)
	p := &permitSpec{limitArg: s.limitArg, yield: "0", slot: uint64(slot)}
	if yield {
		p.yield = "1"
	}
	f := formSlot
	if s.o.Metadata != "" {
		f = formSlotM
	}
	ls := c.newLease(s.name, s.ttl, leaseSpec{form: f, fenced: !s.o.NoFence, meta: s.o.Metadata, keys: &k, permit: p})
	s.attempts++
	o := s.o
	o.Retry = NoRetry()
	l, err := c.acquireLease(ctx, ls, o, s.start)
	if err != nil {
		return nil, s.limitInForce(err)
	}
	return &Permit{l: l, c: c, slot: slot, limit: s.limit}, nil
}

// limitInForce returns err, a failed attempt's, with its nodes' LIMIT
// refusals matching ErrLimitMismatch when they make a quorum: only a limit
// in force on a quorum refuses the call. Fewer are nodes that did not
// grant, like nodes that did not answer: the call goes on (docs/design.md,
// "The limit").
func (s *semCall) limitInForce(err error) error {
	qe, ok := err.(*QuorumError)
	if !ok {
		return err
	}
	n := 0
	for _, e := range qe.Nodes {
		var le limitError
		if errors.As(e, &le) {
			n++
		}
	}
	if n < s.c.quorum {
		return err
	}
	for i, e := range qe.Nodes {
		if ne, ok := e.(*NodeError); ok {
			if le, ok := ne.Err.(limitError); ok {
				qe.Nodes[i] = &NodeError{Node: ne.Node, Addr: ne.Addr, Err: limitMismatchError(le)}
			}
		}
	}
	return err
}

// queue waits in the semaphore's order: it takes the gate (a lock with the
// fair queue, the waiters' order), and while it holds it, takes the first
// slot a scan shows free, woken by every slot's release (announced while
// the gate is held: channel_slot.lua). Losing the gate
// (a partition, a pause) puts the call back in the order.
func (s *semCall) queue(ctx context.Context) (*Permit, error) {
	c := s.c
	s.waitStart = c.clock.Now()
	c.observe(ctx, Event{Kind: EventWait, Name: s.name, Start: s.waitStart, Waiting: true, Limit: s.limit})
	ctx, stop := c.untilClosed(ctx)
	defer stop()
	wake, _, unwatch, _ := c.waker.watch(s.keys.slots, "") // any slot's release
	defer unwatch()
	attempt := 0
	for {
		gl := c.newLease(s.name+":permits", s.ttl, leaseSpec{form: formGate, keys: &s.keys.gate})
		gate, err := c.acquireLease(ctx, gl, AcquireOptions{NoFence: true, AutoExtend: true, Retry: s.o.Retry}, c.clock.Now())
		if err != nil {
			return nil, err
		}
		p, err := s.holdingGate(ctx, gate, wake, &attempt)
		// The next waiter goes on as soon as the gate is free: the release
		// runs on, owned by the Client, after the call returns.
		c.goes.Go(func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.ttl)
			defer cancel()
			_ = gate.Release(rctx)
		})
		if p != nil || err != nil {
			return p, err
		}
	}
}

// holdingGate takes a slot while the call holds the gate; it returns nil,
// nil when the gate was lost.
func (s *semCall) holdingGate(ctx context.Context, gate *Lock, wake <-chan struct{}, attempt *int) (*Permit, error) {
	var last error
	for {
		*attempt++
		sc, err := s.scan(ctx)
		if err != nil {
			return nil, err
		}
		if sc.slot >= 0 {
			p, err := s.take(ctx, sc.slot, false)
			if p != nil || s.final(ctx, err) {
				return p, err
			}
			last = err
		} else if last == nil || sc.held > 0 {
			last = s.allHeld(sc, nil)
		}
		delay, ok := s.o.Retry(*attempt)
		if !ok {
			return nil, last
		}
		if sc.soon > 0 && sc.soon < delay {
			delay = sc.soon
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
		case <-gate.Done():
			t.Stop()
			return nil, nil
		case <-ctx.Done():
			t.Stop()
			return nil, withCause(last, s.c.stopped(ctx))
		}
	}
}

// withCause returns err, why a call failed, with cause, what ended its
// wait (ctx's error, ErrClosed): in a [*QuorumError] as its Err.
func withCause(err, cause error) error {
	if qe, ok := err.(*QuorumError); ok && qe.Err == nil {
		qe.Err = cause
		return qe
	}
	return errors.Join(err, cause)
}
