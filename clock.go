package redlock

import "time"

// clock is the monotonic time source the lock measures elapsed time and
// deadlines with. time.Now carries a monotonic reading, so differences of its
// values are immune to wall-clock jumps on this machine; that is what makes
// the local deadline honest. The timing tests run under testing/synctest,
// whose fake clock drives time.Now and timers, so realClock serves them too.
type clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless stopped first.
	AfterFunc(d time.Duration, f func()) stopper
}

// stopper is the part of *time.Timer the lock uses.
type stopper interface {
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// minDrift is added to every drift allowance, whatever the TTL: it covers the
// granularity of Redis key expiry (about a millisecond) and timer slack here.
const minDrift = 2 * time.Millisecond

// drift is the clock-drift allowance for a lease of ttl:
// ttl*factor + 2ms. Redis nodes expire keys on their own clocks, which may
// run faster than ours; the allowance is time we give up so that our local
// deadline comes before any node's expiry.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + minDrift
}

// validity is how long a lease of ttl, granted after elapsed, can be trusted:
// ttl - elapsed - drift. Zero or less means the quorum came too late to be
// of any use and the acquisition must be treated as failed.
func validity(ttl, elapsed time.Duration, factor float64) time.Duration {
	return ttl - elapsed - drift(ttl, factor)
}

// nodeTimeout is the per-node timeout for a round under a lease of ttl.
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	return min(c.opts.NodeTimeout, ttl-drift(ttl, c.opts.DriftFactor))
}
