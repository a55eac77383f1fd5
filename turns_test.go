package redlock

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// Tests of local turns: the Acquire calls of one Client for one name wait in
// turn rather than contend on the nodes.

func TestLocalWaitersQueueInsteadOfContending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		holder, err := c.Acquire(t.Context(), "q", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the holder's own grants are all in
		before := fakes[0].count("acquire")
		got := make(chan *Lock)
		go func() {
			l, err := c.Acquire(context.Background(), "q", time.Minute, nil)
			if err != nil {
				l = nil
			}
			got <- l
		}()
		time.Sleep(10 * time.Second)
		if n := fakes[0].count("acquire") - before; n != 0 {
			t.Errorf("a local waiter made %d attempts on the nodes while the lock was held in the same client; want 0", n)
		}
		start := time.Now()
		if err := holder.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		next := <-got
		if next == nil {
			t.Fatal("the waiter did not get the lock after the local release")
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("handoff took %v after Release returned; want at once (no retry delay)", waited)
		}
		if next.Fence() <= holder.Fence() {
			t.Errorf("next fence %d; want > %d", next.Fence(), holder.Fence())
		}
		next.Release(t.Context())
	})
}

func TestQueuedWaiterGivesUpWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		holder, err := c.Acquire(t.Context(), "qc", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = c.Acquire(ctx, "qc", time.Minute, nil)
		if !errors.Is(err, ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("queued Acquire = %v; want ErrNotAcquired and DeadlineExceeded", err)
		}
		// A try-lock does not queue: it makes its one attempt and fails.
		_, err = c.Acquire(t.Context(), "qc", time.Minute, &AcquireOptions{Retry: NoRetry()})
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Agreed != 0 || qe.Attempts != 1 {
			t.Errorf("try-lock = %v; want one attempt refused by every node", err)
		}
		holder.Release(t.Context())
		// The turn passed on: the next Acquire gets the lock at once.
		l, err := c.Acquire(t.Context(), "qc", time.Minute, &AcquireOptions{Retry: NoRetry()})
		if err != nil {
			t.Fatalf("Acquire after release = %v", err)
		}
		l.Release(t.Context())
		l, err = c.Acquire(t.Context(), "qc", time.Minute, nil)
		if err != nil {
			t.Fatalf("queued Acquire after release = %v", err)
		}
		l.Release(t.Context())
	})
}

func TestLocalHandoffNotDelayedByDeadNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logSink{}
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 100 * time.Millisecond, Logger: slog.New(logs)})
		holder, err := c.Acquire(t.Context(), "h", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		hang := make(chan struct{})
		defer close(hang)
		fakes[2].set(func(f *fakeNode) { f.hang = hang }) // node 2 stops answering
		got := make(chan time.Time, 1)
		go func() {
			l, err := c.Acquire(context.Background(), "h", time.Minute, nil)
			if err == nil {
				got <- time.Now()
				l.Release(context.Background())
			}
			close(got)
		}()
		synctest.Wait() // the waiter is queued behind the holder
		start := time.Now()
		err = holder.Release(t.Context())
		if released := time.Since(start); released != 0 {
			t.Errorf("Release returned after %v; want at once, when a quorum had deleted", released)
		}
		if err != nil {
			t.Errorf("Release = %v; want nil: nodes 0 and 1 deleted", err)
		}
		at, ok := <-got
		if !ok {
			t.Fatal("the local waiter did not get the lock")
		}
		if d := at.Sub(start); d != 0 {
			t.Errorf("the local waiter got the lock %v after Release began; want at once, when a quorum had deleted", d)
		}
		time.Sleep(100 * time.Millisecond) // node 2's delete times out
		synctest.Wait()
		// Two releases (the holder's, then the waiter's) each time out on node 2.
		logged := logs.find(msgStraggler)
		if len(logged) != 2 || logged[0]["node"] != int64(2) || logged[1]["node"] != int64(2) {
			t.Errorf("straggler logs = %v; want node 2's timeout, for each release", logged)
		}
	})
}
