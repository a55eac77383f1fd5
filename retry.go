package redlock

import (
	"math/rand/v2"
	"time"
)

// RetryPolicy decides, after failed attempt number attempt (1 for the
// first), how long to wait before the next one, or that there is none
// (ok false). It must be stateless: one policy value may serve many
// concurrent Acquire calls, each of which counts its own attempts.
//
// Whatever the policy, Acquire stops when its context ends. A waiter is also
// woken early when the holder releases the lock.
type RetryPolicy func(attempt int) (delay time.Duration, ok bool)

// NoRetry makes one attempt only (a try-lock).
func NoRetry() RetryPolicy {
	return func(int) (time.Duration, bool) { return 0, false }
}

// DefaultRetry is the policy used when [AcquireOptions].Retry is nil:
// jittered exponential backoff from 8ms to 256ms, retrying until the
// context ends.
func DefaultRetry() RetryPolicy {
	return ExponentialBackoff(8*time.Millisecond, 256*time.Millisecond)
}

// ExponentialBackoff waits about min, 2*min, 4*min … up to max between
// attempts, each delay drawn at random from its upper half. It retries until
// the context ends; wrap it in [LimitRetry] to bound the attempts.
//
// The delay is never fixed: clients that retry in step keep splitting the
// vote among themselves, so nobody reaches a quorum.
func ExponentialBackoff(min, max time.Duration) RetryPolicy {
	if min <= 0 {
		min = time.Millisecond
	}
	if max < min {
		max = min
	}
	return func(attempt int) (time.Duration, bool) {
		d := max
		if attempt < 31 {
			d = min << (attempt - 1)
		}
		if d > max || d <= 0 {
			d = max
		}
		return jitter(d), true
	}
}

// LimitRetry allows at most attempts attempts in all (so attempts-1 waits)
// under policy p.
func LimitRetry(p RetryPolicy, attempts int) RetryPolicy {
	return func(attempt int) (time.Duration, bool) {
		if attempt >= attempts {
			return 0, false
		}
		return p(attempt)
	}
}

// wakeSpread bounds the random pause of a waiter woken by a release notice.
const wakeSpread = 2 * time.Millisecond

// jitter draws a delay uniformly from [d/2, d].
func jitter(d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}
