package redlock

import "time"

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

	// MaxHold caps the watchdog: it makes no extend that would keep the
	// lock valid past MaxHold after Acquire returned it, so a holder that
	// is stuck (its critical section hung, the process alive) cannot keep
	// the lock forever. The lock then ends at its deadline, at the latest
	// MaxHold after Acquire returned (at its first deadline if MaxHold is
	// shorter than about 4/3 of the TTL), and [Lock.Err] matches [ErrLost]
	// and [ErrMaxHold]. Extend calls of your own are not capped. 0 (the
	// default) means no cap; it needs AutoExtend, and may not be negative.
	MaxHold time.Duration

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
	// most [MaxMetadataLen] bytes of UTF-8. It does not change the lock's
	// form: the re-entrant form keeps it in its hash, the plain form in a
	// key of its own beside the lock key, written with it and expiring
	// with it. A call with Metadata is not granted the lock by a release
	// while it waits: it takes the lock with its next attempt, which
	// writes the metadata with it.
	Metadata string
}

// checkMaxHold refuses a MaxHold that cannot mean what was asked: a
// negative one, or one without the watchdog it caps.
func checkMaxHold(name string, o *AcquireOptions) error {
	switch {
	case o.MaxHold < 0:
		return invalidf("redlock: Acquire %q: AcquireOptions.MaxHold %v is negative: give the longest the watchdog may keep the lock, or 0 for no cap", name, o.MaxHold)
	case o.MaxHold > 0 && !o.AutoExtend:
		return invalidf("redlock: Acquire %q: AcquireOptions.MaxHold caps the watchdog, but AutoExtend is off: set AutoExtend too, or leave MaxHold 0", name)
	}
	return nil
}
