package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// miniNodes returns n miniredis servers and clients of them, closed when
// the test ends.
func miniNodes(t *testing.T, n int) ([]*miniredis.Miniredis, []redis.UniversalClient) {
	t.Helper()
	servers := make([]*miniredis.Miniredis, n)
	clients := make([]redis.UniversalClient, n)
	for i := range servers {
		servers[i] = miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: servers[i].Addr()})
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	return servers, clients
}

// mustGet returns the string at key on s, "" if there is none.
func mustGet(s *miniredis.Miniredis, key string) string {
	v, _ := s.Get(key)
	return v
}

// miniClient is a Client over three miniredis servers.
func miniClient(t *testing.T, opts *redlock.Options) ([]*miniredis.Miniredis, *redlock.Client) {
	t.Helper()
	servers, clients := miniNodes(t, 3)
	if opts == nil {
		// miniredis compiles a script on its first call: slower than the
		// default node timeout under -race.
		opts = &redlock.Options{NodeTimeout: time.Second}
	}
	c, err := redlock.New(clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return servers, c
}

// TestMiniredisRunsTheScripts: every script of the library runs on
// miniredis, so that a user's unit tests can take locks without Docker:
// acquire (plain and re-entrant, fenced), extend, release, re-entry and
// resume, the waiting queue with its release grant, queue leave, inspect
// and force release. What miniredis does not model (expiry in real time,
// faults, latency) is the README's "Testing code that takes these locks".
func TestMiniredisRunsTheScripts(t *testing.T) {
	ctx := t.Context()

	t.Run("acquire/extend/release", func(t *testing.T) {
		servers, c := miniClient(t, nil)
		l, err := c.Acquire(ctx, "plain", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire = %v", err)
		}
		if l.Fence() != 1 {
			t.Errorf("Fence = %d; want 1", l.Fence())
		}
		if err := l.Extend(ctx, 20*time.Second); err != nil {
			t.Errorf("Extend = %v", err)
		}
		// Extend returns at a quorum: the last node may answer later.
		key, _ := c.Keys("plain")
		deadline := time.Now().Add(time.Second)
		for i, s := range servers {
			for s.TTL(key) <= 10*time.Second && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if ttl := s.TTL(key); ttl <= 10*time.Second {
				t.Errorf("node %d: TTL %v after Extend(20s); want more than 10s", i, ttl)
			}
		}
		if _, err := c.TryAcquire(ctx, "plain", time.Second, nil); !errors.Is(err, redlock.ErrHeld) {
			t.Errorf("TryAcquire of a held lock = %v; want ErrHeld", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release = %v", err)
		}
		// Release returns at a quorum too.
		deadline = time.Now().Add(time.Second)
		for i, s := range servers {
			for s.Exists(key) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if s.Exists(key) {
				t.Errorf("node %d: %s left after Release", i, key)
			}
		}
		again, err := c.TryAcquire(ctx, "plain", time.Second, nil)
		if err != nil || again.Fence() != 2 {
			t.Fatalf("TryAcquire after Release = %v, %v; want the lock with fence 2", again, err)
		}
		_ = again.Release(ctx)
	})

	t.Run("plain/metadata", func(t *testing.T) {
		servers, c := miniClient(t, nil)
		l, err := c.Acquire(ctx, "meta", 10*time.Second, &redlock.AcquireOptions{Metadata: "job 8"})
		if err != nil {
			t.Fatalf("Acquire with Metadata = %v", err)
		}
		if err := l.Extend(ctx, 20*time.Second); err != nil {
			t.Errorf("Extend = %v", err)
		}
		st, err := c.Inspect(ctx, "meta")
		if err != nil || !st.Held || st.Nodes[0].Metadata != "job 8" || st.Nodes[0].Reentrant {
			t.Fatalf("Inspect = %+v, %v; want held by a plain lock with metadata %q", st, err, "job 8")
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release = %v", err)
		}
		// Release returns at a quorum: the last node may answer after it.
		lockKey, _ := c.Keys("meta")
		deadline := time.Now().Add(time.Second)
		for i, s := range servers {
			for _, k := range []string{lockKey, lockKey + ":meta"} {
				for s.Exists(k) && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if s.Exists(k) {
					t.Errorf("node %d: %s left after Release", i, k)
				}
			}
		}
	})

	t.Run("reentry/resume", func(t *testing.T) {
		_, c := miniClient(t, nil)
		outer, err := c.Acquire(ctx, "nested", 10*time.Second, &redlock.AcquireOptions{Reentrant: true, Metadata: "job 7"})
		if err != nil {
			t.Fatalf("re-entrant Acquire = %v", err)
		}
		inner, err := outer.Reenter(ctx, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Reenter = %v", err)
		}
		resumed, err := c.Resume(ctx, outer.Handle(), 5*time.Second, nil)
		if err != nil {
			t.Fatalf("Resume = %v", err)
		}
		if err := inner.Extend(ctx, 5*time.Second); err != nil {
			t.Errorf("Extend of a nested hold = %v", err)
		}
		st, err := c.Inspect(ctx, "nested")
		if err != nil || !st.Held {
			t.Fatalf("Inspect = %+v, %v; want held", st, err)
		}
		if md := st.Nodes[0].Metadata; md != "job 7" {
			t.Errorf("Inspect metadata = %q; want %q", md, "job 7")
		}
		for _, l := range []*redlock.Lock{outer, inner} {
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release = %v", err)
			}
		}
		if _, err := c.TryAcquire(ctx, "nested", time.Second, nil); !errors.Is(err, redlock.ErrHeld) {
			t.Errorf("TryAcquire with one hold left = %v; want ErrHeld", err)
		}
		if err := resumed.Release(ctx); err != nil {
			t.Errorf("Release of the last hold = %v", err)
		}
		if st, err := c.Inspect(ctx, "nested"); err != nil || st.Held {
			t.Errorf("Inspect after the last hold = %+v, %v; want free", st, err)
		}
	})

	t.Run("queue/grant/leave", func(t *testing.T) {
		servers, holderC := miniClient(t, nil)
		clients := make([]redis.UniversalClient, len(servers))
		for i, s := range servers {
			cl := redis.NewClient(&redis.Options{Addr: s.Addr()})
			t.Cleanup(func() { cl.Close() })
			clients[i] = cl
		}
		waiting := make(chan struct{}, 8)
		waiterC, err := redlock.New(clients, &redlock.Options{NodeTimeout: time.Second, OnEvent: func(_ context.Context, e redlock.Event) {
			if e.Kind == redlock.EventWait && e.Waiting {
				waiting <- struct{}{} // its failed attempt queued it
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer waiterC.Close()

		held, err := holderC.Acquire(ctx, "queued", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A waiter that gives up leaves the queue (queue_leave.lua).
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = waiterC.Acquire(short, "queued", 10*time.Second, nil)
		cancel()
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("Acquire of a held lock = %v; want ErrNotAcquired", err)
		}
		// A waiter that stays is queued, and the release hands it the lock.
		got := make(chan error, 1)
		go func() {
			l, err := waiterC.Acquire(ctx, "queued", 10*time.Second, nil)
			if err == nil {
				if l.Fence() <= held.Fence() {
					err = errors.New("fence did not rise")
				}
				err = errors.Join(err, l.Release(ctx))
			}
			got <- err
		}()
		<-waiting // the first call's
		<-waiting
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Errorf("queued Acquire after the release = %v; want the lock", err)
		}
		// Nothing is left but the fence counter: no lock key, no queue
		// (once the release's last node has answered).
		_, fence := holderC.Keys("queued")
		deadline := time.Now().Add(time.Second)
		for i, s := range servers {
			for len(s.Keys()) != 1 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if keys := s.Keys(); len(keys) != 1 || keys[0] != fence {
				t.Errorf("node %d: keys %q after the last release; want only %q", i, keys, fence)
			}
		}
	})

	t.Run("fence write-back/cleanup", func(t *testing.T) {
		servers, c := miniClient(t, nil)
		key, fence := c.Keys("diverged")
		// One node down, one counter ahead: the fence is its next value,
		// written back to the other node of the quorum (fence.lua).
		servers[0].Set(fence, "41")
		servers[2].Close()
		l, err := c.Acquire(ctx, "diverged", 10*time.Second, nil)
		if err != nil || l.Fence() != 42 {
			t.Fatalf("Acquire = %v, %v; want fence 42", l, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Second)
		for i, s := range servers[:2] {
			for (s.Exists(key) || mustGet(s, fence) != "42") && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := mustGet(s, fence); got != "42" {
				t.Errorf("node %d: counter %q after the write-back; want 42", i, got)
			}
		}
		if err := servers[2].Restart(); err != nil {
			t.Fatal(err)
		}
		// Another owner's key on two nodes: the attempt wins the third
		// only, and deletes its key there again (cleanup.lua).
		for _, s := range servers[:2] {
			s.Set(key, "someone-else.1")
		}
		if _, err := c.TryAcquire(ctx, "diverged", time.Second, nil); !errors.Is(err, redlock.ErrHeld) {
			t.Fatalf("TryAcquire = %v; want ErrHeld", err)
		}
		for servers[2].Exists(key) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if servers[2].Exists(key) {
			t.Errorf("node 2 keeps the failed attempt's key; want it cleaned up")
		}
	})

	t.Run("force release", func(t *testing.T) {
		_, c := miniClient(t, nil)
		if _, err := c.Acquire(ctx, "stuck", time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ForceRelease(ctx, "stuck"); err != nil {
			t.Errorf("ForceRelease = %v", err)
		}
		l, err := c.TryAcquire(ctx, "stuck", time.Second, nil)
		if err != nil {
			t.Fatalf("TryAcquire after ForceRelease = %v", err)
		}
		_ = l.Release(ctx)
	})

	t.Run("expiry needs FastForward", func(t *testing.T) {
		servers, c := miniClient(t, nil)
		if _, err := c.Acquire(ctx, "expires", time.Second, nil); err != nil {
			t.Fatal(err)
		}
		// miniredis keeps time only when told: the key outlives its TTL
		// until FastForward moves every server's clock past it.
		for _, s := range servers {
			s.FastForward(2 * time.Second)
		}
		l, err := c.TryAcquire(ctx, "expires", time.Second, nil)
		if err != nil {
			t.Fatalf("TryAcquire after the TTL passed = %v", err)
		}
		_ = l.Release(ctx)
	})
}

// A Lock makes its Done channel only when asked (most locks never wait on
// it): one asked for before the lock ends closes when it ends, one asked for
// after is closed already, and every call returns the same channel.
func TestLockDoneBeforeAndAfterTheEnd(t *testing.T) {
	_, c := miniClient(t, nil)
	ctx := t.Context()
	before, err := c.Acquire(ctx, "done-before", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := c.Acquire(ctx, "done-after", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := before.Done()
	select {
	case <-done:
		t.Fatal("Done is closed while the lock is held")
	default:
	}
	for _, l := range []*redlock.Lock{before, after} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	afterDone := after.Done()
	for name, ch := range map[string]<-chan struct{}{"asked before Release": done, "asked after Release": afterDone} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Errorf("Done %s is not closed once the lock was released", name)
		}
	}
	if before.Done() != done || after.Done() != afterDone {
		t.Error("Done returned another channel on a later call")
	}
	if !errors.Is(after.Err(), redlock.ErrReleased) {
		t.Errorf("Err = %v; want ErrReleased", after.Err())
	}
}
