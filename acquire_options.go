package redlock

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
	// most [MaxMetadataLen] bytes of UTF-8. It does not change the lock's
	// form: the re-entrant form keeps it in its hash, the plain form in a
	// key of its own beside the lock key, written with it and expiring
	// with it. A call with Metadata is not granted the lock by a release
	// while it waits: it takes the lock with its next attempt, which
	// writes the metadata with it.
	Metadata string
}
