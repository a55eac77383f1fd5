package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestElectionInvalidArguments (issue 28, item 5): every refusal of an
// argument by the election's calls matches an exported error, a nil
// context included (ErrInvalid; ErrNotNew on a zero Client; ErrClosed
// after Close), and sends nothing (a sent request would show on the fake
// node).
func TestElectionInvalidArguments(t *testing.T) {
	synctest.Test(t, testElectionInvalidArguments)
}

func testElectionInvalidArguments(t *testing.T) {
	c, fakes := newFakeClient(t, 1, nil)
	var nilCtx context.Context
	ctx := context.Background()
	ld := &Leadership{l: &Lock{c: c, ls: &lease{name: "e"}}, value: "v"}
	campaign := func(ctx context.Context, name string, ttl time.Duration, value string) func(*Client) error {
		return func(c *Client) error { _, err := c.Campaign(ctx, name, ttl, value); return err }
	}
	leader := func(ctx context.Context, name string) func(*Client) error {
		return func(c *Client) error { _, err := c.Leader(ctx, name); return err }
	}
	observe := func(ctx context.Context, name string, o *ObserveOptions) func(*Client) error {
		return func(c *Client) error { _, err := c.Observe(ctx, name, o); return err }
	}
	cases := []struct {
		name string
		call func(*Client) error
		want error
	}{
		{"Campaign nil ctx", campaign(nilCtx, "e", time.Second, "v"), ErrInvalid},
		{"Leader nil ctx", leader(nilCtx, "e"), ErrInvalid},
		{"Observe nil ctx", observe(nilCtx, "e", nil), ErrInvalid},
		{"Resign nil ctx", func(*Client) error { return ld.Resign(nilCtx) }, ErrInvalid},
		{"Campaign empty value", campaign(ctx, "e", time.Second, ""), ErrInvalid},
		{"Campaign value with a newline", campaign(ctx, "e", time.Second, "a\nb"), ErrInvalid},
		{"Campaign value with DEL", campaign(ctx, "e", time.Second, "a\x7fb"), ErrInvalid},
		{"Campaign value with a C1 control", campaign(ctx, "e", time.Second, "a\u0085b"), ErrInvalid},
		{"Campaign long value", campaign(ctx, "e", time.Second, strings.Repeat("x", MaxMetadataLen+1)), ErrInvalid},
		{"Campaign value not UTF-8", campaign(ctx, "e", time.Second, "\xff"), ErrInvalid},
		{"Campaign empty name", campaign(ctx, "", time.Second, "v"), ErrInvalid},
		{"Campaign braces", campaign(ctx, "{e}", time.Second, "v"), ErrInvalid},
		{"Campaign short TTL", campaign(ctx, "e", time.Microsecond, "v"), ErrInvalid},
		{"Campaign TTL under drift", campaign(ctx, "e", 2*time.Millisecond, "v"), ErrInvalid},
		{"Leader empty name", leader(ctx, ""), ErrInvalid},
		{"Leader long name", leader(ctx, strings.Repeat("x", MaxNameLen+1)), ErrInvalid},
		{"Leader braces", leader(ctx, "a}"), ErrInvalid},
		{"Observe empty name", observe(ctx, "", nil), ErrInvalid},
		{"Observe braces", observe(ctx, "{e", nil), ErrInvalid},
		{"Observe negative interval", observe(ctx, "e", &ObserveOptions{Interval: -time.Second}), ErrInvalid},
		{"Campaign zero Client", func(*Client) error { return campaign(ctx, "e", time.Second, "v")(&Client{}) }, ErrNotNew},
		{"Leader zero Client", func(*Client) error { return leader(ctx, "e")(&Client{}) }, ErrNotNew},
		{"Observe zero Client", func(*Client) error { return observe(ctx, "e", nil)(&Client{}) }, ErrNotNew},
		{"Observe nil Client", func(*Client) error { return observe(ctx, "e", nil)(nil) }, ErrNotNew},
	}
	for _, tc := range cases {
		err := tc.call(c)
		if n := fakes[0].sent(); n != 0 {
			t.Errorf("%s: %d scripts sent; want none", tc.name, n)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v; want an error matching %v", tc.name, err, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("%s: err = %q; want it to start with \"redlock: \"", tc.name, err)
		}
	}
	c.Close()
	for _, call := range []func(*Client) error{campaign(ctx, "e", time.Second, "v"), observe(ctx, "e", nil)} {
		if err := call(c); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: err = %v; want an error matching ErrClosed", err)
		}
	}
}
