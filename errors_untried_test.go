package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of the errors of an Acquire call that asked no node: each says what
// ended it, and when.

// TestAcquireCancelledBeforeAnyAttempt: a context that had ended before the
// call gives an error saying so (not a wait for an earlier call that never
// was, nor "0 of 3 nodes agreed" from nodes never asked), and no node is
// sent anything.
func TestAcquireCancelledBeforeAnyAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		canceled, cancel := context.WithCancel(t.Context())
		cancel()
		expired, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		for _, tc := range []struct {
			name string
			ctx  context.Context
			try  bool
			want error
		}{
			{"Acquire", canceled, false, context.Canceled},
			{"TryAcquire", canceled, true, context.Canceled},
			{"Acquire past its deadline", expired, false, context.DeadlineExceeded},
		} {
			var err error
			if tc.try {
				_, err = c.TryAcquire(tc.ctx, "untried", time.Minute, nil)
			} else {
				_, err = c.Acquire(tc.ctx, "untried", time.Minute, nil)
			}
			want := `redlock: acquire "untried": no attempt made: ` + tc.want.Error() + " before the first attempt"
			if err == nil || err.Error() != want || !errors.Is(err, ErrNotAcquired) || !errors.Is(err, tc.want) {
				t.Errorf("%s with an ended context = %v; want %q, matching ErrNotAcquired and %v", tc.name, err, want, tc.want)
			}
		}
		for i, f := range fakes {
			if n := f.sent(); n != 0 {
				t.Errorf("node %d was sent %d requests; want none", i, n)
			}
		}
	})
}

// TestAcquireTurnWaitSaysSo: a call that waited for its turn behind this
// Client's call of the same name says so, and what ended the wait: its
// context, or Close.
func TestAcquireTurnWaitSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		if _, err := c.Acquire(t.Context(), "turn", time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		const behind = " while the call waited for its turn behind an earlier Acquire of the same name by this Client"
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := c.Acquire(ctx, "turn", time.Minute, nil)
		want := `redlock: acquire "turn": no attempt made: context deadline exceeded` + behind
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("Acquire behind a held lock of this Client = %v; want %q..., matching ErrNotAcquired and DeadlineExceeded", err, want)
		}

		time.AfterFunc(time.Second, func() { c.Close() })
		_, err = c.Acquire(t.Context(), "turn", time.Minute, nil)
		want = `redlock: acquire "turn": no attempt made: the Client was closed` + behind
		if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("Acquire ended by Close = %v; want %q..., matching ErrNotAcquired and ErrClosed", err, want)
		}
	})
}
