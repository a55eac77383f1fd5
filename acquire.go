package redlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// AcquireOptions configures one [Client.Acquire]. A nil *AcquireOptions
// means: wait with [DefaultRetry] until ctx ends, fencing on, no
// auto-extend.
type AcquireOptions struct {
	// Retry decides whether and when to try again after a failed attempt.
	// Nil means [DefaultRetry]; [NoRetry] makes a try-lock.
	Retry RetryPolicy

	// NoFence turns fencing off: no counter key is kept and [Lock.Fence]
	// returns 0. Fencing costs nothing in round trips in the normal case,
	// but each lock name keeps one small counter key per node forever (it
	// must never be deleted, or fences could repeat). Turn it off for lock
	// names of unbounded cardinality (one per user or per request), where
	// those keys would pile up.
	NoFence bool

	// AutoExtend starts a watchdog that extends the lock by its TTL every
	// TTL/3 until it is released or lost. A round that misses its quorum is
	// retried (jittered) while the deadline is more than one node timeout
	// away; the lock is lost when its deadline passes or a majority of the
	// nodes no longer hold it: then [Lock.Done] fires and [Lock.Err]
	// returns the failed round's error, which matches [ErrLost].
	AutoExtend bool

	// Barging lets the call take a free lock whoever has waited longer,
	// as most lock libraries do. By default waiting calls line up in an
	// order all nodes share, and a free lock goes to the one that has
	// waited longest (see the README, "Waiting in order"); a try-lock
	// ([NoRetry]) then takes a free lock only when nobody is waiting.
	// Barging calls neither queue nor honour the queue.
	Barging bool

	// Reentrant takes the lock in its re-entrant form: a hash per lock
	// that counts holds, so that [Lock.Reenter] (in this process) and
	// [Client.Resume] (in another) can take it again under the same token
	// and fence, and the nodes free it only when every hold is released.
	// Costs one hash instead of a string on each node; without it the lock
	// is the plain SET NX PX key. The two forms exclude each other: a
	// plain Acquire finds a re-entrant lock held, and the other way round.
	Reentrant bool

	// Metadata is a short text stored with the lock for whoever inspects
	// it ([Client.Inspect], redlock status): a host, a pid, a job id. At
	// most [MaxMetadataLen] bytes of UTF-8. It is kept in the re-entrant
	// form's hash, so setting it makes the lock re-entrant too.
	Metadata string
}

// lease is what one Acquire call fixes once, and every later step of its
// lock (extend, release, cleanup) reuses as it is.
type lease struct {
	name, key, fenceKey     string
	queueKey, queueTimesKey string // the waiting order's keys (queue.go)
	channel                 string // where the lock's releases are announced (see Client.releaseChannel)
	token                   string // the call's token: [Lock.Token]
	prefix                  string // token + ".": the start of every attempt's value
	first                   string // prefix + "1": the first attempt's value (see value)
	ttl                     time.Duration
	ttlArg                  string        // ttl in whole ms, as the scripts take it
	timeout                 time.Duration // per-node timeout under ttl
	fenceArg                string        // "1" fenced, "0" not
	hold                    string        // the re-entrant form (reentry.go): this lock's hold id; "" for a plain lock
	meta                    string        // the re-entrant form: the holder's metadata
	tag                     string        // Event.Hold of the lock: "" for Acquire's, random for Reenter's and Resume's

	// The waiting order (queue.go), fixed by enqueue.
	mode          string      // queueWait, queueTry or queueBarge; "" (barges) without enqueue
	member        string      // queueWait: the call's queue entry, "<token>:<client>", and ":<ttl>:<fence>" when grantable
	grantable     bool        // a release may grant the call the key (release.lua): a plain lock's waiter
	gaveUp        atomic.Bool // the call failed: its grants go when it leaves the queue
	priority      string      // queueWait: the call's rank in the queue, alike on every node
	queueDone     atomic.Bool // the call no longer waits: it won or gave up
	releaseQueued atomic.Bool // a release of the call was queued on the nodes' senders (see lateCovered)
	behind        bool        // the last attempt found another waiter first on a quorum (queued)
	headAttempts  int         // failed attempts in a row not behind another waiter (queued)
	promoted      bool        // the last attempt made the call the head of a free key (queued)

	acquireCall call // the Acquire call's share with its late answers (late.go), made with the lease
}

// tokenLen is the length of a token: 16 random bytes in unpadded base64.
const tokenLen = 22

// releasedPrefix is what Client.releaseChannel puts between the key prefix
// and the lock key.
const releasedPrefix = "released:"

func (c *Client) newLease(name string, ttl time.Duration, fenced bool) *lease {
	ls := &lease{name: name, ttl: ttl, timeout: c.nodeTimeout(ttl), fenceArg: "0"}
	if fenced {
		ls.fenceArg = "1"
	}
	// Every string the lease is made of, but the name, in one allocation:
	//	<p>released:<p>{name}:fence<p>{name}:qt<token>.1<ttl>
	// where <p> is the key prefix. The release channel ends with the lock
	// key, which the fence counter key extends, and the queue key is the
	// start of the queue's expiries key.
	p := c.opts.KeyPrefix
	var buf [256]byte
	b := append(buf[:0], p...)
	b = append(b, releasedPrefix...)
	k0 := len(b)
	b = append(append(append(append(b, p...), '{'), name...), '}')
	k1 := len(b)
	b = append(b, ":fence"...)
	q0 := len(b)
	b = append(b, b[k0:k1]...)
	b = append(b, ":qt"...)
	t0 := len(b)
	var random [16]byte
	_, _ = rand.Read(random[:]) // crypto/rand.Read never fails
	b = base64.RawURLEncoding.AppendEncode(b, random[:])
	b = append(b, ".1"...)
	d0 := len(b)
	b = strconv.AppendInt(b, ttl.Milliseconds(), 10)
	s := string(b)
	kl := k1 - k0
	ls.channel, ls.key, ls.fenceKey = s[:k1], s[k0:k1], s[k0:q0]
	ls.queueKey, ls.queueTimesKey = s[q0:q0+kl+2], s[q0:t0]
	ls.token, ls.prefix, ls.first = s[t0:t0+tokenLen], s[t0:t0+tokenLen+1], s[t0:d0]
	ls.ttlArg = s[d0:]
	if c.sharedValue {
		ls.prefix = ls.token
	}
	return ls
}

// millis formats d in whole milliseconds, as the scripts take a TTL.
func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// value is what attempt number attempt writes to the lock key: each attempt
// of a call writes a value of its own, so that a delayed cleanup of one
// attempt can never delete the key of the next. The lock's extend and
// release match the prefix, so they cover every attempt of the call.
func (ls *lease) value(attempt int) string {
	switch {
	case ls.prefix == ls.token: // the negative control: one value for all
		return ls.token
	case attempt == 1 && len(ls.first) == len(ls.prefix)+1 && ls.first[:len(ls.prefix)] == ls.prefix:
		return ls.first // made with the prefix (unless the token was replaced since)
	}
	return ls.prefix + strconv.Itoa(attempt)
}

// Acquire takes the lock name for ttl on a quorum of the nodes, retrying as
// opts says until ctx ends or the Client is closed. It returns as soon as a quorum has granted it,
// not waiting for a slow or dead minority.
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
	if o.Retry == nil {
		o.Retry = DefaultRetry()
	}
	start := c.clock.Now()
	ls := c.newLease(name, ttl, !o.NoFence)
	if o.Reentrant || o.Metadata != "" {
		ls.hold, ls.meta = ls.token, o.Metadata
	}

	// Wait for this client's earlier Acquire calls of the same name, unless
	// this is a try-lock (the policy allows no retry): a try-lock makes its
	// one attempt at once. A call that may wait stops waiting at Close.
	leave := func() {}
	if _, retries := o.Retry(1); retries {
		var stop func()
		ctx, stop = c.untilClosed(ctx)
		defer stop()
		var err error
		if leave, err = c.turns.enter(ctx, ls.key); err != nil {
			err = &QuorumError{Op: "acquire", Name: name, Quorum: c.quorum, Err: c.stopped(ctx), sentinel: ErrNotAcquired}
			c.observe(Event{Kind: EventAcquire, Name: name, Start: start, End: c.clock.Now(), Err: err})
			return nil, err
		}
	}
	// The call's place in the nodes' queue dates from now: calls of one
	// Client take turns locally first (see queue.go).
	ls.enqueue(queueMode(&o), c.clock.Now(), c.waker.id)
	ls.acquireCall.leaveTurn = leave
	l, attempts, err := c.acquire(ctx, &ls, &o)
	ls.gaveUp.Store(err != nil) // before queueDone: see lateQueued
	ls.queueDone.Store(true)
	ev := Event{Kind: EventAcquire, Name: name, Start: start, End: c.clock.Now(), Attempts: attempts, Err: err}
	if err != nil {
		if attempts > 0 {
			c.leaveQueue(ctx, ls)
		}
		leave()
		c.observe(ev)
		return nil, err
	}
	ev.Token, ev.Fence, ev.Until = l.ls.token, l.fence, l.ValidUntil()
	c.observe(ev)
	if o.AutoExtend {
		l.startWatchdog()
	}
	return l, nil
}

// untilClosed returns ctx, ended also when Close begins, and the func that
// releases it: every wait of an Acquire call (its local turn, an attempt's
// round, the pause between attempts) ends at Close. The cleanups after it
// run regardless of ctx. See stopped for why it ended.
func (c *Client) untilClosed(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(c.life, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

// stopped returns why an Acquire call must stop: [ErrClosed] once Close has
// begun, else ctx's error; nil when neither.
func (c *Client) stopped(ctx context.Context) error {
	if c.isClosed() {
		return ErrClosed
	}
	return ctx.Err()
}

// acquire runs the attempts of one Acquire call and reports how many it
// made. On a split of the releases' grants it starts over as a new call
// (see split), and *lsp is then the new call's lease.
func (c *Client) acquire(ctx context.Context, lsp **lease, o *AcquireOptions) (*Lock, int, error) {
	ls := *lsp
	cl := &ls.acquireCall
	var wake <-chan struct{}
	var granted func() []uint64
	var channel, id string // what wake listens on, and for
	var missed bool        // a notice may have come before the call listened
	var unwatch func()     // ends the current watch
	defer func() {
		if unwatch != nil {
			unwatch()
		}
	}()
	// listenEarly makes a call that may wait listen before its (next)
	// attempt when notices on its channel reach us already (the
	// subscription of an earlier call lingers): a release that came between
	// the attempt's refusal and its listening would go unheard, and the
	// call, the head it named, would sleep through its turn until its poll.
	listenEarly := func() {
		channel, id = c.wakeOn(ls)
		if c.waker.subscribed(channel) {
			wake, granted, unwatch, _ = c.waker.watch(channel, id)
		}
	}
	if _, retries := o.Retry(1); retries {
		cl.retry = make(chan struct{}, 1)
		c.waker.open()
		listenEarly()
	}
	first := c.clock.Now() // no release can grant the call the key before its first attempt
	for attempt := 1; ; attempt++ {
		if err := c.stopped(ctx); err != nil {
			return nil, attempt - 1, &QuorumError{Op: "acquire", Name: ls.name, Quorum: c.quorum, Attempts: attempt - 1,
				Nodes: make([]error, len(c.nodes)), Err: err, sentinel: ErrNotAcquired}
		}
		l, qerr := c.try(ctx, cl, ls, attempt)
		if l != nil {
			return l, attempt, nil
		}
		if granted != nil && len(granted()) > 0 {
			// Grants to the call on some nodes, and still no quorum: the
			// releases split the key between waiters (see split).
			ls = c.split(ctx, ls)
			*lsp, cl = ls, &ls.acquireCall
			unwatch()
			wake, granted, unwatch, first = nil, nil, nil, c.clock.Now()
			listenEarly()
		}
		qerr.Attempts = attempt
		if qerr.Err = c.stopped(ctx); qerr.Err != nil || c.hopeless(qerr) {
			return nil, attempt, qerr
		}
		delay, ok := o.Retry(attempt)
		if !ok {
			return nil, attempt, qerr
		}
		if wake == nil {
			// Contended: from now on a release of this name wakes us.
			// Notices that reach us only later wake us when they start
			// to (waker.setLive); if they reached us already, one may
			// have come since the attempt's refusal: try again at once.
			wake, granted, unwatch, missed = c.waker.watch(channel, id)
		}
		d := ls.waitDelay(delay, o.Retry, func() bool { return c.waker.subscribed(channel) })
		if missed {
			d, missed = 0, false
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
			if ls.grantable {
				if l := c.takeGrant(ctx, cl, ls, granted(), first); l != nil {
					return l, attempt, nil
				}
			}
			// A barging waiter shares each notice with one waiter of
			// every other process. A short random pause spreads them
			// out, so the first to reach the nodes takes them all
			// instead of splitting the vote. A queued waiter is woken
			// alone, as the head, and goes at once.
			if ls.mode != queueWait {
				time.Sleep(jitter(wakeSpread))
			}
		case <-cl.retry:
			t.Stop() // a late answer took the key: try again at once
		case <-ctx.Done():
			t.Stop()
			qerr.Err = c.stopped(ctx)
			return nil, attempt, qerr
		}
	}
}

// hopeless reports whether so many nodes failed for good (wrong key type,
// a corrupt counter, a replica, refused credentials) that no retry can
// reach a quorum.
func (c *Client) hopeless(e *QuorumError) bool {
	n := 0
	for _, err := range e.Nodes {
		if err != nil && permanent(errors.Unwrap(err)) {
			n++
		}
	}
	return n > len(c.nodes)-c.quorum
}
