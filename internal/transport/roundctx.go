package transport

import (
	"context"
	"sync"
	"time"
)

// roundCtx is a round's context for its calls: the values of the caller's
// context, without its cancellation, and the round's deadline, at which
// it ends (context.DeadlineExceeded). It is a context.WithDeadline that
// makes its timer and Done channel only when a call first asks for Done
// (go-redis reads the deadline, with ContextTimeoutEnabled, but does not
// wait on Done for a command on a connection it holds; a hook or a
// Scripter of the caller's may), so that a round costs neither. stop
// ends it once every call answered.
type roundCtx struct {
	context.Context
	deadline time.Time

	mu    sync.Mutex // protects the fields below
	done  chan struct{}
	timer *time.Timer
	err   error
}

func (c *roundCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *roundCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		} else if d := time.Until(c.deadline); d <= 0 {
			c.endLocked()
		} else {
			c.timer = time.AfterFunc(d, func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.endLocked()
			})
		}
	}
	return c.done
}

func (c *roundCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.endLocked()
	}
	return c.err
}

// endLocked ends the context at its deadline.
func (c *roundCtx) endLocked() {
	if c.err == nil {
		c.err = context.DeadlineExceeded
		if c.done != nil {
			close(c.done)
		}
	}
}

// stop ends the context (context.Canceled, as a cancel func would) and
// releases its timer, if it made one: every call answered.
func (c *roundCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.err == nil {
		c.err = context.Canceled
		if c.done != nil {
			close(c.done)
		}
	}
}
