package redlock

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/redlocktest"
)

// shared is five Redis masters in containers, shared by the integration
// tests; each test uses its own lock names and the first 1, 3 or 5 nodes.
// Tests that stop nodes start a cluster of their own. It starts on first
// use, so the tests of pure logic (fake nodes) run without Docker; the
// tests that need it are skipped when Docker is unreachable (failed with
// CI set: see redlocktest.RequireDocker).
var shared = redlocktest.Shared{N: 5}

// cluster returns the shared cluster, starting it on first use.
func cluster(t testing.TB) *redlocktest.Cluster {
	t.Helper()
	return shared.Cluster(t)
}

// quietLogger drops go-redis's log lines ("failed to dial" for every call
// to a node a test has stopped on purpose).
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	// Example<Name> use containers; Example (miniredis) does not.
	redlocktest.SkipExamplesWithoutDocker("^Example[A-Z]")
	code := shared.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// nodes returns the shared cluster's first n clients.
func nodes(t testing.TB, n int) []redis.UniversalClient {
	t.Helper()
	return cluster(t).Clients()[:n]
}

// newTestClient returns a Client over nodes, closed when the test ends.
// With nil opts the per-node timeout is 1s, not the 100ms default: the race
// detector on a loaded 2-core machine can starve a round trip past 100ms,
// and these tests are about semantics, not latency. Tests of the timeout
// itself pass their own Options.
func newTestClient(t testing.TB, nodes []redis.UniversalClient, opts *Options) *Client {
	t.Helper()
	if opts == nil {
		opts = &Options{NodeTimeout: time.Second}
	}
	c, err := New(nodes, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// forEachN runs f as a subtest with 1, 3 and 5 nodes.
func forEachN(t *testing.T, f func(t *testing.T, n int)) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) { f(t, n) })
	}
}

// assertNoLockKey fails the test if any of the nodes still has key once
// the deletes in flight have landed: Release returns at a quorum, and the
// Client finishes the other nodes in the background (within its node
// timeout), so a key may outlive Release by that long.
func assertNoLockKey(t testing.TB, nodes []redis.UniversalClient, key string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for i, n := range nodes {
		for {
			got, err := n.Exists(context.Background(), key).Result()
			if err == nil && got == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("node %d: EXISTS %s = %d, %v; want 0 (no stray key)", i, key, got, err)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
