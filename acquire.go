package redlock

import (
	"context"
	"time"
)

// Acquire takes the lock name for ttl on a quorum of the nodes. It returns
// as soon as a quorum has granted it, not waiting for a slow or dead
// minority.
//
// Acquire waits: it retries as opts.Retry says ([DefaultRetry] with nil
// opts) until the lock is free, ctx ends or the Client is closed, so nil
// opts and a ctx without a deadline wait forever. (bsm/redislock's Obtain
// does not retry by default; redsync's Lock gives up after 32 tries.) Give
// ctx a deadline, bound the attempts with [LimitRetry], or call
// [Client.TryAcquire] for one attempt.
//
// The returned lock is valid until [Lock.ValidUntil]: the TTL less the time
// the acquisition took and a clock-drift allowance; Acquire fails rather
// than return a lock whose deadline has already passed. With fencing on
// (the default), [Lock.Fence] is larger than the fence of every acquisition
// of name that completed before this one started.
//
// Names are at most [MaxNameLen] bytes and contain no '{' or '}' (the name
// is the Redis Cluster hash tag of the lock's keys).
//
// A failed attempt is cleaned up on every node before the next one. When
// Acquire gives up, its error matches [ErrNotAcquired], and also ctx.Err()
// when the context ended the wait, and [ErrHeld] when a node reported
// another holder; a [*QuorumError] in it names each node's answer. Bad
// arguments give an error at once, and so does a Client closed before the
// call ([ErrClosed] alone).
//
// [Client.Close] ends the call wherever it waits: for its turn among the
// Client's calls of name, between attempts, or in an attempt's round (a
// try-lock's one round runs to its end). The call then leaves the nodes'
// queue and returns an error that matches [ErrNotAcquired], and
// [ErrClosed] in place of ctx's error. A lock is returned only if it was
// won before Close began: an attempt or a release's grant that wins after
// that is deleted on the nodes again.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions) (*Lock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "Acquire"); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
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
	if err := checkMetadata(o.Metadata); err != nil {
		return nil, err
	}
	if err := checkMaxHold(name, &o); err != nil {
		return nil, err
	}
	if o.Retry == nil {
		o.Retry = DefaultRetry()
	}
	start := c.clock.Now()
	f := formPlain
	switch {
	case o.Reentrant:
		f = formHold
	case o.Metadata != "":
		f = formMeta
	}
	ls := c.newLease(name, ttl, leaseSpec{form: f, fenced: !o.NoFence, meta: o.Metadata})
	return c.acquireLease(ctx, ls, o, start)
}

// acquireLease runs an Acquire call of ls, its arguments checked, from
// start: the lock's, and a semaphore's slots and waiting order
// (permit.go), each with a lease of its own keys.
func (c *Client) acquireLease(ctx context.Context, ls *lease, o AcquireOptions, start time.Time) (*Lock, error) {
	name := ls.name
	_, retries := o.Retry(1)
	octx := ctx // the caller's: the events' context
	a := &acquisition{c: c, retry: o.Retry, try: !retries}
	parts := new(callParts)
	a.cl, a.w = &parts.cl, &parts.w
	a.cl.ls, a.cl.ctx, a.cl.leaveTurn = ls, octx, func() {}
	notTried := func(why untried, err error) (*Lock, error) {
		err = &QuorumError{Op: "acquire", Name: name, Quorum: c.quorum, Err: err, sentinel: ErrNotAcquired, untried: why}
		a.stopWaiting(err)
		c.observeOf(octx, ls, Event{Kind: EventAcquire, Name: name, Start: start, End: c.clock.Now(), Err: err})
		return nil, err
	}
	if err := c.stopped(ctx); err != nil {
		return notTried(beforeAttempt, err)
	}

	// Wait for this client's earlier Acquire calls of the same name, unless
	// this is a try-lock: it makes its one attempt at once. A call that may
	// wait stops waiting at Close.
	if !a.try {
		var stop func()
		ctx, stop = c.untilClosed(ctx)
		defer stop()
		leave, err := c.turns.enter(ctx, ls.keys.lock, a.waiting)
		if err != nil {
			return notTried(waitingTurn, c.stopped(ctx))
		}
		a.cl.leaveTurn = leave
	}
	// The call's place in the nodes' queue dates from now: calls of one
	// Client take turns locally first (see queue.go).
	mode := queueWait
	switch {
	case o.Barging:
		mode = queueBarge
	case a.try:
		mode = queueTry
	}
	a.w.init(ls, mode, c.clock.Now(), c.waker.id)
	l, attempts, err := a.run(ctx)
	a.w.gaveUp.Store(err != nil) // before done: see lateQueued
	a.w.done.Store(true)
	a.stopWaiting(err)
	ev := Event{Kind: EventAcquire, Name: name, Start: start, End: c.clock.Now(), Attempts: attempts, Err: err}
	if err != nil {
		if attempts > 0 {
			c.leaveQueue(ctx, a.cl.ls, a.w)
		}
		a.cl.leaveTurn()
		c.observeOf(octx, ls, ev)
		return nil, err
	}
	ev.Token, ev.Fence, ev.Until = l.ls.token, l.fence, l.ValidUntil()
	c.observeOf(octx, ls, ev)
	if ls.form == formShared {
		a.cl.leaveTurn() // readers share the name: the Client's next call of it goes now (rw.go)
	}
	if o.AutoExtend {
		l.startCappedWatchdog(o.MaxHold)
	}
	return l, nil
}

// acquisition is one Acquire call while it waits: the call its lock will
// keep, its place in the waiting order, and how it retries. It lives as
// long as the wait; a split of the releases' grants replaces the call and
// the place (see split).
type acquisition struct {
	c     *Client
	cl    *call
	w     *waiter
	retry RetryPolicy
	try   bool      // a try-lock: the policy allows no retry
	first time.Time // when the call's first attempt began: no release can grant the call the key before

	waited    bool      // the call reported that it started waiting (EventWait)
	waitStart time.Time // when it did
}

// waiting reports, the first time it is called, that the call started
// waiting (EventWait): for its local turn, or for its next attempt.
func (a *acquisition) waiting() {
	if a.waited {
		return
	}
	a.waited, a.waitStart = true, a.c.clock.Now()
	a.c.observeOf(a.cl.ctx, a.cl.ls, Event{Kind: EventWait, Name: a.cl.ls.name, Start: a.waitStart, Waiting: true})
}

// stopWaiting reports that the call, if it had started waiting, stopped,
// with err its outcome (nil: it won).
func (a *acquisition) stopWaiting(err error) {
	if !a.waited {
		return
	}
	a.waited = false
	a.c.observeOf(a.cl.ctx, a.cl.ls, Event{Kind: EventWait, Name: a.cl.ls.name, Start: a.waitStart, End: a.c.clock.Now(), Err: err})
}

// callParts are the call and the waiter of one Acquire call, made in one
// allocation (the call outlives the wait, in its lock; the waiter stays
// allocated with it, unused).
type callParts struct {
	cl call
	w  waiter
}

// run makes the attempts of the call and reports how many it made.
func (a *acquisition) run(ctx context.Context) (*Lock, int, error) {
	c := a.c
	var n notices
	defer n.stop()
	if !a.try {
		a.cl.retry = make(chan struct{}, 1)
		c.waker.open()
		n.listenEarly(c, a.cl.ls, a.w)
	}
	a.first = c.clock.Now()
	var last *QuorumError // the last attempt's failure
	for attempt := 1; ; attempt++ {
		if err := c.stopped(ctx); err != nil {
			if last == nil {
				return nil, 0, &QuorumError{Op: "acquire", Name: a.cl.ls.name, Quorum: c.quorum, Err: err,
					sentinel: ErrNotAcquired, untried: beforeAttempt}
			}
			last.Err = err
			return nil, attempt - 1, last
		}
		l, qerr := c.try(ctx, a.cl, a.w, attempt)
		if l != nil {
			return l, attempt, nil
		}
		if len(n.grants()) > 0 {
			// Grants to the call on some nodes, and the attempt refused:
			// it may have reached those nodes before the releases did, and
			// the grants may still make a quorum, their notices on the
			// way (awaitGrants). When they do not, the releases split the
			// key between waiters (see split).
			if l := a.awaitGrants(ctx, &n); l != nil {
				return l, attempt, nil
			}
			a.split(ctx)
			n.stop()
			n.listenEarly(c, a.cl.ls, a.w)
		}
		qerr.Attempts, last = attempt, qerr
		if qerr.Err = c.stopped(ctx); qerr.Err != nil || c.hopeless(qerr) {
			return nil, attempt, qerr
		}
		delay, ok := a.retry(attempt)
		if !ok {
			return nil, attempt, qerr
		}
		a.waiting()
		// Contended: from now on a release of this name wakes us.
		missed := n.listen()
		d := a.w.waitDelay(delay, a.retry, n.subscribed)
		if missed {
			d = 0 // a notice may have come since the attempt's refusal
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-n.wake:
			t.Stop()
			if a.w.grantable {
				if l := c.takeGrant(ctx, a.cl, n.grants(), a.first); l != nil {
					return l, attempt, nil
				}
			}
			// A barging waiter shares each notice with one waiter of
			// every other process. A short random pause spreads them
			// out, so the first to reach the nodes takes them all
			// instead of splitting the vote. A queued waiter is woken
			// alone, as the head, and goes at once.
			if a.w.mode != queueWait {
				time.Sleep(jitter(wakeSpread))
			}
		case <-a.cl.retry:
			t.Stop() // a late answer took the key: try again at once
		case <-ctx.Done():
			t.Stop()
			qerr.Err = c.stopped(ctx)
			return nil, attempt, qerr
		}
	}
}

// awaitGrants takes the key when the call's grants make a quorum, waiting
// up to the per-node timeout for the notices still on their way: a node
// answers a release within it, and publishes its grant as it does. It
// returns nil when the grants do not make a quorum by then, or ctx ends.
// It runs after a refused attempt: the refusals may be older than the
// grants (the attempt reached those nodes before the releases did), so
// they say nothing against them, and a split now would take away a
// quorum of grants arriving (TestFairLocalTurnQueuesWhenItComes lost its
// order that way, the split's queue_leave handing the key to the waiter
// behind).
func (a *acquisition) awaitGrants(ctx context.Context, n *notices) *Lock {
	c := a.c
	if l := c.takeGrant(ctx, a.cl, n.grants(), a.first); l != nil || n.wake == nil {
		return l
	}
	t := time.NewTimer(c.opts.NodeTimeout)
	defer t.Stop()
	for {
		select {
		case <-n.wake:
			if l := c.takeGrant(ctx, a.cl, n.grants(), a.first); l != nil {
				return l
			}
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// split ends the call as if it gave up, and makes a new call take its place
// in the waiting order (the same priority) and its local turn. It is for a
// call whose attempt failed while releases had granted it the key on some
// nodes: the nodes granted the key to different waiters (a waiter's entry
// reached a node after a release there had picked the next head), and
// every grant stays while its call waits, since the call may count it from
// its notice; no waiter reaches a quorum, and none would give way. Leaving
// the queue takes the call's grants away (queue_leave.lua) and hands the key
// on; its late notices no longer name a waiting call. The new call starts
// afresh: its validity counts from its own first attempt.
func (a *acquisition) split(ctx context.Context) {
	c, ls, w := a.c, a.cl.ls, a.w
	w.gaveUp.Store(true) // before done: see lateQueued
	w.done.Store(true)
	c.leaveQueue(ctx, ls, w)
	nls := ls.renewed(c)
	ncl := newCall(a.cl.ctx, nls)
	ncl.leaveTurn, ncl.retry = a.cl.leaveTurn, a.cl.retry
	nw := newWaiter(nls, w.mode, c.clock.Now(), c.waker.id)
	nw.priority = w.priority
	// Its next attempt comes after the policy's first delay, as a head's
	// does: the other waiters of the split start over too, and their
	// jittered attempts reach the nodes one after the other.
	nw.headAttempts = 1
	a.cl, a.w, a.first = ncl, nw, c.clock.Now()
}
