package redlock

import (
	"context"
	"time"
)

// TryAcquire makes one attempt to take the lock name for ttl, without
// waiting: the try-lock of other lock libraries (redsync's TryLock, etcd's
// TryLock). It returns the lock, or at once an error matching
// [ErrNotAcquired] (and [ErrHeld] when a node reported another holder),
// exactly as [Client.Acquire] with [NoRetry] does: it does not wait for
// this Client's other calls of name, and it takes a free lock only when no
// other call waits for it in the nodes' queue (unless opts.Barging).
//
// opts is as for Acquire (nil: the defaults). Its Retry must be nil or a
// policy that allows no retry after the first attempt, such as [NoRetry];
// a policy that would retry is refused with an error before anything is
// sent, since TryAcquire never waits and ignoring it would hide a caller
// that meant to wait (use Acquire for that).
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions) (*Lock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "TryAcquire"); err != nil {
		return nil, err
	}
	o, err := oneTry("TryAcquire", "Acquire", name, opts)
	if err != nil {
		return nil, err
	}
	return c.Acquire(ctx, name, ttl, o)
}

// TryCampaign makes one try to lead the election name, without waiting:
// [Client.Campaign] with one attempt, as [Client.TryAcquire] makes it. It
// returns the leadership, or at once an error matching [ErrNotAcquired]
// (and [ErrHeld] when another candidate leads or waits first).
func (c *Client) TryCampaign(ctx context.Context, name string, ttl time.Duration, value string) (*Leadership, error) {
	return c.campaign(ctx, name, ttl, value, NoRetry())
}

// oneTry returns opts with NoRetry, for op (TryAcquire, TryAcquirePermit),
// or an error when its Retry would retry: one that waits must call wait
// (Acquire, AcquirePermit) instead, and ignoring it would hide that.
func oneTry(op, wait, name string, opts *AcquireOptions) (*AcquireOptions, error) {
	var o AcquireOptions
	if opts != nil {
		o = *opts
	}
	if o.Retry != nil {
		if _, retries := o.Retry(1); retries {
			return nil, invalidf("redlock: %s %q: AcquireOptions.Retry would retry, but %s makes one attempt: leave Retry nil, or call %s to wait", op, name, op, wait)
		}
	}
	o.Retry = NoRetry()
	return &o, nil
}
