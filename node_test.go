package redlock

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptOnly is a node that can run scripts and nothing else (no
// subscribe): a wrapper a user might put around a client, counting calls.
type scriptOnly struct {
	redis.Scripter
	calls *atomic.Int64
}

func (s scriptOnly) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	s.calls.Add(1)
	return s.Scripter.EvalSha(ctx, sha, keys, args...)
}

func TestNewWithNodesTakesScriptOnlyNodes(t *testing.T) {
	var calls atomic.Int64
	var ns []Node
	for _, n := range nodes(t, 3) {
		ns = append(ns, scriptOnly{Scripter: n, calls: &calls})
	}
	c, err := NewWithNodes(ns, &Options{NodeTimeout: time.Second})
	if err != nil {
		t.Fatalf("NewWithNodes = %v", err)
	}
	defer c.Close()
	l, err := c.Acquire(t.Context(), "narrow", 5*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire through script-only nodes = %v", err)
	}
	if calls.Load() < 2 {
		t.Errorf("the wrapper saw %d script calls; want the lock's calls to go through it", calls.Load())
	}
	// A waiter on nodes that cannot subscribe finds the release by polling.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l2, err := c.Acquire(ctx, "narrow", 5*time.Second, nil)
		if err == nil {
			err = l2.Release(context.Background())
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("waiter without release notices = %v; want the lock after the release", err)
	}
	key, _ := c.Keys("narrow")
	assertNoLockKey(t, nodes(t, 3), key)

	if _, err := NewWithNodes([]Node{ns[0], nil}, nil); err == nil || errors.Is(err, ErrNotAcquired) {
		t.Errorf("NewWithNodes with a nil node = %v; want a configuration error", err)
	}
}

// New refuses a node listed twice, which would let one server cast two
// votes, and a nil node of any form.
func TestNewRefusesDuplicateAndNilNodes(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"})
	a2 := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379", DB: 3}) // another DB of the same server
	b := redis.NewClient(&redis.Options{Addr: "10.0.0.2:6379"})
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.3:6379", "10.0.0.1:6379"}})
	f1 := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m1", SentinelAddrs: []string{"10.0.0.9:26379"}})
	f2 := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m2", SentinelAddrs: []string{"10.0.0.9:26379"}})
	for _, c := range []interface{ Close() error }{a, a2, b, cl, f1, f2} {
		t.Cleanup(func() { c.Close() })
	}
	var typedNil *redis.Client
	for _, tc := range []struct {
		what  string
		nodes []redis.UniversalClient
		want  string // "" for no error
	}{
		{"the same client twice", []redis.UniversalClient{a, a, b}, "nodes 0 and 1 are one Redis node (the same *redis.Client)"},
		{"two clients with one address", []redis.UniversalClient{a, b, a2}, "nodes 0 and 2 are one Redis node (address tcp/10.0.0.1:6379)"},
		{"a cluster seed listed as a node", []redis.UniversalClient{a, b, cl}, "nodes 0 and 2 are one Redis node (address tcp/10.0.0.1:6379)"},
		{"a typed nil", []redis.UniversalClient{a, typedNil, b}, "node 1 is nil"},
		{"distinct nodes", []redis.UniversalClient{a, b}, ""},
		{"two failover clients", []redis.UniversalClient{f1, f2, b}, ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			c, err := New(tc.nodes, nil)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New = %v; want a client", err)
				}
				c.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v; want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := NewWithNodes([]Node{a, a}, nil); err == nil || !strings.Contains(err.Error(), "one Redis node") {
		t.Errorf("NewWithNodes with one client twice = %v; want the duplicate named", err)
	}
}
