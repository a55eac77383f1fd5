package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redlock-go/redlock"
)

// holder is what run and elect hold while the command runs: a lock, or one
// permit of a semaphore (run -n). Both are kept by the library's watchdog
// and end the same way.
type holder interface {
	Token() string
	Fence() uint64
	ValidUntil() time.Time
	Done() <-chan struct{}
	Err() error
	Release(ctx context.Context) error
}

var (
	_ holder = (*redlock.Lock)(nil)
	_ holder = (*redlock.Permit)(nil)
)

// acquireHold takes what run holds for name: lock name, or with -n N > 1
// one of the N permits of semaphore name. It returns a nil holder with
// every error (never a typed nil).
func acquireHold(ctx context.Context, c *redlock.Client, o *runOptions, name string, opts *redlock.AcquireOptions) (holder, error) {
	if o.shared {
		l, err := c.AcquireShared(ctx, name, o.ttl, opts)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	if len(o.also) > 0 {
		return acquireSet(ctx, c, o, name, opts)
	}
	if o.limit <= 1 {
		l, err := c.Acquire(ctx, name, o.ttl, opts)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	p, err := c.AcquirePermit(ctx, name, o.limit, o.ttl, opts)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// holdEnv is the command's variables for h: its token and fence, and for
// a permit its slot and the semaphore's limit.
func holdEnv(name string, h holder) []string {
	env := []string{
		"REDLOCK_NAME=" + name,
		"REDLOCK_TOKEN=" + h.Token(),
		"REDLOCK_FENCE=" + strconv.FormatUint(h.Fence(), 10),
	}
	if s, ok := h.(setHolder); ok {
		env = append(env, setEnv(s)...)
	}
	if p, ok := h.(*redlock.Permit); ok {
		env = append(env, "REDLOCK_SLOT="+strconv.Itoa(p.Slot()), "REDLOCK_LIMIT="+strconv.Itoa(p.Limit()))
	}
	return env
}

// holdName names h in messages: lock "NAME", or permit S of N of "NAME".
func holdName(name string, h holder) string {
	if p, ok := h.(*redlock.Permit); ok {
		return fmt.Sprintf("permit %d of %d of %q", p.Slot(), p.Limit(), name)
	}
	if l, ok := h.(*redlock.Lock); ok && l.Shared() {
		return fmt.Sprintf("shared hold of lock %q", name)
	}
	if s, ok := h.(setHolder); ok {
		return fmt.Sprintf("locks %q", s.Names())
	}
	return fmt.Sprintf("lock %q", name)
}

// wantedName names what run waits for: lock "NAME", or one of the N
// permits of "NAME".
func wantedName(name string, limit int) string {
	if limit <= 1 {
		return fmt.Sprintf("lock %q", name)
	}
	return fmt.Sprintf("one of the %d permits of %q", limit, name)
}

// reportNotAcquired says why run did not get what it waited for (held
// elsewhere; for a semaphore every permit held, or another limit in use)
// and returns the exit code: --conflict-exit-code for both.
func reportNotAcquired(o *runOptions, name string, err error, stderr io.Writer) int {
	switch {
	case errors.Is(err, redlock.ErrLimitMismatch):
		fmt.Fprintf(stderr, "redlock: semaphore %q is in use with another limit than -n %d: every run of it must give the same -n; nothing was run (%s)\n",
			name, o.limit, trimPrefix(err))
	case o.limit > 1:
		fmt.Fprintf(stderr, "redlock: no permit of %q acquired within --wait %v: all %d held by others (%s); nothing was run\n", name, o.wait.String(), o.limit, trimPrefix(err))
	default:
		fmt.Fprintf(stderr, "redlock: lock %q not acquired within --wait %v: held by another owner (%s); nothing was run\n", name, o.wait.String(), trimPrefix(err))
	}
	return o.conflictExit
}
