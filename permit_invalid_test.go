package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// countingNode is a fake node that counts every script sent to it, of any
// kind (the fake node counts only the lock's own scripts).
type countingNode struct {
	*fakeNode
	n atomic.Int32
}

func (c *countingNode) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.n.Add(1)
	return c.fakeNode.EvalSha(ctx, sha, keys, args...)
}

func (c *countingNode) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.n.Add(1)
	return c.fakeNode.Eval(ctx, script, keys, args...)
}

func (c *countingNode) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, script, keys, args...)
}

func (c *countingNode) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.EvalSha(ctx, sha, keys, args...)
}

// TestSemaphoreInvalidArguments: every refusal of an argument by the
// semaphore's calls matches ErrInvalid, a nil context included, and sends
// nothing; a Client that New did not make is refused with ErrNotNew. A nil
// context made AcquirePermit, TryAcquirePermit and InspectPermits panic,
// and the limit and option refusals matched no exported error.
func TestSemaphoreInvalidArguments(t *testing.T) {
	synctest.Test(t, testSemaphoreInvalidArguments)
}

func testSemaphoreInvalidArguments(t *testing.T) {
	fake := &countingNode{fakeNode: newFakeNode()}
	c, err := newClient([]node{{addr: "fake0", client: fake}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		settle()
	}()
	var nilCtx context.Context
	ctx := context.Background()
	acquire := func(ctx context.Context, name string, limit int, ttl time.Duration, o *AcquireOptions) func() error {
		return func() error { _, err := c.AcquirePermit(ctx, name, limit, ttl, o); return err }
	}
	try := func(ctx context.Context, name string, limit int, ttl time.Duration, o *AcquireOptions) func() error {
		return func() error { _, err := c.TryAcquirePermit(ctx, name, limit, ttl, o); return err }
	}
	inspect := func(ctx context.Context, name string, limit int) func() error {
		return func() error { _, err := c.InspectPermits(ctx, name, limit); return err }
	}
	type call struct {
		name string
		call func() error
	}
	cases := []call{
		{"AcquirePermit nil ctx", acquire(nilCtx, "s", 2, time.Second, nil)},
		{"TryAcquirePermit nil ctx", try(nilCtx, "s", 2, time.Second, nil)},
		{"InspectPermits nil ctx", inspect(nilCtx, "s", 2)},
		{"Reentrant", acquire(ctx, "s", 2, time.Second, &AcquireOptions{Reentrant: true})},
		{"Barging", acquire(ctx, "s", 2, time.Second, &AcquireOptions{Barging: true})},
		{"TryAcquirePermit Reentrant", try(ctx, "s", 2, time.Second, &AcquireOptions{Reentrant: true})},
		{"TryAcquirePermit retrying", try(ctx, "s", 2, time.Second, &AcquireOptions{Retry: DefaultRetry()})},
		{"empty name", acquire(ctx, "", 2, time.Second, nil)},
		{"braces", try(ctx, "a{b}", 2, time.Second, nil)},
		{"InspectPermits braces", inspect(ctx, "a{b}", 2)},
		{"long name", acquire(ctx, string(make([]byte, MaxNameLen+1)), 2, time.Second, nil)},
		{"short TTL", acquire(ctx, "s", 2, time.Microsecond, nil)},
		{"TTL under drift", try(ctx, "s", 2, 2*time.Millisecond, nil)},
		{"bad metadata", acquire(ctx, "s", 2, time.Second, &AcquireOptions{Metadata: "\xff"})},
	}
	for _, limit := range []int{0, -1, MaxPermits + 1} {
		cases = append(cases,
			call{fmt.Sprintf("AcquirePermit limit %d", limit), acquire(ctx, "s", limit, time.Second, nil)},
			call{fmt.Sprintf("TryAcquirePermit limit %d", limit), try(ctx, "s", limit, time.Second, nil)},
			call{fmt.Sprintf("InspectPermits limit %d", limit), inspect(ctx, "s", limit)})
	}
	for _, tc := range cases {
		err := catch(tc.call)
		if n := fake.n.Load(); n != 0 {
			t.Errorf("%s: %d scripts sent; want none", tc.name, n)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v; want an error matching ErrInvalid", tc.name, err)
		}
	}

	// A Client New did not make: ErrNotNew, for any arguments.
	for _, z := range []*Client{nil, {}} {
		for _, f := range []func() error{
			func() error { _, err := z.AcquirePermit(ctx, "s", 2, time.Second, nil); return err },
			func() error { _, err := z.TryAcquirePermit(nilCtx, "s", 2, time.Second, nil); return err },
			func() error { _, err := z.InspectPermits(ctx, "s", 0); return err },
		} {
			if err := catch(f); !errors.Is(err, ErrNotNew) {
				t.Errorf("a permit call on Client %p = %v; want ErrNotNew", z, err)
			}
		}
	}
}

// catch runs f and returns its error, or the panic it raised as one.
func catch(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}
