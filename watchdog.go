package redlock

import (
	"context"
	"fmt"
	"time"
)

// startWatchdog extends the lock by its TTL every TTL/3 until it ends, in a
// goroutine the Client owns. Release and Client.Close stop it. Its rounds
// run under the lock's own context, ended by Close or stop, so that their
// events carry the values of the call that made the lock.
func (l *Lock) startWatchdog() { l.startCappedWatchdog(0) }

// startCappedWatchdog is startWatchdog, with no extend that would keep the
// lock valid more than maxHold from now (0: no cap; see
// [AcquireOptions].MaxHold).
func (l *Lock) startCappedWatchdog(maxHold time.Duration) {
	var hc holdCap
	if maxHold > 0 {
		hc = holdCap{max: maxHold, until: l.c.clock.Now().Add(maxHold)}
	}
	ctx, stop := l.c.untilClosed(l.ownContext())
	l.stopWatch, l.watchDone = stop, make(chan struct{})
	l.c.goes.Go(func() {
		defer close(l.watchDone)
		l.watch(ctx, hc)
	})
}

// holdCap is the watchdog's bound ([AcquireOptions].MaxHold): no extend
// round whose lease could reach past until. The zero holdCap is no bound.
type holdCap struct {
	max   time.Duration
	until time.Time
}

// stops reports whether the cap forbids an extend round of ttl that starts
// at at: its lease would end after until.
func (hc holdCap) stops(at time.Time, ttl time.Duration) bool {
	return hc.max > 0 && at.Add(ttl).After(hc.until)
}

// capped ends the watchdog at its cap: the lock runs on to its deadline,
// and then its error says the cap ended it (with the last failed round's,
// if one failed).
func (l *Lock) capped(hc holdCap) {
	l.mu.Lock()
	if l.err == nil {
		l.cause = &maxHoldError{name: l.ls.name, max: hc.max, cause: l.cause}
	}
	until := l.until
	l.mu.Unlock()
	l.c.warn("redlock: watchdog stopped at AcquireOptions.MaxHold; the lock ends at its deadline",
		"lock", l.ls.name, "max_hold", hc.max, "until", until)
}

// maxHoldError is the loss of a lock whose watchdog stopped at its
// MaxHold. It matches ErrLost and ErrMaxHold, and the last failed round's
// error, if any.
type maxHoldError struct {
	name  string
	max   time.Duration
	cause error
}

func (e *maxHoldError) Error() string {
	return fmt.Sprintf("redlock: lock %q ended at its deadline after its MaxHold of %v, when the watchdog stopped extending it: "+
		"end the critical section sooner, or raise AcquireOptions.MaxHold", e.name, e.max)
}

func (e *maxHoldError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrLost, ErrMaxHold, e.cause}
	}
	return []error{ErrLost, ErrMaxHold}
}

// stopWatchdog stops the watchdog, if any, and waits for it. That is
// prompt: a round in flight is cancelled, and its round returns without
// waiting for the nodes (their calls finish in the Client's goroutines).
func (l *Lock) stopWatchdog() {
	if l.stopWatch != nil {
		l.stopWatch()
		<-l.watchDone
	}
}

// watch is the watchdog; it runs until ctx ends (Release, Client.Close),
// the lock does, or hc stops it. A round that misses its quorum (a blip: a node
// restarting, a slow link) is retried with a jittered, growing delay, as
// long as a round can still finish before the deadline; the lock is lost
// only when a majority says the key is not ours or the deadline passes
// (the deadline timer ends it, with the last round's error as its cause).
func (l *Lock) watch(ctx context.Context, hc holdCap) {
	ttl := l.ls.ttl
	first := max(ttl/30, 5*time.Millisecond)
	wait, backoff := ttl/3, first
	turn, done := l.extendTurn(), l.Done()
	for {
		if hc.stops(l.c.clock.Now().Add(wait), ttl) {
			l.capped(hc)
			return
		}
		if !l.sleep(ctx, wait) {
			return
		}
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return
		case <-done:
			return
		}
		if hc.stops(l.c.clock.Now(), ttl) { // the round would start now
			<-turn
			l.capped(hc)
			return
		}
		out, ev, err := l.extendRound(ctx, ttl)
		ev.Auto = true
		l.c.observeOf(l.ownContext(), l.ls, ev)
		<-turn
		switch {
		case err == nil:
			wait, backoff = ttl/3, first
			continue
		case out != missed:
			l.lose(ctx, out, err)
			return
		case ctx.Err() != nil:
			return // stopped: the lock stays valid until its deadline
		}
		wait, backoff = jitter(backoff), min(2*backoff, ttl/6)
		// The last round must be able to finish before the deadline.
		if left := l.ValidUntil().Sub(l.c.clock.Now()) - l.ls.timeout; wait > left {
			if left <= 0 {
				return // the deadline timer ends the lock, with err as its cause
			}
			wait = left
		}
		l.c.warn("redlock: watchdog extend missed its quorum; retrying before the deadline",
			"lock", l.ls.name, "retry_in", wait, "until", l.ValidUntil(), "err", err)
	}
}

// sleep waits d on the client's clock and reports whether the watchdog
// should go on: false once the lock ended or ctx did.
func (l *Lock) sleep(ctx context.Context, d time.Duration) bool {
	tick := make(chan struct{})
	t := l.c.clock.AfterFunc(d, func() { close(tick) })
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-l.Done():
		t.Stop()
		return false
	case <-tick:
		return true
	}
}
