// Package record records what a redlock client does into a
// [history.Recorder], so that a test checks a real history without writing
// a single event by hand:
//
//	rec := history.NewRecorder()
//	c1, _ := redlock.New(nodes, record.As(rec, "c1").Options(nil))
//	l, _ := c1.Acquire(ctx, "job", ttl, nil) // recorded, and so is every
//	// Extend (the watchdog's too), Release and loss of l
//	record.As(rec, "c1").Write("job", l, 1, func() (int64, error) { ... })
//	rep := history.Check(rec.Events(), nil)
//
// It lives apart from redlocktest because it imports redlock, whose own
// tests import redlocktest: redlocktest itself never imports redlock.
package record

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Client records into a history as one named client: its lock events, its
// guarded accesses downstream. The zero value is not usable; create it with
// As. A Client is a small value, safe for concurrent use.
type Client struct {
	rec  *history.Recorder
	name string
}

// As returns the recording of the client named name into rec.
func As(rec *history.Recorder, name string) Client { return Client{rec: rec, name: name} }

// Name returns the client's name in the history.
func (c Client) Name() string { return c.name }

// Recorder returns the history recorded into.
func (c Client) Recorder() *history.Recorder { return c.rec }

// Options returns a copy of opts (nil: the defaults) whose Observe records
// every event of the redlock.Client it configures, then calls opts.OnEvent
// if set:
//   - a successful Acquire as history.Acquire, with its token, fence,
//     start, end and local deadline; a failed one as history.AcquireFail;
//   - every extend round, Extend's or the watchdog's, as history.Extend (a
//     failed round with its error in Detail: it does not move the deadline);
//   - Release as history.Release, at the moment it was called;
//   - a loss as history.Lost, when the lock noticed it.
func (c Client) Options(opts *redlock.Options) *redlock.Options {
	var o redlock.Options
	if opts != nil {
		o = *opts
	}
	user := o.OnEvent
	o.OnEvent = func(ctx context.Context, e redlock.Event) {
		c.Observe(ctx, e)
		if user != nil {
			user(ctx, e)
		}
	}
	return &o
}

// Observe records e: it is the Observe that Options installs, for code that
// chains observers itself. It does not use ctx.
func (c Client) Observe(_ context.Context, e redlock.Event) {
	ev := history.Event{Client: c.name, Lock: e.Name, Token: e.Token, Fence: e.Fence,
		Start: c.stamp(e.Start), At: c.stamp(e.End), Limit: e.Limit, Shared: e.Shared}
	switch e.Kind {
	case redlock.EventAcquire:
		ev.Kind = history.Acquire
		if e.Err != nil {
			ev.Kind, ev.Detail = history.AcquireFail, e.Err.Error()
		} else {
			ev.Until = c.stamp(e.Until)
		}
	case redlock.EventExtend:
		ev.Kind = history.Extend
		if e.Err != nil {
			ev.Detail = e.Err.Error()
			if e.Auto {
				ev.Detail = "watchdog: " + ev.Detail
			}
		} else {
			ev.Until = c.stamp(e.Until)
		}
	case redlock.EventRelease:
		// From the call on, the client no longer counts on the lock.
		ev.Kind, ev.At = history.Release, ev.Start
	case redlock.EventLost:
		ev.Kind = history.Lost
	default:
		return
	}
	c.rec.Record(ev)
}

// stamp converts t to the recorder's clock; the zero time stays zero.
func (c Client) stamp(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return c.rec.Stamp(t)
}

// New is redlock.New with the recording Options.
func (c Client) New(nodes []redis.UniversalClient, opts *redlock.Options) (*redlock.Client, error) {
	return redlock.New(nodes, c.Options(opts))
}

// Write runs do, a write of value to resource under h's fence through one
// of the guards of package [github.com/redlock-go/redlock/guard] (or any
// store), and records it as history.Write:
// accepted if do returns nil, with the store's order of acceptance seq
// (for a counter, the value stored), rejected otherwise with the error. It
// returns do's error.
func (c Client) Write(resource string, h guard.Holder, value int64, do func() (seq int64, err error)) error {
	start := c.rec.Now()
	seq, err := do()
	ev := history.Event{Kind: history.Write, Client: c.name, Lock: resource, Token: h.Token(), Fence: h.Fence(),
		Start: start, At: c.rec.Now(), Accepted: err == nil, Value: value}
	if err != nil {
		ev.Detail = err.Error()
	} else {
		ev.Seq = seq
	}
	c.rec.Record(ev)
	return err
}

// Read runs do, a read of resource under h's fence through a guard, and
// records it only if it failed (a guard refusing it returns
// guard.ErrStaleFence): as a rejected history.Write, since the
// read-modify-write it began will not happen. It returns do's error.
func (c Client) Read(resource string, h guard.Holder, do func() error) error {
	start := c.rec.Now()
	err := do()
	if err != nil {
		c.rec.Record(history.Event{Kind: history.Write, Client: c.name, Lock: resource, Token: h.Token(), Fence: h.Fence(),
			Start: start, At: c.rec.Now(), Detail: "read rejected: " + err.Error()})
	}
	return err
}
