package redlock

import (
	"context"
	"errors"
	"time"
)

// Do runs fn under the lock name: it acquires the lock for ttl as
// [Client.Acquire] does with opts (nil: the defaults; AutoExtend is always
// on), calls fn with a context derived from ctx that is cancelled when the
// lock is lost (its cause is then the loss, matching [ErrLost]), and
// releases the lock when fn returns — or panics: the lock is released and
// the panic goes on. fn comes last, as Go callbacks do.
//
// The error is Acquire's when the lock was not taken (fn did not run).
// Otherwise it joins fn's error with the release's: errors.Is(err, ErrLost)
// reports that the lock was lost while fn ran (so whatever fn did may have
// overlapped another holder; fenced writes were refused), and fn's own
// errors match as they are. nil means fn succeeded under a lock held
// throughout.
//
// A nil fn is refused at once, before anything is acquired.
func (c *Client) Do(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions, fn func(ctx context.Context, l *Lock) error) error {
	if err := c.made(); err != nil {
		return err
	}
	if err := checkCtx(ctx, "Do"); err != nil {
		return err
	}
	if fn == nil {
		return invalidf("redlock: Do %q: fn is nil: pass the function to run under the lock", name)
	}
	var o AcquireOptions
	if opts != nil {
		o = *opts
	}
	o.AutoExtend = true
	l, err := c.Acquire(ctx, name, ttl, &o)
	if err != nil {
		return err
	}
	// The release runs even if ctx has ended or fn panics; it is bounded
	// by the node timeout.
	release := func() error { return l.Release(context.WithoutCancel(ctx)) }
	returned := false
	defer func() {
		if !returned { // fn panicked: release, and let the panic go on
			_ = release()
		}
	}()
	ferr := fn(l.Context(ctx), l)
	returned = true
	return errors.Join(ferr, release())
}
