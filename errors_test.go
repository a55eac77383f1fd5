package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// Tests of errors and of what ends a wait: held versus unreachable, errors
// no retry cures, Redis-side surprises (NOSCRIPT, WRONGTYPE, READONLY).

func TestScriptFlushMidRun(t *testing.T) {
	c := newTestClient(t, nodes(t, 5), nil)
	key, _ := c.Keys("flush")
	for i := 0; i < 50; i++ {
		if i == 25 {
			for _, nd := range nodes(t, 5) {
				if err := nd.ScriptFlush(t.Context()).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		l, err := c.Acquire(t.Context(), "flush", time.Second, nil)
		if err != nil {
			t.Fatalf("Acquire #%d = %v", i, err)
		}
		if i == 25 {
			// The lock is held: extend and release after another flush.
			for _, nd := range nodes(t, 5) {
				nd.ScriptFlush(t.Context())
			}
			if err := l.Extend(t.Context(), time.Second); err != nil {
				t.Fatalf("Extend after SCRIPT FLUSH = %v", err)
			}
			for _, nd := range nodes(t, 5) {
				nd.ScriptFlush(t.Context())
			}
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release #%d = %v", i, err)
		}
	}
	assertNoLockKey(t, nodes(t, 5), key)
}

func TestWrongTypeKey(t *testing.T) {
	for _, tc := range []struct {
		name, which, want string
	}{
		{"lock-key", "lock", "holds a hash, not a lock"},
		{"fence-key", "fence", "holds a hash, not a counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, nodes(t, 3), nil)
			name := "wrongtype-" + tc.name
			key, fenceKey := c.Keys(name)
			target := key
			if tc.which == "fence" {
				target = fenceKey
			}
			before := make([]int64, 3)
			for i, nd := range nodes(t, 3) {
				nd.HSet(t.Context(), target, "owner", "someone")
				before[i] = nd.DBSize(t.Context()).Val()
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := c.Acquire(ctx, name, time.Second, nil)
			if !errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("Acquire = %v; want ErrNotAcquired naming WRONGTYPE and %q", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Errorf("Acquire waited for its context; want it to give up at once, since no retry can help")
			}
			var ne *NodeError
			if !errors.As(err, &ne) || ne.Addr == "" {
				t.Errorf("error %v carries no *NodeError with an address", err)
			}
			for i, nd := range nodes(t, 3) {
				if got := nd.HGet(t.Context(), target, "owner").Val(); got != "someone" {
					t.Errorf("node %d: the hash was changed to %q", i, got)
				}
				if got := nd.DBSize(t.Context()).Val(); got != before[i] {
					t.Errorf("node %d: DBSIZE %d -> %d; want nothing created", i, before[i], got)
				}
				nd.Del(t.Context(), target)
			}
		})
	}
}

func TestErrHeldTellsBusyFromUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		for _, f := range fakes {
			f.set(func(f *fakeNode) {
				f.kv["redlock:{busy}"] = "someone-else.1"
				f.expiry["redlock:{busy}"] = time.Now().Add(time.Minute)
			})
		}
		_, err := c.Acquire(t.Context(), "busy", time.Second, &AcquireOptions{Retry: NoRetry()})
		var qerr *QuorumError
		var held *HeldError
		// The round is decided at the second "held": a quorum of 2 is then
		// impossible, whatever the third node says.
		if !errors.Is(err, ErrHeld) || !errors.As(err, &qerr) || qerr.Held < 2 || !errors.As(err, &held) || held.TTL <= 0 {
			t.Errorf("Acquire of a held lock = %v; want ErrHeld, Held >= 2 and the holder's TTL", err)
		}
		failFor(fakes, 3, time.Hour)
		if _, err := c.Acquire(t.Context(), "busy", time.Second, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrHeld) {
			t.Errorf("Acquire with every node unreachable = %v; want ErrNotAcquired, not ErrHeld", err)
		}
	})
}

// redisError is an error reply from a Redis server.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

var _ redis.Error = redisError("")

func TestPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{redisError("READONLY You can't write against a read only replica."), true},
		{redisError("CROSSSLOT Keys in request don't hash to the same slot"), true},
		{redisError("BADCOUNTER fence counter k holds \"x\""), true},
		{redisError("WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{redisError("NOPERM this user has no permissions"), true},
		{redisError("OOM command not allowed when used memory > 'maxmemory'"), false},
		{redisError("LOADING Redis is loading the dataset in memory"), false},
		{errors.New("dial tcp: connection refused"), false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

// A node that turned into a read-only replica fails for good: once such
// nodes make the quorum impossible, Acquire gives up at once.
func TestReadOnlyReplicaEndsWait(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	ns := cl.Clients()
	for _, nd := range ns[:2] {
		// A master that does not exist: the node stays a read-only replica.
		if err := nd.Do(t.Context(), "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := newTestClient(t, ns, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Acquire(ctx, "ro", time.Second, nil)
	if !errors.Is(err, ErrNotAcquired) || !strings.Contains(err.Error(), "READONLY") || ctx.Err() != nil {
		t.Errorf("Acquire with 2 of 3 nodes read-only = %v after %v; want READONLY at once", err, time.Since(start))
	}
	key, _ := c.Keys("ro")
	assertNoLockKey(t, ns[2:], key)
}
