package redlocktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestMain(m *testing.M) {
	redlocktest.SkipExamplesWithoutDocker("^Example")
	goleak.VerifyTestMain(m)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pingAll checks which nodes answer PING: want[i] says whether node i should.
func pingAll(t *testing.T, c *redlocktest.Cluster, want ...bool) {
	t.Helper()
	for i, up := range want {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		begin := time.Now()
		err := c.Client(i).Ping(ctx).Err()
		cancel()
		if !up {
			t.Logf("node %d: PING while down failed after %v: %v", i, time.Since(begin), err)
		}
		if up && err != nil {
			t.Errorf("node %d: PING: %v, want PONG", i, err)
		}
		if !up && err == nil {
			t.Errorf("node %d: PING succeeded, want an error (node is down)", i)
		}
	}
}

func TestCluster(t *testing.T) {
	start := time.Now()
	c := redlocktest.Start(t, 3, nil)
	t.Logf("3 nodes ready in %v", time.Since(start))

	if c.Len() != 3 {
		t.Fatalf("Len() = %d, want 3", c.Len())
	}
	addrs := c.Addrs()
	seen := map[string]bool{}
	for i, a := range addrs {
		if a != c.Addr(i) {
			t.Errorf("Addrs()[%d] = %q, Addr(%d) = %q", i, a, i, c.Addr(i))
		}
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("Addr(%d) = %q, want 127.0.0.1:PORT", i, a)
		}
		if seen[a] {
			t.Errorf("duplicate address %q", a)
		}
		seen[a] = true
	}
	clients := c.Clients()
	for i, cl := range clients {
		if cl != redis.UniversalClient(c.Client(i)) {
			t.Errorf("Clients()[%d] is not Client(%d)", i, i)
		}
	}
	clients[0] = nil // a new slice each call
	if c.Clients()[0] == nil {
		t.Error("Clients() returned a shared slice")
	}
	pingAll(t, c, true, true, true)

	ctx := ctxT(t)
	// The nodes are independent masters: a key set on one is not on another.
	if err := c.Client(1).Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Client(0).Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("node 0: EXISTS k = %d, %v; want 0", n, err)
	}
	if err := c.Client(1).Incr(ctx, "fence").Err(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		halt func(int) error
	}{
		{"Kill", c.Kill},
		{"Stop", c.Stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			if err := tc.halt(1); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s took %v", tc.name, time.Since(begin))
			pingAll(t, c, true, false, true)
			if err := tc.halt(1); err != nil {
				t.Errorf("second %s: %v, want nil", tc.name, err)
			}

			begin = time.Now()
			if err := c.Restart(1); err != nil {
				t.Fatal(err)
			}
			t.Logf("Restart took %v", time.Since(begin))
			if got := c.Addr(1); got != addrs[1] {
				t.Errorf("Addr(1) after Restart = %q, want %q", got, addrs[1])
			}
			pingAll(t, c, true, true, true)
			ctx := ctxT(t)
			if v, err := c.Client(1).Get(ctx, "k").Result(); err != nil || v != "v1" {
				t.Errorf("GET k after %s+Restart = %q, %v; want v1 (AOF)", tc.name, v, err)
			}
			// The counter keeps counting from where it was.
			if err := c.Client(1).Incr(ctx, "fence").Err(); err != nil {
				t.Error(err)
			}
			if err := c.Restart(1); err == nil {
				t.Error("Restart of a running node succeeded, want an error")
			}
		})
	}
	if v, err := c.Client(1).Get(ctx, "fence").Int(); err != nil || v != 3 {
		t.Errorf("fence = %d, %v; want 3", v, err)
	}

	// FlushAll skips the down node and empties the others.
	if err := c.Client(2).Set(ctx, "k2", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(ctx); err != nil {
		t.Fatalf("FlushAll with node 0 down: %v", err)
	}
	for _, i := range []int{1, 2} {
		if n, err := c.Client(i).DBSize(ctx).Result(); err != nil || n != 0 {
			t.Errorf("node %d: DBSIZE after FlushAll = %d, %v; want 0", i, n, err)
		}
	}

	// Close (once more via Cleanup) removes everything and closes clients.
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if err := c.Client(1).Ping(ctx).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("PING after Close: %v, want redis.ErrClosed", err)
	}
	if err := c.Restart(0); err == nil {
		t.Error("Restart after Close succeeded, want an error")
	}
	if err := c.Kill(1); err == nil {
		t.Error("Kill after Close succeeded, want an error")
	}
}

func TestNoPersistence(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 1, &redlocktest.Options{NoPersistence: true})
	ctx := ctxT(t)
	if err := c.Client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.Client(0).ConfigGet(ctx, "appendonly").Val()["appendonly"]; got != "no" {
		t.Errorf("appendonly = %q, want no", got)
	}
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Client(0).Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k after restart without persistence = %d, %v; want 0", n, err)
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 1, &redlocktest.Options{Args: []string{"--maxmemory", "32mb"}})
	ctx := ctxT(t)
	cfg, err := c.Client(0).ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"maxmemory":   "33554432",
		"appendonly":  "yes",
		"appendfsync": "always",
	} {
		if cfg[k] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, cfg[k], want)
		}
	}
}

func TestBadArgs(t *testing.T) {
	t.Parallel()
	redlocktest.RequireDocker(t)
	begin := time.Now()
	c, err := redlocktest.New(1, &redlocktest.Options{Args: []string{"--no-such-directive", "x"}})
	if err == nil {
		c.Close()
		t.Fatal("New with a bad redis-server argument succeeded")
	}
	t.Log(err)
	if !strings.HasPrefix(err.Error(), "redlocktest: ") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("error %q does not say redis-server exited", err)
	}
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("New took %v to notice that redis-server exited", d)
	}
}

// A missing image that cannot be made (here: no bash, no docker CLI on the
// PATH) fails New with an error that says what to do. TestImageBuilt
// covers the image made.
func TestImageMissing(t *testing.T) {
	redlocktest.RequireDocker(t)
	t.Setenv("PATH", t.TempDir())
	c, err := redlocktest.New(3, &redlocktest.Options{Image: "redlocktest-no-such-image:0"})
	if err == nil {
		c.Close()
		t.Fatal("New with a missing image and no way to make it succeeded")
	}
	for _, s := range []string{"redlocktest: ", `"redlocktest-no-such-image:0"`, "could not be pulled or built", "scripts/redis-image.sh", redlocktest.ImageEnv} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestDockerUnreachable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := redlocktest.New(1, nil)
	if err == nil || !strings.Contains(err.Error(), "Docker is not reachable") {
		t.Errorf("New with DOCKER_HOST pointing nowhere: %v, want a 'Docker is not reachable' error", err)
	}
}

func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		n    int
		opts *redlocktest.Options
	}{
		{0, nil},
		{1, &redlocktest.Options{Expire: -time.Second}},
		{1, &redlocktest.Options{Image: "redis@sha256:0123"}},
	} {
		if c, err := redlocktest.New(tc.n, tc.opts); err == nil {
			c.Close()
			t.Errorf("New(%d, %+v) succeeded, want an error", tc.n, tc.opts)
		} else if !strings.HasPrefix(err.Error(), "redlocktest: ") {
			t.Errorf("error %q does not start with redlocktest:", err)
		}
	}
}

func TestStartFive(t *testing.T) {
	begin := time.Now()
	c := redlocktest.Start(t, 5, nil)
	t.Logf("5 nodes ready in %v", time.Since(begin))
	pingAll(t, c, true, true, true, true, true)
}

func TestExpire(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 1, &redlocktest.Options{Expire: 2 * time.Second})
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Client(0).Ping(ctx).Err()
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node still answers PING 15s after a 2s Expire")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
