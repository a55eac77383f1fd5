package redlocktest_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// async runs f in a goroutine and returns a channel that receives its
// result. The channel is buffered, so the goroutine ends even if nobody
// receives.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// stalls reports an error if ch yields a result within d.
func stalls(tb testing.TB, ch <-chan error, d time.Duration, what string) {
	tb.Helper()
	select {
	case err := <-ch:
		tb.Errorf("%s returned %v within %v; want no answer", what, err, d)
	case <-time.After(d):
	}
}

// result waits up to d for ch and reports a timeout as an error.
func result(tb testing.TB, ch <-chan error, d time.Duration, what string) (error, bool) {
	tb.Helper()
	select {
	case err := <-ch:
		return err, true
	case <-time.After(d):
		tb.Errorf("%s still has no answer after %v", what, d)
		return nil, false
	}
}

func ping(cl redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx).Err()
}

// dial reports whether a TCP connection to addr can be opened.
func dial(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
	}
	return err
}

func newNet(tb testing.TB, c *redlocktest.Cluster, name string) *redlocktest.Net {
	tb.Helper()
	n, err := c.NewNet(name)
	if err != nil {
		tb.Fatalf("NewNet(%q) = %v; want nil", name, err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("Net(%q).Close() = %v; want nil", name, err)
		}
	})
	return n
}

func TestNet(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 2, nil)
	alice := newNet(t, c, "alice")
	bob := newNet(t, c, "bob")
	ctx := ctxT(t)

	if got := alice.Name(); got != "alice" {
		t.Errorf("Name() = %q; want alice", got)
	}
	seen := map[string]bool{c.Addr(0): true, c.Addr(1): true}
	for _, n := range []*redlocktest.Net{alice, bob} {
		for i := range c.Len() {
			a := n.Addr(i)
			if !strings.HasPrefix(a, "127.0.0.1:") {
				t.Errorf("Net(%q).Addr(%d) = %q; want 127.0.0.1:PORT", n.Name(), i, a)
			}
			if seen[a] {
				t.Errorf("Net(%q).Addr(%d) = %q; already used by a node or another proxy", n.Name(), i, a)
			}
			seen[a] = true
		}
	}
	cls := alice.Clients()
	if len(cls) != 2 {
		t.Fatalf("len(Clients()) = %d; want 2", len(cls))
	}
	if alice.Clients()[0] != cls[0] {
		t.Error("Clients() returned a different client on the second call; want the same ones")
	}
	// Proxy i leads to node i.
	for i, cl := range cls {
		if err := cl.Set(ctx, "via", alice.Addr(i), 0).Err(); err != nil {
			t.Fatalf("SET through Net(alice) node %d = %v; want nil", i, err)
		}
		if got, err := c.Client(i).Get(ctx, "via").Result(); err != nil || got != alice.Addr(i) {
			t.Errorf("node %d: GET via = %q, %v; want %q", i, got, err, alice.Addr(i))
		}
	}

	t.Run("Down", func(t *testing.T) {
		if err := alice.Down(0); err != nil {
			t.Fatalf("Down(0) = %v; want nil", err)
		}
		if err := alice.Down(0); err != nil {
			t.Errorf("second Down(0) = %v; want nil", err)
		}
		begin := time.Now()
		err := ping(cls[0])
		took := time.Since(begin)
		t.Logf("PING through a down proxy: %v after %v", err, took)
		if err == nil {
			t.Error("PING through a down proxy succeeded; want an error")
		} else if took > 3*time.Second {
			// The read timeout is 5s: a refused dial must not wait for it.
			t.Errorf("PING through a down proxy failed after %v; want a refused connection, not a timeout", took)
		}
		if err := dial(alice.Addr(0)); err == nil {
			t.Error("TCP dial to a down proxy succeeded; want connection refused")
		}
		// Only alice's path is cut.
		for name, cl := range map[string]redis.UniversalClient{"alice node 1": cls[1], "bob node 0": bob.Clients()[0], "direct node 0": c.Client(0)} {
			if err := ping(cl); err != nil {
				t.Errorf("%s: PING = %v; want nil", name, err)
			}
		}
		if err := alice.Heal(0); err != nil {
			t.Fatalf("Heal(0) = %v; want nil", err)
		}
		if err := ping(cls[0]); err != nil {
			t.Errorf("PING after Heal(0) = %v; want nil", err)
		}
	})

	t.Run("Blackhole", func(t *testing.T) {
		if err := ping(cls[0]); err != nil { // an open connection
			t.Fatal(err)
		}
		if err := alice.Blackhole(0); err != nil {
			t.Fatalf("Blackhole(0) = %v; want nil", err)
		}
		if err := alice.Blackhole(0); err != nil {
			t.Errorf("second Blackhole(0) = %v; want nil", err)
		}
		stalled := async(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			return cls[0].Ping(ctx).Err()
		})
		stalls(t, stalled, 500*time.Millisecond, "PING through a blackhole")
		if err := dial(alice.Addr(0)); err != nil {
			t.Errorf("TCP dial to a blackholed proxy = %v; want nil (connections accepted)", err)
		}
		for name, cl := range map[string]redis.UniversalClient{"alice node 1": cls[1], "bob node 0": bob.Clients()[0]} {
			if err := ping(cl); err != nil {
				t.Errorf("%s: PING = %v; want nil", name, err)
			}
		}
		if err := alice.Heal(0); err != nil {
			t.Fatalf("Heal(0) = %v; want nil", err)
		}
		// Heal cuts the connection the PING is stuck on.
		if err, ok := result(t, stalled, 3*time.Second, "PING stalled in the blackhole, after Heal"); ok && err == nil {
			t.Error("PING stalled in the blackhole succeeded after Heal; want an error (its connection is cut)")
		}
		for range 3 {
			if err := ping(cls[0]); err != nil {
				t.Errorf("PING after Heal(0) = %v; want nil", err)
			}
		}
	})

	t.Run("Latency", func(t *testing.T) {
		id, err := cls[1].ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []time.Duration{200 * time.Millisecond, 300 * time.Millisecond} {
			if err := alice.Latency(1, d); err != nil {
				t.Fatalf("Latency(1, %v) = %v; want nil", d, err)
			}
			begin := time.Now()
			if err := ping(cls[1]); err != nil {
				t.Fatalf("PING with latency %v = %v; want nil", d, err)
			}
			if took := time.Since(begin); took < d {
				t.Errorf("PING with latency %v took %v; want at least %v", d, took, d)
			}
		}
		if err := alice.Latency(1, -time.Second); err == nil {
			t.Error("Latency(1, -1s) = nil; want an error")
		}
		if err := alice.Heal(1); err != nil {
			t.Fatalf("Heal(1) = %v; want nil", err)
		}
		// Latency and its removal keep the connection.
		if got, err := cls[1].ClientID(ctx).Result(); err != nil || got != id {
			t.Errorf("CLIENT ID after Latency and Heal = %d, %v; want %d (same connection)", got, err, id)
		}
	})

	t.Run("DelayRequests", func(t *testing.T) {
		// A client through the Net that gives up when its context ends,
		// as a lock client bounding each node call does (the Net's own
		// clients leave ContextTimeoutEnabled false).
		cl := redis.NewClient(&redis.Options{Addr: alice.Addr(0), MaxRetries: -1, ContextTimeoutEnabled: true})
		defer cl.Close()
		direct := c.Client(0)
		if err := cl.Ping(ctx).Err(); err != nil { // connect before the delay
			t.Fatal(err)
		}
		const key = "delayed-request"
		direct.Del(ctx, key)
		if err := alice.DelayRequests(0, 400*time.Millisecond); err != nil {
			t.Fatalf("DelayRequests(0, 400ms) = %v; want nil", err)
		}
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := cl.Set(short, key, "late", 0).Err()
		cancel()
		if err == nil {
			t.Fatalf("SET with a 100ms context through a 400ms request delay = nil; want a timeout")
		}
		// The client gave up before the request reached the node...
		if n, err := direct.Exists(ctx, key).Result(); n != 0 || err != nil {
			t.Errorf("EXISTS right after the client timed out = %d, %v; want 0 (the request still on its way)", n, err)
		}
		// ...and the node runs it anyway.
		arrived := false
		for deadline := time.Now().Add(10 * time.Second); !arrived && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			arrived = direct.Get(ctx, key).Val() == "late"
		}
		if !arrived {
			t.Errorf("GET %s on the node = %q; want the timed-out SET's value %q", key, direct.Get(ctx, key).Val(), "late")
		}
		if err := alice.DelayRequests(0, -time.Second); err == nil {
			t.Error("DelayRequests(0, -1s) = nil; want an error")
		}
		id, err := cls[0].ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := alice.Heal(0); err != nil {
			t.Fatalf("Heal(0) = %v; want nil", err)
		}
		// Heal removes the delay and keeps the connection.
		if got, err := cls[0].ClientID(ctx).Result(); err != nil || got != id {
			t.Errorf("CLIENT ID after DelayRequests and Heal = %d, %v; want %d (same connection)", got, err, id)
		}
		direct.Del(ctx, key)
	})

	t.Run("HealAll", func(t *testing.T) {
		if err := alice.Down(0); err != nil {
			t.Fatal(err)
		}
		if err := alice.Blackhole(1); err != nil {
			t.Fatal(err)
		}
		if err := alice.Latency(1, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := alice.HealAll(); err != nil {
			t.Fatalf("HealAll() = %v; want nil", err)
		}
		for i, cl := range cls {
			if err := ping(cl); err != nil {
				t.Errorf("node %d: PING after HealAll = %v; want nil", i, err)
			}
		}
	})

	t.Run("NodeRestart", func(t *testing.T) {
		// The proxies follow a node across Kill and Restart.
		if err := c.Kill(1); err != nil {
			t.Fatal(err)
		}
		if err := ping(cls[1]); err == nil {
			t.Error("PING through a Net to a killed node succeeded; want an error")
		}
		if err := c.Restart(1); err != nil {
			t.Fatal(err)
		}
		if err := ping(cls[1]); err != nil {
			t.Errorf("PING through a Net after Restart = %v; want nil", err)
		}
	})

	t.Run("Close", func(t *testing.T) {
		bcl := bob.Clients()
		if err := bob.Close(); err != nil {
			t.Fatalf("Close() = %v; want nil", err)
		}
		if err := bob.Close(); err != nil {
			t.Errorf("second Close() = %v; want nil", err)
		}
		if err := ping(bcl[0]); !errors.Is(err, redis.ErrClosed) {
			t.Errorf("PING after Close = %v; want redis.ErrClosed", err)
		}
		if err := dial(bob.Addr(0)); err == nil {
			t.Error("TCP dial to a closed Net's proxy succeeded; want connection refused")
		}
		for name, f := range map[string]func() error{
			"Down":          func() error { return bob.Down(0) },
			"Blackhole":     func() error { return bob.Blackhole(0) },
			"Latency":       func() error { return bob.Latency(0, time.Millisecond) },
			"DelayRequests": func() error { return bob.DelayRequests(0, time.Millisecond) },
			"Heal":          func() error { return bob.Heal(0) },
			"HealAll":       bob.HealAll,
		} {
			if err := f(); err == nil || !strings.HasPrefix(err.Error(), "redlocktest: ") {
				t.Errorf("%s after Close = %v; want a redlocktest: error", name, err)
			}
		}
	})

	if _, err := c.NewNet(""); err == nil {
		t.Error(`NewNet("") = nil error; want an error`)
	}
	// Cluster.Close closes the Nets still open, with their proxies.
	if err := c.Close(); err != nil {
		t.Fatalf("Cluster.Close() = %v; want nil", err)
	}
	if err := ping(cls[0]); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("PING through a Net after Cluster.Close = %v; want redis.ErrClosed", err)
	}
	if err := dial(alice.Addr(1)); err == nil {
		t.Error("TCP dial to a proxy after Cluster.Close succeeded; want connection refused")
	}
	if err := alice.Heal(0); err == nil {
		t.Error("Heal after Cluster.Close = nil; want an error")
	}
	if _, err := c.NewNet("late"); err == nil {
		t.Error("NewNet after Cluster.Close = nil error; want an error")
	}
}
