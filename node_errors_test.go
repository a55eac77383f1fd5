package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A node a round did not wait for is reported as not awaited, never as
// timed out: the round was decided without it, or the caller's context
// ended. Only a node that was waited for until the per-node timeout is a
// timeout, and that matches ErrNodeTimeout.
func TestNodeErrorsSayWhetherTheNodeWasAwaited(t *testing.T) {
	cases := []struct {
		what string
		// run makes the call under test with nodes 0..2 of c; it returns
		// the call's error, whose node errors are checked.
		run       func(t *testing.T, c *Client, fakes []*fakeNode, hang chan struct{}) error
		node      int   // the node whose error is checked
		want      error // ErrNotAwaited or ErrNodeTimeout
		wantText  string
		wantAfter time.Duration // how long the call took
	}{{
		what: "try-lock decided by two refusals",
		run: func(t *testing.T, c *Client, fakes []*fakeNode, hang chan struct{}) error {
			key, _ := c.Keys("n")
			for _, f := range fakes[:2] {
				f.set(func(f *fakeNode) { f.kv[key], f.expiry[key] = "other.1", time.Now().Add(time.Minute) })
			}
			fakes[2].set(func(f *fakeNode) { f.hang = hang })
			_, err := c.Acquire(t.Context(), "n", time.Minute, &AcquireOptions{Retry: NoRetry()})
			return err
		},
		node: 2, want: ErrNotAwaited, wantText: "not awaited: the round was decided without it",
	}, {
		what: "Release with an ended context",
		run: func(t *testing.T, c *Client, fakes []*fakeNode, hang chan struct{}) error {
			l, err := c.Acquire(t.Context(), "n", time.Minute, &AcquireOptions{Retry: NoRetry()})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			for _, f := range fakes {
				f.set(func(f *fakeNode) { f.hang = hang })
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return l.Release(ctx)
		},
		node: 1, want: ErrNotAwaited, wantText: "not awaited: the call's context ended first",
	}, {
		what: "silent nodes waited for",
		run: func(t *testing.T, c *Client, fakes []*fakeNode, hang chan struct{}) error {
			for _, f := range fakes[1:] {
				f.set(func(f *fakeNode) { f.hang = hang })
			}
			_, err := c.Acquire(t.Context(), "n", time.Minute, &AcquireOptions{Retry: NoRetry()})
			return err
		},
		node: 1, want: ErrNodeTimeout, wantText: "no answer within 50ms", wantAfter: 50 * time.Millisecond,
	}}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 50 * time.Millisecond})
				hang := make(chan struct{})
				defer close(hang)
				start := time.Now()
				err := tc.run(t, c, fakes, hang)
				if took := time.Since(start); took != tc.wantAfter {
					t.Errorf("the call took %v; want %v", took, tc.wantAfter)
				}
				var ne *NodeError
				for _, e := range errorsOf(err) {
					if errors.As(e, &ne) && ne.Node == tc.node {
						break
					}
					ne = nil
				}
				if ne == nil {
					t.Fatalf("error = %v; want one naming node %d", err, tc.node)
				}
				other := ErrNodeTimeout
				if tc.want == ErrNodeTimeout {
					other = ErrNotAwaited
				}
				if !errors.Is(ne, tc.want) || errors.Is(ne, other) || !strings.Contains(ne.Error(), tc.wantText) {
					t.Errorf("node %d: %v; want %q, matching %v and not %v", tc.node, ne, tc.wantText, tc.want, other)
				}
				if !errors.Is(err, tc.want) {
					t.Errorf("error = %v; want it to match %v", err, tc.want)
				}
			})
		})
	}
}

// errorsOf returns err's node errors: a QuorumError's Nodes, or the errors
// joined in it.
func errorsOf(err error) []error {
	var qe *QuorumError
	if errors.As(err, &qe) {
		return qe.Nodes
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
