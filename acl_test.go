package redlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests of this file run the library as a Redis user with the minimal
// ACL of the README, and with less.

// lockUserRules is the minimal ACL of a lock user, as the README gives it
// ("Minimal ACL") for the default KeyPrefix, without the user's name and
// password.
var lockUserRules = []string{
	"resetkeys", "resetchannels", "-@all",
	"+evalsha", "+eval", "+ping",
	"+subscribe", "+unsubscribe", "+publish",
	"+type", "+exists", "+get", "+set", "+del", "+incr", "+pexpire", "+pttl", "+time",
	"+zadd", "+zrem", "+zrange", "+zrangebyscore", "+zrank", "+zscan",
	"+hset", "+hget", "+hdel", "+hexists", "+hlen",
	"~redlock:*", "&redlock:released:*", "&redlock:elected:*",
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
	admin := nodes(t, 3)
	users := aclUser(t, admin, "locker", lockUserRules)
	c := newTestClient(t, users, patient)
	checkCycle(t, c, "acl")

	// The re-entrant form (a hash), a nested hold, and Inspect.
	outer, err := c.Acquire(t.Context(), "acl-reentrant", time.Minute, &AcquireOptions{Reentrant: true, Metadata: "acl-test"})
	if err != nil {
		t.Fatalf("re-entrant Acquire as the minimal user = %v", err)
	}
	inner, err := outer.Reenter(t.Context(), time.Minute, nil)
	if err != nil {
		t.Fatalf("Reenter as the minimal user = %v", err)
	}
	if st, err := c.Inspect(t.Context(), "acl-reentrant"); err != nil || !st.Held {
		t.Errorf("Inspect as the minimal user = %+v, %v; want held", st, err)
	}
	for _, l := range []*Lock{inner, outer} {
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release of a hold as the minimal user = %v", err)
		}
	}
	rkey, _ := c.Keys("acl-reentrant")
	assertNoLockKey(t, admin, rkey)

	// A waiter of another Client (one Client hands a lock to its own
	// waiters locally) queues in the fair order on every node and
	// subscribes to its release notices; the holder's release publishes
	// the notice naming it, and it gets the lock.
	const name = "acl-wake"
	other := newTestClient(t, users, patient)
	holder := acquireFenced(t, c, name, time.Minute)
	key, _ := c.Keys(name)
	qkey, _ := c.keys(name).queue, c.keys(name).queueTimes
	got := make(chan *Lock, 1)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := other.Acquire(ctx, name, time.Minute, &AcquireOptions{AutoExtend: true})
		if err != nil {
			errc <- err
			return
		}
		got <- l
	}()
	channel := other.keys(name).channel + ":" + other.waker.id
	var state []string // per node, for the failure message
	defer func() {
		if t.Failed() {
			t.Logf("holder %s; per node: %v", holder.Token(), state)
		}
	}()
	// A quorum is what counts: a node whose answer to the holder came
	// late (a loaded machine) may have been taken by the waiter instead.
	waitUntil(t, "the waiter is queued and subscribed on a quorum of the nodes", func() bool {
		select {
		case err := <-errc:
			t.Fatalf("waiter: %v", err)
		default:
		}
		state = state[:0]
		queued, subscribed := 0, 0
		for _, a := range admin {
			q, err1 := a.ZRange(t.Context(), qkey, 0, -1).Result()
			chans, err2 := a.PubSubChannels(t.Context(), channel).Result()
			state = append(state, fmt.Sprintf("queue %v (%v) channels %v (%v)", q, err1, chans, err2))
			if len(q) == 1 {
				queued++
			}
			if len(chans) > 0 {
				subscribed++
			}
		}
		return queued >= 2 && subscribed >= 2
	})
	// Inspect reads the queue with the minimal user's commands.
	if st, err := c.Inspect(t.Context(), name); err != nil || st.Depth != 1 || st.Head == nil || st.Head.Client != other.waker.id {
		t.Errorf("Inspect of the queue as the minimal user = %+v, %v; want the waiter at the head", st, err)
	}
	// Listen as admin too, to see the notices the user's release publishes.
	var subs []*redis.PubSub
	for i, a := range admin {
		ps := a.Subscribe(t.Context(), channel)
		defer ps.Close()
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Fatalf("node %d: SUBSCRIBE %s: %v", i, channel, err)
		}
		subs = append(subs, ps)
	}
	if err := holder.Release(t.Context()); err != nil {
		t.Fatalf("Release = %v", err)
	}
	notices := 0
	for _, ps := range subs {
		rctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		msg, err := ps.ReceiveMessage(rctx)
		cancel()
		// "<token>:<client>:<ttl>:<f> <fence>": the release granted the
		// waiter the key (release.lua), under the minimal ACL.
		entry, fence, granted := strings.Cut(msg.Payload, " ")
		if f := strings.Split(entry, ":"); err == nil && len(f) == 4 && f[1] == other.waker.id && granted && fence != "0" {
			notices++
		}
	}
	if notices == 0 {
		t.Errorf("no node published a release notice granting the waiter the key; want one from each node where it was queued")
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
			admin := nodes(t, 3)
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
			// have been awaited by then, every other one was refused.
			refused := 0
			for i, ne := range qe.Nodes {
				switch {
				case errors.Is(ne, ErrNoPerm):
					refused++
				case !errors.Is(ne, ErrNotAwaited):
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

// TestACLReadmeMatches keeps the README's minimal ACL and the rules the
// ACL tests run with the same.
func TestACLReadmeMatches(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "ACL SETUSER locker on >PASSWORD ")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("README.md has no \"ACL SETUSER locker on >PASSWORD ...\" block")
	}
	got := strings.Fields(strings.ReplaceAll(block, "\\\n", " "))
	if strings.Join(got, " ") != strings.Join(lockUserRules, " ") {
		t.Errorf("README's ACL rules:\n%v\nthe tests' (lockUserRules):\n%v\nwant the same", got, lockUserRules)
	}
}
