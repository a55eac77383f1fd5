package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of the re-entrant form against real Redis (docs/design.md,
// "Re-entry and resume").

// reentrant acquires name in the re-entrant form, released when the test
// ends if the test has not.
func reentrant(t *testing.T, c *Client, name string, ttl time.Duration, meta string) *Lock {
	t.Helper()
	l, err := c.Acquire(t.Context(), name, ttl, &AcquireOptions{Reentrant: true, Metadata: meta})
	if err != nil {
		t.Fatalf("Acquire(%q, Reentrant) = %v; want the lock", name, err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	return l
}

// holdsOn returns the number of holds each node keeps the key for (-1:
// no key there).
func holdsOn(t *testing.T, c *Client, name string) []int {
	t.Helper()
	st, err := c.Inspect(t.Context(), name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	out := make([]int, len(st.Nodes))
	for i, ns := range st.Nodes {
		out[i] = -1
		if ns.Err != nil {
			t.Fatalf("Inspect(%q): node %d: %v", name, i, ns.Err)
		}
		if ns.Held {
			out[i] = ns.Holds
		}
	}
	return out
}

// wantHolds checks that every node keeps name for want holds, once the
// calls in flight have landed (a round returns at its quorum).
func wantHolds(t *testing.T, c *Client, name string, want int) {
	t.Helper()
	got := holdsOn(t, c, name)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); got = holdsOn(t, c, name) {
		same := true
		for _, n := range got {
			same = same && n == want
		}
		if same {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i, got := range got {
		if got != want {
			t.Errorf("node %d keeps %q for %d holds; want %d", i, name, got, want)
		}
	}
}

func TestReentrantNestedAcquireReleaseCounts(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(t, n), nil)
		name := "reentrant-counts"
		key, _ := c.Keys(name)
		outer := reentrant(t, c, name, 10*time.Second, "")
		wantHolds(t, c, name, 1)
		inner1, err := outer.Reenter(t.Context(), 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Reenter = %v", err)
		}
		inner2, err := inner1.Reenter(t.Context(), 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Reenter of a nested lock = %v", err)
		}
		wantHolds(t, c, name, 3)
		for _, l := range []*Lock{inner1, inner2} {
			if l.Fence() != outer.Fence() || l.Token() != outer.Token() || l.Name() != name {
				t.Errorf("nested lock: fence %d token %q name %q; want the outer's %d %q %q",
					l.Fence(), l.Token(), l.Name(), outer.Fence(), outer.Token(), name)
			}
		}
		if err := inner2.Release(t.Context()); err != nil {
			t.Fatalf("Release(inner2) = %v", err)
		}
		wantHolds(t, c, name, 2)
		// The outer hold goes first: the lock stays held for inner1.
		if err := outer.Release(t.Context()); err != nil {
			t.Fatalf("Release(outer) = %v", err)
		}
		wantHolds(t, c, name, 1)
		if _, err := c.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry(), Reentrant: true}); !errors.Is(err, ErrHeld) {
			t.Errorf("Acquire by another owner while a nested hold is left = %v; want ErrHeld", err)
		}
		if err := inner1.Extend(t.Context(), 10*time.Second); err != nil {
			t.Errorf("Extend of the last hold = %v", err)
		}
		if err := inner1.Release(t.Context()); err != nil {
			t.Fatalf("Release(inner1) = %v", err)
		}
		assertNoLockKey(t, nodes(t, n), key)
		if _, err := outer.Reenter(t.Context(), time.Second, nil); !errors.Is(err, ErrNotAcquired) {
			t.Errorf("Reenter of a released lock = %v; want ErrNotAcquired", err)
		}
	})
}

func TestReentrantTTLNeverShortened(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "reentrant-ttl"
	key, _ := c.Keys(name)
	outer := reentrant(t, c, name, 20*time.Second, "")
	pttls := func() []time.Duration {
		var out []time.Duration
		for _, nd := range nodes(t, 3) {
			out = append(out, nd.PTTL(t.Context(), key).Val())
		}
		return out
	}
	inner, err := outer.Reenter(t.Context(), time.Second, nil)
	if err != nil {
		t.Fatalf("Reenter = %v", err)
	}
	if err := inner.Extend(t.Context(), 500*time.Millisecond); err != nil {
		t.Fatalf("Extend(500ms) = %v", err)
	}
	for i, d := range pttls() {
		if d < 15*time.Second {
			t.Errorf("node %d: PTTL %v after a nested acquire of 1s and an extend of 500ms; want the outer 20s kept", i, d)
		}
	}
	// The nested lock's own deadline follows its own TTL, not the key's.
	if left := time.Until(inner.ValidUntil()); left > 500*time.Millisecond {
		t.Errorf("nested lock valid for %v more; want at most its own 500ms", left)
	}
	// A longer TTL raises the key's.
	longer, err := outer.Reenter(t.Context(), 40*time.Second, nil)
	if err != nil {
		t.Fatalf("Reenter(40s) = %v", err)
	}
	wantHolds(t, c, name, 3) // the last node's answer has landed
	if err := outer.Extend(t.Context(), time.Second); err != nil {
		t.Fatalf("Extend(1s) = %v", err)
	}
	for i, d := range pttls() {
		if d < 35*time.Second {
			t.Errorf("node %d: PTTL %v after a nested acquire of 40s; want 40s kept", i, d)
		}
	}
	for _, l := range []*Lock{inner, longer, outer} {
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	assertNoLockKey(t, nodes(t, 3), key)
}

func TestReentrantCrashedHolderFreesAfterTTL(t *testing.T) {
	name := "reentrant-crash"
	crashed := newTestClient(t, nodes(t, 3), nil)
	outer := reentrant(t, crashed, name, 700*time.Millisecond, "job 7")
	if _, err := outer.Reenter(t.Context(), 700*time.Millisecond, nil); err != nil {
		t.Fatalf("Reenter = %v", err)
	}
	crashed.Close() // no release: the holder is gone

	c := newTestClient(t, nodes(t, 3), nil)
	if _, err := c.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire while the crashed holder's TTL runs = %v; want ErrHeld", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire after the crashed holder's TTL = %v; want the lock", err)
	}
	if l.Fence() <= outer.Fence() {
		t.Errorf("fence %d after the crashed holder's %d; want larger", l.Fence(), outer.Fence())
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	key, _ := c.Keys(name)
	assertNoLockKey(t, nodes(t, 3), key)
}

func TestReentrantAndPlainExclude(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "reentrant-vs-plain"
	key, _ := c.Keys(name)
	try := &AcquireOptions{Retry: NoRetry()}
	tryReentrant := &AcquireOptions{Retry: NoRetry(), Reentrant: true}
	for _, tc := range []struct {
		holder, other *AcquireOptions
		what          string
	}{
		{try, tryReentrant, "re-entrant Acquire of a plain lock"},
		{tryReentrant, try, "plain Acquire of a re-entrant lock"},
	} {
		l, err := c.Acquire(t.Context(), name, 10*time.Second, tc.holder)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Acquire(t.Context(), name, time.Second, tc.other)
		if !errors.Is(err, ErrHeld) || strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("%s = %v; want ErrHeld, no WRONGTYPE", tc.what, err)
		}
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Held < 2 {
			t.Errorf("%s: %v; want at least 2 of 3 nodes to say held", tc.what, err)
		}
		if err := l.Extend(t.Context(), 10*time.Second); err != nil {
			t.Errorf("holder's Extend after the other form's attempt = %v", err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		assertNoLockKey(t, nodes(t, 3), key)
	}
}

func TestReentrantMetadataAndBadInput(t *testing.T) {
	c := newTestClient(t, nodes(t, 1), nil)
	_, err := c.Acquire(t.Context(), "meta-too-long", time.Second, &AcquireOptions{Metadata: strings.Repeat("x", MaxMetadataLen+1)})
	if err == nil || !strings.HasPrefix(err.Error(), "redlock: Metadata of 257 bytes") {
		t.Errorf("Acquire with long Metadata = %v; want a redlock: error naming its size", err)
	}
	if _, err := c.Acquire(t.Context(), "meta-bad", time.Second, &AcquireOptions{Metadata: "\xff"}); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("Acquire with non-UTF-8 Metadata = %v; want an error", err)
	}
	for _, name := range []string{"meta-too-long", "meta-bad"} {
		key, _ := c.Keys(name)
		assertNoLockKey(t, nodes(t, 1), key)
	}
	plain, err := c.Acquire(t.Context(), "reenter-plain", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Release(context.Background())
	if _, err := plain.Reenter(t.Context(), time.Second, nil); err == nil || !strings.Contains(err.Error(), "AcquireOptions.Reentrant") {
		t.Errorf("Reenter of a plain lock = %v; want an error saying to use AcquireOptions.Reentrant", err)
	}
}

// deleteOn deletes key on the given nodes.
func deleteOn(t *testing.T, ns []redis.UniversalClient, key string, which ...int) {
	t.Helper()
	for _, i := range which {
		if err := ns[i].Del(t.Context(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReentrantWaiterWokenByLastHold: a waiter queued behind a re-entrant
// lock stays queued while any hold is left, and is woken when the last one
// goes (the hold release script announces the release as release.lua does).
func TestReentrantWaiterWokenByLastHold(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "reentrant-waiter"
	key, _ := c.Keys(name)
	outer := reentrant(t, c, name, time.Minute, "")
	inner, err := outer.Reenter(t.Context(), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiter := newTestClient(t, nodes(t, 3), nil)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		l, err := waiter.Acquire(ctx, name, time.Second, &AcquireOptions{Reentrant: true})
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	if err := outer.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantHolds(t, c, name, 1)
	select {
	case err := <-got:
		t.Fatalf("waiter returned %v while a nested hold was left; want it to wait", err)
	default:
	}
	if err := inner.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter after the last hold was released = %v; want the lock (the holds had a minute left)", err)
	}
	assertNoLockKey(t, nodes(t, 3), key)
}
