package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of late answers and cleanups: a grant that arrives after its attempt
// was decided is released, and a cleanup that lands late matches only its
// own attempt.

func TestLateGrantIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 5, &Options{NodeTimeout: 20 * time.Millisecond})
		// Nodes 0 and 1 grant at once, node 2 only after 200ms, nodes 3
		// and 4 are held by someone else: the attempt fails with 2 of 5.
		fakes[2].set(func(f *fakeNode) { f.delay = 200 * time.Millisecond })
		for _, f := range fakes[3:] {
			f.set(func(f *fakeNode) { f.kv["redlock:{late}"] = "someone-else" })
		}
		_, err := c.Acquire(t.Context(), "late", time.Second, &AcquireOptions{Retry: NoRetry()})
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, f := range fakes[:3] {
			if v, ok := f.get("redlock:{late}"); ok {
				t.Errorf("node %d still holds %q; want the late grant released", i, v)
			}
		}
		if n := fakes[2].count("cleanup"); n != 1 {
			t.Errorf("node 2 got %d cleanups; want 1 (after its late grant)", n)
		}
		for i, f := range fakes[3:] {
			if v, _ := f.get("redlock:{late}"); v != "someone-else" {
				t.Errorf("node %d = %q; want the other owner's key untouched", i+3, v)
			}
		}
	})
}

func TestLateGrantAfterReleaseIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 20 * time.Millisecond})
		fakes[2].set(func(f *fakeNode) { f.delay = 300 * time.Millisecond })
		l, err := c.Acquire(t.Context(), "r", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		// Release reaches node 2 before the grant does: its delete finds
		// nothing, and the late grant must delete itself. Release returns
		// when nodes 0 and 1 have deleted: node 2 is not waited for.
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release = %v; want nil: a quorum deleted", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if v, ok := fakes[2].get("redlock:{r}"); ok {
			t.Errorf("node 2 holds %q after release; want the late grant released", v)
		}
	})
}

// A delayed cleanup of a failed attempt reaches a node after the next
// attempt of the same call has taken it. With one token for every attempt,
// it deleted the key the winning attempt counted on; with one value per
// attempt it matches nothing.
func TestDelayedCleanupSparesNextAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 20 * time.Millisecond})
		// Someone else holds nodes 1 and 2 for 50ms; node 0 is free, and
		// every cleanup takes 300ms to reach it.
		fakes[0].set(func(f *fakeNode) { f.slowCleanup = 300 * time.Millisecond })
		for _, f := range fakes[1:] {
			f.set(func(f *fakeNode) {
				f.kv["redlock:{dc}"] = "someone-else.1"
				f.expiry["redlock:{dc}"] = time.Now().Add(50 * time.Millisecond)
			})
		}
		l, err := c.Acquire(t.Context(), "dc", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		defer l.Release(context.Background())
		time.Sleep(time.Second) // every delayed cleanup has landed
		synctest.Wait()
		for i, f := range fakes {
			if v, _ := f.get("redlock:{dc}"); !strings.HasPrefix(v, l.Token()+".") {
				t.Errorf("node %d holds %q after the delayed cleanups; want the lock's key (token %s)", i, v, l.Token())
			}
		}
		if n := fakes[0].count("cleanup"); n == 0 {
			t.Errorf("node 0 got no cleanup; the test did not exercise a failed attempt")
		}
	})
}

// A node whose reply is lost after its script ran holds our key: a late
// error is cleaned up like a late grant.
func TestLateErrorIsCleanedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 20 * time.Millisecond})
		fakes[0].set(func(f *fakeNode) {
			f.delay = 100 * time.Millisecond
			f.errAfter = errors.New("i/o timeout")
		})
		for _, f := range fakes[1:] {
			f.set(func(f *fakeNode) { f.kv["redlock:{le}"] = "someone-else.1" })
		}
		if _, err := c.Acquire(t.Context(), "le", time.Second, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		fakes[0].set(func(f *fakeNode) { f.errAfter = nil })
		time.Sleep(time.Second)
		synctest.Wait()
		noKey(t, fakes[:1], "redlock:{le}") // a late error reply is cleaned up
	})
}
