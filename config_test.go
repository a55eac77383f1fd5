package redlock

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of what New and Acquire refuse: bad options and lock names.

func TestInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []redis.UniversalClient
		opts  *Options
		want  string
	}{
		{"no nodes", nil, nil, "no nodes: pass at least one"},
		{"nil node", []redis.UniversalClient{cluster(t).Client(0), nil}, nil, "node 1 is nil"},
		{"negative drift", nodes(t, 1), &Options{DriftFactor: -0.1}, "DriftFactor -0.1 is out of range"},
		{"drift of one", nodes(t, 1), &Options{DriftFactor: 1}, "DriftFactor 1 is out of range"},
		{"NaN drift", nodes(t, 1), &Options{DriftFactor: math.NaN()}, "DriftFactor NaN is out of range"},
		{"negative timeout", nodes(t, 1), &Options{NodeTimeout: -time.Second}, "NodeTimeout -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.nodes, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "redlock: ") {
				t.Errorf("New = %v, %v; want an error containing %q", c, err, tc.want)
			}
		})
	}

	c := newTestClient(t, nodes(t, 3), nil)
	for _, tc := range []struct {
		name string
		lock string
		ttl  time.Duration
		want string
	}{
		{"empty name", "", time.Second, "empty lock name"},
		{"zero ttl", "x", 0, "TTL 0s is too short"},
		{"sub-millisecond ttl", "x", 500 * time.Microsecond, "TTL 500µs is too short"},
		{"ttl within drift", "x", 2 * time.Millisecond, "not longer than its drift allowance"},
		{"negative ttl", "x", -time.Second, "TTL -1s is too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := c.Acquire(t.Context(), tc.lock, tc.ttl, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNotAcquired) {
				t.Errorf("Acquire(%q, %v) = %v, %v; want a config error containing %q", tc.lock, tc.ttl, l, err, tc.want)
			}
		})
	}
	key, _ := c.Keys("x")
	assertNoLockKey(t, nodes(t, 3), key)

	l, err := c.Acquire(t.Context(), "bad-extend", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("Extend(0) = %v; want a TTL error", err)
	}
	if l.Err() != nil {
		t.Errorf("Err() = %v after a rejected Extend; want the lock still held", l.Err())
	}
	l.Release(t.Context())
}

func TestLockNameRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 1, nil)
		for _, tc := range []struct {
			name string
			ok   bool
		}{
			{"orders:42", true},
			{strings.Repeat("n", MaxNameLen), true},
			{"", false},
			{"a{b", false},
			{"a}b", false},
			{"{tag}", false},
			{strings.Repeat("n", MaxNameLen+1), false},
		} {
			l, err := c.Acquire(t.Context(), tc.name, time.Second, &AcquireOptions{Retry: NoRetry()})
			if (err == nil) != tc.ok {
				t.Errorf("Acquire(%.20q…) = %v; want ok %v", tc.name, err, tc.ok)
			}
			if err == nil {
				l.Release(t.Context())
			} else if !strings.HasPrefix(err.Error(), "redlock: ") {
				t.Errorf("Acquire(%.20q…) error %q does not start with redlock:", tc.name, err)
			}
		}
	})
}
