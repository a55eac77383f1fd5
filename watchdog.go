package redlock

import (
	"context"
	"time"
)

// startWatchdog extends the lock by its TTL every TTL/3 until it ends, in a
// goroutine the Client owns. Release and Client.Close stop it. Its rounds
// run under the lock's own context, ended by Close or stop, so that their
// events carry the values of the call that made the lock.
func (l *Lock) startWatchdog() {
	ctx, stop := l.c.untilClosed(l.ownContext())
	l.stopWatch, l.watchDone = stop, make(chan struct{})
	l.c.goes.Go(func() {
		defer close(l.watchDone)
		l.watch(ctx)
	})
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

// watch is the watchdog; it runs until ctx ends (Release, Client.Close) or
// the lock does. A round that misses its quorum (a blip: a node
// restarting, a slow link) is retried with a jittered, growing delay, as
// long as a round can still finish before the deadline; the lock is lost
// only when a majority says the key is not ours or the deadline passes
// (the deadline timer ends it, with the last round's error as its cause).
func (l *Lock) watch(ctx context.Context) {
	ttl := l.ls.ttl
	first := max(ttl/30, 5*time.Millisecond)
	wait, backoff := ttl/3, first
	for {
		if !l.sleep(ctx, wait) {
			return
		}
		select {
		case l.extendTurn <- struct{}{}:
		case <-ctx.Done():
			return
		case <-l.done:
			return
		}
		out, ev, err := l.extendRound(ctx, ttl)
		ev.Auto = true
		l.c.observeOf(l.ownContext(), l.ls, ev)
		<-l.extendTurn
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
	case <-l.done:
		t.Stop()
		return false
	case <-tick:
		return true
	}
}
