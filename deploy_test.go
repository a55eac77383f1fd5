package redlock

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// The tests of this file run the library against Redis as it is deployed:
// over TLS, as a user with the minimal ACL, with a Sentinel-managed master
// and with a Redis Cluster as one of the nodes.

// acquireFenced acquires name with fencing and fails the test without it.
func acquireFenced(t *testing.T, c *Client, name string, ttl time.Duration) *Lock {
	t.Helper()
	l, err := c.Acquire(t.Context(), name, ttl, nil)
	if err != nil {
		t.Fatalf("Acquire(%q) = %v; want the lock", name, err)
	}
	if l.Fence() == 0 {
		t.Fatalf("Acquire(%q).Fence() = 0; want a fence", name)
	}
	return l
}

// checkCycle acquires name, extends and releases it, acquires it again and
// checks that the second fence is larger than the first.
func checkCycle(t *testing.T, c *Client, name string) {
	t.Helper()
	l := acquireFenced(t, c, name, 5*time.Second)
	if err := l.Extend(t.Context(), 5*time.Second); err != nil {
		t.Errorf("Extend = %v; want nil", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release = %v; want nil", err)
	}
	l2 := acquireFenced(t, c, name, 5*time.Second)
	if l2.Fence() <= l.Fence() {
		t.Errorf("fence after reacquire = %d; want > %d", l2.Fence(), l.Fence())
	}
	if err := l2.Release(t.Context()); err != nil {
		t.Errorf("Release = %v; want nil", err)
	}
}

func TestTLSNodes(t *testing.T) {
	tc := redlocktest.StartTLS(t, 3, &redlocktest.TLSOptions{ClientAuth: true})
	// As a user would: rediss:// URLs, with the CA and client certificate.
	var ns []redis.UniversalClient
	for _, u := range tc.URLs() {
		opt, err := redis.ParseURL(u)
		if err != nil {
			t.Fatalf("ParseURL(%q): %v", u, err)
		}
		cfg := tc.TLSConfig()
		opt.TLSConfig.RootCAs, opt.TLSConfig.Certificates = cfg.RootCAs, cfg.Certificates
		cl := redis.NewClient(opt)
		t.Cleanup(func() { cl.Close() })
		ns = append(ns, cl)
	}
	c := newTestClient(t, ns, nil)
	checkCycle(t, c, "tls")
	key, _ := c.Keys("tls")
	assertNoLockKey(t, tc.Clients(), key)

	// Negative control: the same nodes through clients that trust another
	// CA refuse the servers' certificates, and the lock is not acquired.
	other, err := redlocktest.NewCerts("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	wrong := make([]redis.UniversalClient, 0, 3)
	for _, addr := range tc.Addrs() {
		cfg := other.ClientConfig(true)
		cl := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, MaxRetries: -1})
		t.Cleanup(func() { cl.Close() })
		wrong = append(wrong, cl)
	}
	cw := newTestClient(t, wrong, nil)
	_, err = cw.Acquire(t.Context(), "tls", 5*time.Second, &AcquireOptions{Retry: NoRetry()})
	var unknown x509.UnknownAuthorityError
	if !errors.Is(err, ErrNotAcquired) || !errors.As(err, &unknown) {
		t.Errorf("Acquire with the wrong CA = %v; want ErrNotAcquired with x509.UnknownAuthorityError", err)
	}
}

// patient is the Options of the tests that check what every node holds: a
// node that answers after the node timeout (the race detector on a loaded
// machine) would leave the lock held on the others only, as it should, but
// not what those tests look at.
var patient = &Options{NodeTimeout: 5 * time.Second}

// waitUntil polls cond every 10ms for up to 20s and fails the test if it
// never holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSentinelNodeFailover runs a lock over a Sentinel-managed master and
// two plain masters, and forces a failover of the first during the lease.
// The failover counts as that node's amnesia (README, "Where the safety
// ends"): the lock still holds on the two others, a quorum.
func TestSentinelNodeFailover(t *testing.T) {
	s := redlocktest.StartSentinel(t, nil)
	ns := append([]redis.UniversalClient{s.Client()}, nodes(t, 2)...)
	holder := newTestClient(t, ns, patient)
	rival := newTestClient(t, ns, patient)
	const name = "sentinel-failover"
	key, fenceKey := holder.Keys(name)
	l := acquireFenced(t, holder, name, 20*time.Second)
	// Acquire returns at a quorum; the lease the failover hits is one
	// every node holds, so that the failover is the only fault.
	waitUntil(t, "the holder's key is on every node", func() bool {
		for _, n := range ns {
			if v, _ := n.Get(t.Context(), key).Result(); !strings.HasPrefix(v, l.Token()+".") {
				return false
			}
		}
		return true
	})

	newMaster, err := s.Failover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s", newMaster)
	// The worst case of an asynchronous failover: the promoted replica
	// missed the key and the counter's last increment. Make it so.
	if err := s.Client().Del(t.Context(), key, fenceKey).Err(); err != nil {
		t.Fatalf("DEL on the new master: %v", err)
	}

	if err := l.Err(); err != nil {
		t.Fatalf("Err() after the failover = %v; want the lock held", err)
	}
	_, err = rival.Acquire(t.Context(), name, 20*time.Second, &AcquireOptions{Retry: NoRetry()})
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("rival Acquire after the failover = %v; want ErrHeld (the lock still holds on a quorum)", err)
	}
	if err := l.Extend(t.Context(), 20*time.Second); err != nil {
		t.Errorf("Extend after the failover = %v; want nil", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release after the failover = %v; want nil", err)
	}
	next := acquireFenced(t, rival, name, 20*time.Second)
	if next.Fence() <= l.Fence() {
		t.Errorf("next holder's fence = %d; want > %d", next.Fence(), l.Fence())
	}
	if err := next.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
	assertNoLockKey(t, ns, key)

	// Control: with the Sentinel-managed master as the only node, the same
	// amnesia frees the lock for a rival while the holder still holds it.
	t.Run("control: one node", func(t *testing.T) {
		one := []redis.UniversalClient{s.Client()}
		a, b := newTestClient(t, one, nil), newTestClient(t, one, nil)
		l := acquireFenced(t, a, name, 20*time.Second)
		if err := s.Client().Del(t.Context(), key).Err(); err != nil {
			t.Fatal(err)
		}
		l2, err := b.Acquire(t.Context(), name, 20*time.Second, &AcquireOptions{Retry: NoRetry()})
		if err != nil {
			t.Fatalf("rival Acquire after the single node forgot = %v; want the lock (the control must show the overlap)", err)
		}
		if l.Err() != nil {
			t.Errorf("holder's Err() = %v; want nil: it cannot know", l.Err())
		}
		l2.Release(t.Context())
		l.Release(t.Context())
	})
}

// TestClusterNode runs a lock over a 3-master Redis Cluster alone, then
// with the Cluster as one of three nodes.
func TestClusterNode(t *testing.T) {
	rc := redlocktest.StartRedisCluster(t, 3, nil)
	cc := rc.Client()
	// Alone, every success is the Cluster's own: a Cluster that failed
	// would be hidden by the quorum of the two others.
	alone := newTestClient(t, []redis.UniversalClient{cc}, patient)
	ns := append([]redis.UniversalClient{cc}, nodes(t, 2)...)
	holder := newTestClient(t, ns, patient)
	rival := newTestClient(t, ns, patient)
	const name = "cluster-lock"

	// The lock, fence and queue keys share the slot of the hash tag.
	key, fenceKey := holder.Keys(name)
	q, qt := holder.keys(name).queue, holder.keys(name).queueTimes
	slot := func(k string) int64 {
		s, err := cc.ClusterKeySlot(t.Context(), k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
		}
		return s
	}
	for _, k := range []string{fenceKey, q, qt} {
		if slot(k) != slot(key) {
			t.Errorf("slot of %s = %d; want %d, the slot of %s", k, slot(k), slot(key), key)
		}
	}
	// Control: the same names without the tag fall in different slots.
	if slot("redlock:"+name) == slot("redlock:"+name+":fence") {
		t.Fatalf("control: untagged lock and fence keys share a slot; pick another name")
	}

	checkCycle(t, alone, name)

	// One master holds the lock key and its counter, the slot's only keys;
	// the others hold no key of that slot.
	l := acquireFenced(t, alone, name, 20*time.Second)
	var counts []int64
	for i := 0; i < 3; i++ {
		n, err := rc.Master(i).ClusterCountKeysInSlot(t.Context(), int(slot(key))).Result()
		if err != nil {
			t.Fatalf("master %d: CLUSTER COUNTKEYSINSLOT: %v", i, err)
		}
		counts = append(counts, n)
	}
	if owner, err := cc.MasterForKey(t.Context(), key); err != nil {
		t.Errorf("MasterForKey(%s) = %v", key, err)
	} else if n, err := owner.Exists(t.Context(), key, fenceKey).Result(); n != 2 || err != nil {
		t.Errorf("EXISTS %s %s on its master = %d, %v; want 2", key, fenceKey, n, err)
	}
	if total := counts[0] + counts[1] + counts[2]; total != 2 {
		t.Errorf("keys in slot %d per master = %v; want 2 (lock and fence) on one master", slot(key), counts)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release = %v", err)
	}

	// As one of three nodes: the cycle, and a waiter in the fair queue
	// that gets the lock after the release.
	checkCycle(t, holder, name)
	assertNoLockKey(t, ns, key) // Release returns at a quorum: let the last delete land
	l = acquireFenced(t, holder, name, 20*time.Second)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		next, err := rival.Acquire(ctx, name, 20*time.Second, nil)
		if err == nil {
			if next.Fence() <= l.Fence() {
				err = fmt.Errorf("fence %d; want > %d", next.Fence(), l.Fence())
			}
			if rerr := next.Release(ctx); err == nil {
				err = rerr
			}
		}
		got <- err
	}()
	waitUntil(t, "the waiter is queued on a quorum", func() bool {
		queued := 0
		for _, n := range ns {
			if c, _ := n.ZCard(t.Context(), q).Result(); c == 1 {
				queued++
			}
		}
		return queued >= 2
	})
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter: %v; want the lock with a larger fence", err)
	}
	assertNoLockKey(t, ns, key)

	// A name with a brace would change the hash tag: refused, nothing written.
	for _, bad := range []string{"a{b", "a}b", "{x}"} {
		_, err := holder.Acquire(t.Context(), bad, 20*time.Second, nil)
		if err == nil || !strings.Contains(err.Error(), "contains '{' or '}'") {
			t.Errorf("Acquire(%q) = %v; want the hash tag error", bad, err)
		}
		k, f := holder.Keys(bad)
		for _, key := range []string{k, f} {
			if n, err := cc.Exists(t.Context(), key).Result(); err != nil || n != 0 {
				t.Errorf("EXISTS %s = %d, %v; want 0 (nothing written)", key, n, err)
			}
		}
	}
}
