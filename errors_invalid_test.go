package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestInvalidArguments: every refusal of an argument by the lock's calls
// matches ErrInvalid, a nil context included, and sends nothing (the
// Client here has a node that fails every call: a sent request would show
// as a node error, not ErrInvalid).
func TestInvalidArguments(t *testing.T) {
	synctest.Test(t, testInvalidArguments)
}

func testInvalidArguments(t *testing.T) {
	c, fakes := newFakeClient(t, 1, nil)
	var nilCtx context.Context
	ctx := context.Background()
	l := &Lock{c: c, ls: &lease{name: "x"}}
	cases := []struct {
		name string
		call func() error
	}{
		{"Acquire nil ctx", func() error { _, err := c.Acquire(nilCtx, "x", time.Second, nil); return err }},
		{"TryAcquire nil ctx", func() error { _, err := c.TryAcquire(nilCtx, "x", time.Second, nil); return err }},
		{"Do nil ctx", func() error {
			return c.Do(nilCtx, "x", time.Second, nil, func(context.Context, *Lock) error { return nil })
		}},
		{"Resume nil ctx", func() error { _, err := c.Resume(nilCtx, Handle{}, time.Second, nil); return err }},
		{"Inspect nil ctx", func() error { _, err := c.Inspect(nilCtx, "x"); return err }},
		{"ForceRelease nil ctx", func() error { _, err := c.ForceRelease(nilCtx, "x"); return err }},
		{"Extend nil ctx", func() error { return l.Extend(nilCtx, time.Second) }},
		{"Release nil ctx", func() error { return l.Release(nilCtx) }},
		{"Reenter nil ctx", func() error { _, err := l.Reenter(nilCtx, time.Second, nil); return err }},
		{"empty name", func() error { _, err := c.Acquire(ctx, "", time.Second, nil); return err }},
		{"long name", func() error {
			_, err := c.Acquire(ctx, string(make([]byte, MaxNameLen+1)), time.Second, nil)
			return err
		}},
		{"braces", func() error { _, err := c.Acquire(ctx, "a{b}", time.Second, nil); return err }},
		{"short TTL", func() error { _, err := c.Acquire(ctx, "x", time.Microsecond, nil); return err }},
		{"TTL under drift", func() error { _, err := c.Acquire(ctx, "x", 2*time.Millisecond, nil); return err }},
		{"long metadata", func() error {
			_, err := c.Acquire(ctx, "x", time.Second, &AcquireOptions{Metadata: string(make([]byte, MaxMetadataLen+1))})
			return err
		}},
		{"bad metadata", func() error {
			_, err := c.Acquire(ctx, "x", time.Second, &AcquireOptions{Metadata: "\xff"})
			return err
		}},
		{"TryAcquire retrying", func() error {
			_, err := c.TryAcquire(ctx, "x", time.Second, &AcquireOptions{Retry: DefaultRetry()})
			return err
		}},
		{"Do nil fn", func() error { return c.Do(ctx, "x", time.Second, nil, nil) }},
		{"zero handle", func() error { _, err := c.Resume(ctx, Handle{}, time.Second, nil); return err }},
		{"bad handle text", func() error { _, err := ParseHandle("rlh2.x"); return err }},
		{"Reenter plain", func() error { _, err := l.Reenter(ctx, time.Second, nil); return err }},
		{"no nodes", func() error { _, err := New(nil, nil); return err }},
		{"nil node", func() error { _, err := NewWithNodes([]Node{nil}, nil); return err }},
		{"drift factor", func() error { _, err := NewWithNodes([]Node{fakes[0]}, &Options{DriftFactor: 2}); return err }},
		{"node timeout", func() error { _, err := NewWithNodes([]Node{fakes[0]}, &Options{NodeTimeout: -1}); return err }},
		{"key prefix with braces", func() error { _, err := NewWithNodes([]Node{fakes[0]}, &Options{KeyPrefix: "app{x}:"}); return err }},
	}
	for _, tc := range cases {
		err := tc.call()
		if n := fakes[0].sent(); n != 0 {
			t.Errorf("%s: %d scripts sent; want none", tc.name, n)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v; want an error matching ErrInvalid", tc.name, err)
		}
	}
}
