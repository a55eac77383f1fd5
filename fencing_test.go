package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

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
