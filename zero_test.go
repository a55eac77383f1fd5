package redlock

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestZeroClient: a Client not made by New (a zero value, or a nil
// *Client) returns ErrNotNew from every exported method that can fail, and
// no method panics. The table must name every exported method, so a new
// one cannot be added without deciding what it does on a zero Client.
func TestZeroClient(t *testing.T) {
	ctx := t.Context()
	var h Handle // Resume checks the Client first
	errOf := map[string]func(c *Client) error{
		"Acquire": func(c *Client) error { _, err := c.Acquire(ctx, "job", time.Second, nil); return err },
		"TryAcquire": func(c *Client) error {
			_, err := c.TryAcquire(ctx, "job", time.Second, nil)
			return err
		},
		"Do": func(c *Client) error {
			return c.Do(ctx, "job", time.Second, nil, func(context.Context, *Lock) error { return errors.New("fn ran") })
		},
		"Resume":       func(c *Client) error { _, err := c.Resume(ctx, h, time.Second, nil); return err },
		"Inspect":      func(c *Client) error { _, err := c.Inspect(ctx, "job"); return err },
		"ForceRelease": func(c *Client) error { _, err := c.ForceRelease(ctx, "job"); return err },
		"Close":        func(c *Client) error { return c.Close() },
		"AcquirePermit": func(c *Client) error {
			_, err := c.AcquirePermit(ctx, "job", 2, time.Second, nil)
			return err
		},
		"TryAcquirePermit": func(c *Client) error {
			_, err := c.TryAcquirePermit(ctx, "job", 2, time.Second, nil)
			return err
		},
		"InspectPermits": func(c *Client) error { _, err := c.InspectPermits(ctx, "job", 2); return err },
		"Campaign": func(c *Client) error {
			_, err := c.Campaign(ctx, "job", time.Second, "me")
			return err
		},
		"TryCampaign": func(c *Client) error {
			_, err := c.TryCampaign(ctx, "job", time.Second, "me")
			return err
		},
		"AcquireMulti": func(c *Client) error {
			_, err := c.AcquireMulti(ctx, []string{"job", "job2"}, time.Second, nil)
			return err
		},
		"TryAcquireMulti": func(c *Client) error {
			_, err := c.TryAcquireMulti(ctx, []string{"job", "job2"}, time.Second, nil)
			return err
		},
		"AcquireShared": func(c *Client) error {
			_, err := c.AcquireShared(ctx, "job", time.Second, nil)
			return err
		},
		"TryAcquireShared": func(c *Client) error {
			_, err := c.TryAcquireShared(ctx, "job", time.Second, nil)
			return err
		},
		"Leader":  func(c *Client) error { _, err := c.Leader(ctx, "job"); return err },
		"Observe": func(c *Client) error { _, err := c.Observe(ctx, "job", nil); return err },
	}
	// Methods without an error: a value that says "nothing" instead.
	noErr := map[string]func(t *testing.T, c *Client){
		"Quorum": func(t *testing.T, c *Client) {
			if q := c.Quorum(); q != 0 {
				t.Errorf("Quorum() = %d; want 0", q)
			}
		},
		"Keys": func(t *testing.T, c *Client) {
			if l, f := c.Keys("job"); l != "" || f != "" {
				t.Errorf("Keys() = %q, %q; want empty", l, f)
			}
		},
	}

	var listed []string
	for name := range errOf {
		listed = append(listed, name)
	}
	for name := range noErr {
		listed = append(listed, name)
	}
	var exported []string
	typ := reflect.TypeFor[*Client]()
	for i := range typ.NumMethod() {
		exported = append(exported, typ.Method(i).Name)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, exported) {
		t.Errorf("methods in the table %v; Client's exported methods %v: add the new ones", listed, exported)
	}

	for _, zero := range []struct {
		what string
		c    func() *Client
	}{{"zero value", func() *Client { return &Client{} }}, {"nil pointer", func() *Client { return nil }}} {
		t.Run(zero.what, func(t *testing.T) {
			for name, call := range errOf {
				t.Run(name, func(t *testing.T) {
					if err := call(zero.c()); !errors.Is(err, ErrNotNew) {
						t.Errorf("%s on a Client not made by New = %v; want ErrNotNew", name, err)
					}
				})
			}
			for name, check := range noErr {
				t.Run(name, func(t *testing.T) { check(t, zero.c()) })
			}
		})
	}
	if want := "redlock: Client was not made by New: use redlock.New"; ErrNotNew.Error() != want {
		t.Errorf("ErrNotNew = %q; want %q", ErrNotNew, want)
	}
}
