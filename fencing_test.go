package redlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of fences: the fast path, the write-back to a quorum, exact and
// corrupt counters, on fake nodes (synctest's fake clock) and on real Redis.

func TestFenceFastPathSkipsWriteBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 5, nil)
		// Three nodes agree on the counter; two lag behind.
		for i, v := range []string{"5", "5", "5", "2", "2"} {
			fakes[i].set(func(f *fakeNode) {
				f.kv["redlock:{fp}:fence"] = v
				f.delay = time.Duration(i) * time.Millisecond // answer in order
			})
		}
		l, err := c.Acquire(t.Context(), "fp", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		if l.Fence() != 6 {
			t.Errorf("Fence() = %d; want 6", l.Fence())
		}
		for i, f := range fakes {
			if n := f.count("fence"); n != 0 {
				t.Errorf("node %d got %d write-backs; want none on the fast path", i, n)
			}
		}
		l.Release(t.Context())
	})
}

func TestFenceWriteBackMakesLaterFencesLarger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 5, nil)
		// Node 0 is far ahead. Nodes 0,1,2 answer first, so the quorum
		// returns {10, 2, 2}: F = 10 is held by one node only.
		for i, v := range []string{"9", "1", "1", "1", "1"} {
			fakes[i].set(func(f *fakeNode) {
				f.kv["redlock:{wb}:fence"] = v
				f.delay = time.Duration(i) * time.Millisecond
			})
		}
		l, err := c.Acquire(t.Context(), "wb", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		if l.Fence() != 10 {
			t.Fatalf("Fence() = %d; want 10", l.Fence())
		}
		time.Sleep(10 * time.Millisecond) // let the write-back reach the slower nodes
		for i, f := range fakes {
			if n := f.count("fence"); n != 1 {
				t.Errorf("node %d got %d write-backs; want 1 (sent to every node)", i, n)
			}
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
		// Now the quorum that saw F = 10 fails: nodes 0 and 1 go down.
		// The next quorum is nodes 2, 3, 4; without the write-back their
		// counters would give fence 3 or 4.
		for _, f := range fakes[:2] {
			f.set(func(f *fakeNode) { f.err = errors.New("down") })
		}
		l2, err := c.Acquire(t.Context(), "wb", time.Second, nil)
		if err != nil {
			t.Fatalf("second Acquire = %v", err)
		}
		if l2.Fence() <= l.Fence() {
			t.Errorf("second fence = %d; want > %d", l2.Fence(), l.Fence())
		}
		l2.Release(t.Context())
	})
}

func TestWriteBackWithoutQuorumFailsAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// All three nodes grant with fences {10, 1, 1}, so the write-back
		// is needed, and nodes 1 and 2 fail it.
		fakes := []*fakeNode{newFakeNode(), newFakeNode(), newFakeNode()}
		fakes[0].set(func(f *fakeNode) { f.kv["redlock:{nq}:fence"] = "9" })
		nodes := make([]node, len(fakes))
		for i, f := range fakes {
			f.set(func(f *fakeNode) { f.delay = time.Duration(i) * time.Millisecond }) // node 0 first
			nodes[i] = node{addr: "fake", client: f}
			if i > 0 {
				nodes[i].client = &failScript{fakeNode: f, fail: fenceScript.Hash()}
			}
		}
		c, err := newClient(nodes, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { c.Close(); settle() }()
		_, err = c.Acquire(t.Context(), "nq", time.Second, &AcquireOptions{Retry: NoRetry()})
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Op != "fence write-back" || !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want a fence write-back QuorumError matching ErrNotAcquired", err)
		}
		time.Sleep(time.Second) // node 2's grant may arrive after the decision
		synctest.Wait()
		for i, f := range fakes {
			if v, ok := f.get("redlock:{nq}"); ok {
				t.Errorf("node %d holds %q; want the failed acquisition released", i, v)
			}
		}
	})
}

// failScript fails one script on a fake node.
type failScript struct {
	*fakeNode
	fail string
}

func (f *failScript) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == f.fail {
		return redis.NewCmdResult(nil, errors.New("ERR injected failure"))
	}
	return f.fakeNode.EvalSha(ctx, sha, keys, args...)
}

func TestWriteBackPastValidityFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: time.Second})
		// Counters diverge, so the write-back runs; each round takes 60ms,
		// and the second one cannot end within the 37ms validity left.
		fakes[0].set(func(f *fakeNode) { f.kv["redlock:{slow}:fence"] = "7" })
		for i, f := range fakes { // node 0 answers first, so F = 8 is a minority
			f.set(func(f *fakeNode) { f.delay = time.Duration(60+i) * time.Millisecond })
		}
		_, err := c.Acquire(t.Context(), "slow", 100*time.Millisecond, &AcquireOptions{Retry: NoRetry()})
		var qe *QuorumError
		if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) || qe.Op != "fence write-back" {
			t.Fatalf("Acquire = %v; want a fence write-back *QuorumError matching ErrNotAcquired", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, f := range fakes {
			if v, ok := f.get("redlock:{slow}"); ok {
				t.Errorf("node %d still holds %q after a failed attempt; want it released", i, v)
			}
		}
	})
}

func TestExtendKeepsFence(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(t, n), nil)
		name := fmt.Sprintf("extend-%d", n)
		key, fenceKey := c.Keys(name)
		l, err := c.Acquire(t.Context(), name, time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		fence := l.Fence()
		if err := l.Extend(t.Context(), time.Minute); err != nil {
			t.Fatalf("Extend = %v", err)
		}
		if l.Fence() != fence {
			t.Errorf("Fence() = %d after Extend; want %d", l.Fence(), fence)
		}
		if left := time.Until(l.ValidUntil()); left < 50*time.Second {
			t.Errorf("ValidUntil in %v; want about a minute after extending by one", left)
		}
		// Acquire and Extend return at quorum: a slow node's grant may still
		// be on its way, so the promise is about a quorum of nodes.
		extended := 0
		for i, nd := range nodes(t, n) {
			if ttl := nd.PTTL(t.Context(), key).Val(); ttl > 50*time.Second {
				extended++
			}
			if got, _ := nd.Get(t.Context(), fenceKey).Uint64(); got > fence {
				t.Errorf("node %d: fence counter = %d; want <= %d (extend does not count)", i, got, fence)
			}
		}
		if extended < c.Quorum() {
			t.Errorf("%d nodes have the key extended to about a minute; want a quorum of %d", extended, c.Quorum())
		}
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release = %v", err)
		}
		assertNoLockKey(t, nodes(t, n), key)
	})
}

func TestFencesIncreaseAfterCountersDiverge(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(t, n), nil)
		name := fmt.Sprintf("diverge-%d", n)
		key, fenceKey := c.Keys(name)
		// Counters far apart, so the first acquisitions need the write-back.
		for i, nd := range nodes(t, n) {
			if err := nd.Set(t.Context(), fenceKey, (i*7919)%10007, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var last uint64
		for i := 0; i < 1000; i++ {
			l, err := c.Acquire(t.Context(), name, time.Second, nil)
			if err != nil {
				t.Fatalf("Acquire #%d = %v", i, err)
			}
			if l.Fence() <= last {
				t.Fatalf("Acquire #%d fence = %d after %d; want strictly increasing", i, l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Release(t.Context()); err != nil {
				t.Fatalf("Release #%d = %v", i, err)
			}
		}
		// The write-back left a quorum of counters at the last fence.
		atLast := 0
		for _, nd := range nodes(t, n) {
			if v, _ := nd.Get(t.Context(), fenceKey).Uint64(); v >= last {
				atLast++
			}
		}
		if atLast < c.Quorum() {
			t.Errorf("%d counters at >= %d; want a quorum of %d", atLast, last, c.Quorum())
		}
		assertNoLockKey(t, nodes(t, n), key)
	})
}

// Counters past 2^53 stay exact: the acquire script returns the counter as
// a string, not through a Lua number.
func TestFencesExactPast2to53(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	name := "exact-2-53"
	_, fenceKey := c.Keys(name)
	const seed = 1<<53 + 1
	for _, nd := range nodes(t, 3) {
		if err := nd.Set(t.Context(), fenceKey, uint64(seed), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(1); i <= 4; i++ {
		l, err := c.Acquire(t.Context(), name, time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire #%d = %v", i, err)
		}
		if got := l.Fence(); got != seed+i {
			t.Errorf("Acquire #%d fence = %d; want %d exactly", i, got, uint64(seed+i))
		}
		l.Release(t.Context())
	}
}

// A corrupt counter fails the acquire at once, with a typed error, leaving
// both keys as they were: no retry loop, no stray lock key.
func TestBadCounterFailsCleanly(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	for _, bad := range []string{"abc", "-5", "007", "1.5", "9223372036854775807", "99999999999999999999"} {
		name := "bad-counter"
		key, fenceKey := c.Keys(name)
		for _, nd := range nodes(t, 3) {
			if err := nd.Set(t.Context(), fenceKey, bad, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		start := time.Now()
		_, err := c.Acquire(ctx, name, time.Second, nil) // retries until ctx ends, unless the error is permanent
		cancel()
		if !errors.Is(err, ErrBadCounter) || !errors.Is(err, ErrNotAcquired) {
			t.Errorf("counter %q: Acquire = %v; want ErrBadCounter", bad, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("counter %q: Acquire took %v; want it to give up at once", bad, d)
		}
		assertNoLockKey(t, nodes(t, 3), key)
		for i, nd := range nodes(t, 3) {
			if got, _ := nd.Get(t.Context(), fenceKey).Result(); got != bad {
				t.Errorf("counter %q: node %d counter = %q; want it untouched", bad, i, got)
			}
			nd.Del(t.Context(), fenceKey)
		}
	}
}
