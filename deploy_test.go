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

// lockUserRules is the minimal ACL of a lock user, as the README gives it
// ("Minimal ACL") for the default KeyPrefix, without the user's name and
// password.
var lockUserRules = []string{
	"resetkeys", "resetchannels", "-@all",
	"+ping",
	"+evalsha", "+eval",
	"+subscribe", "+unsubscribe", "+publish",
	"+type", "+exists", "+get", "+set", "+del", "+incr", "+pexpire", "+pttl", "+time",
	"+zadd", "+zrem", "+zrange", "+zrangebyscore", "+zrank", "+zscan",
	"~redlock:*", "&redlock:released:*",
}

// aclUser creates user (password "pw-"+user) with rules on every node,
// deleted when the test ends, and returns clients logged in as it.
func aclUser(t *testing.T, admin []redis.UniversalClient, user string, rules []string) []redis.UniversalClient {
	t.Helper()
	users := make([]redis.UniversalClient, len(admin))
	for i, a := range admin {
		args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw-" + user}
		for _, r := range rules {
			args = append(args, r)
		}
		if err := a.Do(t.Context(), args...).Err(); err != nil {
			t.Fatalf("node %d: ACL SETUSER %s: %v", i, user, err)
		}
		t.Cleanup(func() { a.Do(context.Background(), "ACL", "DELUSER", user) })
		opt := a.(*redis.Client).Options()
		cl := redis.NewClient(&redis.Options{Addr: opt.Addr, Username: user, Password: "pw-" + user, ContextTimeoutEnabled: true})
		t.Cleanup(func() { cl.Close() })
		users[i] = cl
	}
	return users
}

// without returns rules without the ones in drop, with add appended.
func without(rules []string, drop []string, add ...string) []string {
	var out []string
	for _, r := range rules {
		keep := true
		for _, d := range drop {
			keep = keep && r != d
		}
		if keep {
			out = append(out, r)
		}
	}
	return append(out, add...)
}

func TestACLMinimalUser(t *testing.T) {
	admin := nodes(3)
	users := aclUser(t, admin, "locker", lockUserRules)
	c := newTestClient(t, users, nil)
	checkCycle(t, c, "acl")

	// A fair-queue waiter (another Client: one Client hands a lock to its
	// own waiters locally) whose retry delay is an hour gets the lock by
	// the release notice alone: SUBSCRIBE and PUBLISH work for the user.
	const name = "acl-wake"
	other := newTestClient(t, users, nil)
	holder := acquireFenced(t, c, name, time.Minute)
	hour := func(int) (time.Duration, bool) { return time.Hour, true }
	got := make(chan *Lock, 1)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := other.Acquire(ctx, name, time.Minute, &AcquireOptions{Retry: hour, AutoExtend: true})
		if err != nil {
			errc <- err
			return
		}
		got <- l
	}()
	key, _ := c.Keys(name)
	qkey, _ := queueKeys(key)
	waitUntil(t, "the waiter is queued and subscribed on every node", func() bool {
		select {
		case err := <-errc:
			t.Fatalf("waiter: %v", err)
		default:
		}
		for _, a := range admin {
			n, _ := a.ZCard(t.Context(), qkey).Result()
			chans, _ := a.PubSubChannels(t.Context(), other.releaseChannel(key)+":"+other.waker.id).Result()
			if n != 1 || len(chans) == 0 {
				return false
			}
		}
		return true
	})
	if err := holder.Release(t.Context()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	select {
	case l := <-got:
		if l.Fence() <= holder.Fence() {
			t.Errorf("waiter's fence %d; want > %d", l.Fence(), holder.Fence())
		}
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("waiter's Release = %v", err)
		}
	case err := <-errc:
		t.Fatalf("waiter: %v; want the lock after the holder's release", err)
	}
	assertNoLockKey(t, admin, key)
}

func TestACLMissingPermission(t *testing.T) {
	tests := []struct {
		name  string
		rules []string
	}{
		{"no scripts", without(lockUserRules, []string{"+evalsha", "+eval"})},
		{"no lock keys", without(lockUserRules, []string{"~redlock:*"}, "~other:*")},
		{"no INCR in the script", without(lockUserRules, []string{"+incr"})},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			admin := nodes(3)
			c := newTestClient(t, aclUser(t, admin, fmt.Sprintf("denied%d", i), tt.rules), nil)
			// The default retry would go on until ctx ends: a permanent
			// node error must end the wait at the first attempt.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			_, err := c.Acquire(ctx, "acl-denied", 5*time.Second, nil)
			var qe *QuorumError
			if !errors.As(err, &qe) || !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("Acquire = %v; want a QuorumError matching ErrNotAcquired", err)
			}
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || qe.Attempts != 1 {
				t.Errorf("Acquire = %v after %d attempts; want it to give up at the first, before ctx ends", err, qe.Attempts)
			}
			// The round ends when a quorum is impossible: a node may not
			// have answered by then, every other one was refused.
			refused := 0
			for i, ne := range qe.Nodes {
				var te nodeTimeoutError
				switch {
				case errors.Is(ne, ErrNoPerm):
					refused++
				case !errors.As(ne, &te):
					t.Errorf("node %d: %v; want an ACL refusal", i, ne)
				}
			}
			if refused < 2 || !strings.Contains(err.Error(), "Minimal ACL") {
				t.Errorf("Acquire = %v; want at least 2 nodes refused by their ACL, and the error to point to the README's Minimal ACL", err)
			}
			key, fenceKey := c.Keys("acl-denied")
			assertNoLockKey(t, admin, key)
			for _, a := range admin {
				a.Del(context.Background(), fenceKey, key+":q", key+":qt")
			}
		})
	}
}

// waitUntil polls cond every 10ms for up to 10s and fails the test if it
// never holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
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
	ns := append([]redis.UniversalClient{s.Client()}, nodes(2)...)
	holder := newTestClient(t, ns, nil)
	rival := newTestClient(t, ns, nil)
	const name = "sentinel-failover"
	l := acquireFenced(t, holder, name, 20*time.Second)

	newMaster, err := s.Failover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s", newMaster)
	// The worst case of an asynchronous failover: the promoted replica
	// missed the key and the counter's last increment. Make it so.
	key, fenceKey := holder.Keys(name)
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

// TestClusterNode runs a lock over a 3-master Redis Cluster and two plain
// masters.
func TestClusterNode(t *testing.T) {
	rc := redlocktest.StartRedisCluster(t, 3, nil)
	cc := rc.Client()
	ns := append([]redis.UniversalClient{cc}, nodes(2)...)
	holder := newTestClient(t, ns, nil)
	rival := newTestClient(t, ns, nil)
	const name = "cluster-lock"

	// The lock, fence and queue keys share the slot of the hash tag.
	key, fenceKey := holder.Keys(name)
	q, qt := queueKeys(key)
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

	checkCycle(t, holder, name)

	// One master holds the lock key and its counter, the slot's only keys;
	// the others hold no key of that slot.
	l := acquireFenced(t, holder, name, 20*time.Second)
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

	// A waiter in the fair queue gets the lock after the release.
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
	waitUntil(t, "the waiter is queued on the Redis Cluster", func() bool {
		n, _ := cc.ZCard(t.Context(), q).Result()
		return n == 1
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

// TestACLErrorsArePermanent covers the ACL refusals of the Redis versions
// not run here: a script's refused call is "ERR The user executing the
// script can't ..." up to Redis 7.1 and "ERR ACL failure in script: ..."
// from 7.2.
func TestACLErrorsArePermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{redisError("NOPERM User locker has no permissions to run the 'evalsha' command"), true},
		{redisError("ERR The user executing the script can't run this command or subcommand script: 1f0a, on @user_script:116."), true},
		{redisError("ERR ACL failure in script: User locker has no permissions to run the 'incr' command script: 1f0a, on @user_script:116."), true},
		{redisError("ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: 1f0a"), false},
		{errors.New("ERR ACL failure in script, but not from a node"), false},
	} {
		if got := deniedByACL(tc.err); got != tc.want {
			t.Errorf("deniedByACL(%v) = %v; want %v", tc.err, got, tc.want)
		}
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v; want %v", tc.err, got, tc.want)
		}
		ne := &NodeError{Node: 0, Addr: "a", Err: aclError{tc.err}}
		if tc.want && (!errors.Is(ne, ErrNoPerm) || !strings.Contains(ne.Error(), "Minimal ACL")) {
			t.Errorf("%v: want it to match ErrNoPerm and point to the README", ne)
		}
	}
}
