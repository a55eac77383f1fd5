package redlock

import (
	"context"
	"sync"
	"time"
)

// Lock is one acquisition of a named lock: its token, fence and lease. Its
// identity never changes; a new Acquire makes a new Lock. All methods are
// safe for concurrent use.
//
// The lease ends at the local deadline [Lock.ValidUntil], measured on this
// process's monotonic clock. Done closes at that deadline unless an extend
// succeeded first, when the lock is released, or when it is lost.
type Lock struct {
	c         *Client
	ls        *lease // read only
	fence     uint64
	won       string             // what the lease counts on a node, as its extend sends it (lease.counted)
	call      *call              // the call that won it: its late answers and local turn
	stopWatch context.CancelFunc // stops the watchdog and cancels its round in flight; nil without one
	watchDone chan struct{}      // closed by the watchdog when it returns; nil without one

	mu       sync.Mutex                      // protects the fields below
	done     chan struct{}                   // closed when the lock ends (released or lost); made by the first Done (most locks never wait on it)
	over     bool                            // the lock has ended: a Done made now is closed
	turn     chan struct{}                   // buffered 1: holding its slot serialises extend rounds, so deadlines move in order; made by the first extend
	until    time.Time                       // local deadline, monotonic
	gen      int                             // bumped whenever the deadline timer is replaced
	timer    stopper                         // fires at until
	err      error                           // nil while held; the loss (matching ErrLost) or ErrReleased after
	cause    error                           // the last failed extend round: why the lock is lost if the deadline passes
	released bool                            // Release has been called
	contexts map[int]context.CancelCauseFunc // live contexts from Context, cancelled when the lock ends (nil until the first)
	nextCtx  int                             // key of the next entry in contexts
}

// newLock returns the lock that call cl won, with fence, valid until until,
// counting won on the nodes (lease.counted).
func newLock(c *Client, cl *call, won string, fence uint64, until time.Time) *Lock {
	fence = cl.ls.form.fence(cl.ls, fence)
	l := &Lock{c: c, ls: cl.ls, fence: fence, won: won, call: cl}
	l.mu.Lock()
	l.setDeadlineLocked(until)
	l.mu.Unlock()
	return l
}

// Name returns the lock's name as given to Acquire.
func (l *Lock) Name() string { return l.ls.name }

// Token returns the random token that proves ownership on the nodes. Each
// attempt of the Acquire call wrote "<token>.<attempt>" to the lock key;
// extend matches the winning attempt's value (or a release's grant to the
// call, "<token>.0"), release any value that starts with "<token>.". (A
// re-entrant lock keeps the token in its hash; its nested and resumed locks
// share it.)
func (l *Lock) Token() string { return l.ls.token }

// Fence returns the fencing token of this acquisition: larger than that of
// every acquisition of the same name that completed before this one began.
// Two holds that overlap (possible only when Redlock's timing assumptions
// break) may get the same fence; the guards of package
// [github.com/redlock-go/redlock/guard] then accept it from one owner only
// (the holder whose [Lock.Token] they saw first). Send it with every write
// to a downstream store. 0 when fencing is off. Extending the lock keeps the
// fence.
func (l *Lock) Fence() uint64 { return l.fence }

// ValidUntil returns the local deadline of the lease: after it, the lock
// may be held by someone else. The value carries a monotonic clock reading,
// so time.Until(l.ValidUntil()) is immune to wall-clock jumps.
func (l *Lock) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock ends: at the local
// deadline unless an extend succeeded first, when it is lost, or on
// Release. Err then says which.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.over {
			close(l.done)
		}
	}
	return l.done
}

// extendTurn returns the channel whose one slot an extend round holds.
func (l *Lock) extendTurn() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.turn == nil {
		l.turn = make(chan struct{}, 1)
	}
	return l.turn
}

// Err returns nil while the lock is held; once it was lost (even if
// released afterwards), an error matching [ErrLost] — the failed extend
// round's [*QuorumError] when one explains the loss; and [ErrReleased] once
// it was released while held.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Context returns a context derived from parent that is cancelled when the
// lock ends; context.Cause then returns [Lock.Err]. Run the critical section
// under it so that work stops when the lease does. The lock keeps no
// reference to the returned context once parent ends.
func (l *Lock) Context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		cancel(l.err)
		return ctx
	}
	id := l.nextCtx
	l.nextCtx++
	if l.contexts == nil {
		l.contexts = map[int]context.CancelCauseFunc{}
	}
	l.contexts[id] = cancel
	// Once ctx ends (its parent ended, or the lock did), forget it.
	context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.contexts, id)
	})
	return ctx
}

// ownContext is the lock's own context: that of the call that made it,
// without its cancellation or deadline. The lock's events that no call
// causes (a loss, the watchdog's rounds) are reported with it.
func (l *Lock) ownContext() context.Context {
	if l.call.ctx == nil {
		return context.Background()
	}
	return context.WithoutCancel(l.call.ctx)
}

// setDeadlineLocked moves the local deadline to until and re-arms the timer.
func (l *Lock) setDeadlineLocked(until time.Time) {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.gen++
	gen := l.gen
	l.until = until
	l.timer = l.c.clock.AfterFunc(until.Sub(l.c.clock.Now()), func() { l.end(ErrLost, gen) })
}

// end ends the lock with err (a loss or ErrReleased) unless it has ended
// already, or, for a deadline timer (gen > 0), unless the timer is stale. A
// deadline reports the last failed extend round as its cause, if any. It
// reports whether this call ended the lock.
func (l *Lock) end(err error, gen int) bool {
	l.mu.Lock()
	if l.err != nil || (gen > 0 && gen != l.gen) {
		l.mu.Unlock()
		return false
	}
	if gen > 0 && l.cause != nil {
		err = l.cause
	}
	l.err = err
	l.timer.Stop()
	until := l.until
	contexts := l.contexts
	l.contexts = nil
	l.mu.Unlock()
	if err != ErrReleased {
		l.call.leaveTurn() // Release hands the turn on only once the keys are gone
		now := l.c.clock.Now()
		l.c.observeOf(l.ownContext(), l.ls, Event{Kind: EventLost, Name: l.ls.name, Token: l.ls.token, Hold: l.ls.tag, Fence: l.fence, Start: now, End: now, Until: until, Err: err})
	}
	for _, cancel := range contexts {
		cancel(err)
	}
	l.mu.Lock()
	l.over = true
	if l.done != nil {
		close(l.done) // last, so that whoever sees Done sees everything else
	}
	l.mu.Unlock()
	return true
}
