package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquireScriptCase is one situation the acquire script meets on a node:
// what the keys hold before it runs, and how it is called.
type acquireScriptCase struct {
	what  string
	setup func(ctx context.Context, rdb redis.UniversalClient, key, q, qt string)
	mode  string // ARGV[4]: queueWait, queueTry, or queueBarge
	hash  bool   // the re-entrant form
	value string // ARGV[1]; "T1.2" unless set
}

// acquireScriptCases covers each path of the script: a free key (the
// common case, in either form and every mode), a free key with a waiter
// queued, a key held by another call (either form), and the call's own
// key, resent or from an earlier attempt.
func acquireScriptCases() []acquireScriptCase {
	holdPlain := func(v string) func(context.Context, redis.UniversalClient, string, string, string) {
		return func(ctx context.Context, rdb redis.UniversalClient, key, _, _ string) {
			rdb.Set(ctx, key, v, time.Minute)
		}
	}
	holdHash := func(ctx context.Context, rdb redis.UniversalClient, key, _, _ string) {
		rdb.HSet(ctx, key, "rl-owner", "T9", "rl-fence", "1", "rl-ttl", "60000", "rl-meta", "", "h:T9", "1")
		rdb.PExpire(ctx, key, time.Minute)
	}
	waiter := func(ctx context.Context, rdb redis.UniversalClient, _, q, qt string) {
		rdb.ZAdd(ctx, q, redis.Z{Score: 1, Member: "T8:c"})
		rdb.ZAdd(ctx, qt, redis.Z{Score: 1 << 50, Member: "T8:c"})
		rdb.PExpire(ctx, q, time.Minute)
		rdb.PExpire(ctx, qt, time.Minute)
	}
	free := func(context.Context, redis.UniversalClient, string, string, string) {}
	return []acquireScriptCase{
		{what: "free, try", setup: free, mode: queueTry},
		{what: "free, wait", setup: free, mode: queueWait},
		{what: "free, barge", setup: free, mode: queueBarge},
		{what: "free, re-entrant", setup: free, mode: queueTry, hash: true},
		{what: "free, a waiter queued", setup: waiter, mode: queueWait},
		{what: "held by another", setup: holdPlain("T9.1"), mode: queueWait},
		{what: "held by another in the re-entrant form", setup: holdHash, mode: queueTry},
		{what: "resent", setup: holdPlain("T1.2"), mode: queueTry},
		{what: "held by an earlier attempt", setup: holdPlain("T1.1"), mode: queueBarge},
	}
}

// runAcquireScript runs the acquire script of tc's form as tc says,
// fenced, for the call "T1" with the queue entry "T1:c"; the counter and
// the queue are the lock key's (fenceKey, q, qt: what the script derives).
func runAcquireScript(ctx context.Context, rdb redis.UniversalClient, tc acquireScriptCase, key, fenceKey, q, qt string) (string, error) {
	if fenceKey != key+":fence" || q != key+":q" || qt != key+":qt" {
		return "", fmt.Errorf("keys %q, %q, %q are not the ones lock key %q derives", fenceKey, q, qt, key)
	}
	v := tc.value
	if v == "" {
		v = "T1.2"
	}
	argv := []any{v, "60000", "1", tc.mode}
	if tc.mode == queueWait {
		argv = append(argv, "T1:c", "100", "60000")
	}
	if tc.hash {
		return holdAcquireScript.Run(ctx, rdb, []string{key}, append(argv, "meta")...).Text()
	}
	res, err := acquirePlainScript.Run(ctx, rdb, []string{key}, argv...).Result()
	return takeText(res), err
}

// A counter INCR would refuse, or take below 1, fails the acquire script
// on every path with BADCOUNTER (or WRONGTYPE, for a counter of another
// type), and leaves every key as it was: the common path checks it with
// the INCR itself, and puts back what that INCR changed.
func TestAcquireScriptBadCounterTouchesNothing(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	k := keysOf(DefaultKeyPrefix, "acquire-bad-counter")
	key, fenceKey, q, qt := k.lock, k.fence, k.queue, k.queueTimes
	all := []string{key, fenceKey, q, qt}
	for _, bad := range []string{"abc", "", "-5", "-1", "-2", "-10", "-200", "-1099", "-0", "007", "+5", "1.5", " 5",
		"9223372036854775807", "99999999999999999999", "-9223372036854775807", "-9223372036854775808", "hash"} {
		want := "BADCOUNTER"
		if bad == "hash" {
			want = "WRONGTYPE fence counter"
		}
		for _, tc := range acquireScriptCases() {
			rdb.Del(ctx, all...)
			tc.setup(ctx, rdb, key, q, qt)
			if bad == "hash" {
				rdb.HSet(ctx, fenceKey, "f", "v")
			} else {
				rdb.Set(ctx, fenceKey, bad, time.Hour) // a TTL of its own, kept too
			}
			before := make([]string, len(all))
			for i, k := range all {
				before[i] = rdb.Dump(ctx, k).Val()
			}
			got, err := runAcquireScript(ctx, rdb, tc, key, fenceKey, q, qt)
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("counter %q, %s: acquire = %q, %v; want %s", bad, tc.what, got, err, want)
			}
			for i, k := range all {
				if after := rdb.Dump(ctx, k).Val(); after != before[i] {
					t.Errorf("counter %q, %s: %s changed", bad, tc.what, k)
				}
			}
			if got := rdb.Get(ctx, fenceKey).Val(); bad != "hash" && got != bad {
				t.Errorf("counter %q, %s: counter %q after", bad, tc.what, got)
			}
			if ttl := rdb.PTTL(ctx, fenceKey).Val(); bad != "hash" && ttl < 59*time.Minute {
				t.Errorf("counter %q, %s: counter TTL %v after; want about an hour, as before", bad, tc.what, ttl)
			}
		}
	}
	rdb.Del(ctx, all...)
}

// The acquire script's reply, one string, on each path, read by parseTake:
// granted with the incremented fence, refused with the holder's TTL, or
// with no TTL and the caller's rank when it queues behind a waiter.
func TestAcquireScriptReplies(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	k := keysOf(DefaultKeyPrefix, "acquire-replies")
	key, fenceKey, q, qt := k.lock, k.fence, k.queue, k.queueTimes
	all := []string{key, fenceKey, q, qt}
	const counter = 1<<53 + 1 // past 2^53: exact only as a string
	for _, tc := range acquireScriptCases() {
		rdb.Del(ctx, all...)
		tc.setup(ctx, rdb, key, q, qt)
		rdb.Set(ctx, fenceKey, uint64(counter), 0)
		s, err := runAcquireScript(ctx, rdb, tc, key, fenceKey, q, qt)
		if err != nil {
			t.Errorf("%s: acquire = %v", tc.what, err)
			continue
		}
		g, err := parseTake(s)
		if err != nil {
			t.Errorf("%s: parseTake(%q) = %v", tc.what, s, err)
			continue
		}
		switch tc.what {
		case "held by another", "held by another in the re-entrant form":
			if g.ok || g.pttl < 50000 || g.pttl > 60000 || (g.rank >= 0) != (tc.mode == queueWait) {
				t.Errorf("%s: reply %q = %+v; want refused with the holder's TTL, ranked only when waiting", tc.what, s, g)
			}
		case "free, a waiter queued":
			if g.ok || g.pttl != 0 || g.rank != 1 {
				t.Errorf("%s: reply %q = %+v; want refused, TTL 0, rank 1", tc.what, s, g)
			}
		default:
			if !g.ok || g.fence != counter+1 {
				t.Errorf("%s: reply %q = %+v; want granted with fence %d", tc.what, s, g, uint64(counter+1))
			}
		}
	}
	rdb.Del(ctx, all...)
}

// A lock user with the minimal ACL (README) meets a negative counter: the
// acquire fails with ErrBadCounter, and the counter is set back with the
// commands the user may call.
func TestAcquireBadCounterMinimalACL(t *testing.T) {
	users := aclUser(t, nodes(t, 3), "bad-counter-user", lockUserRules)
	c := newTestClient(t, users, nil)
	name := "bad-counter-acl"
	key, fenceKey := c.Keys(name)
	for _, nd := range nodes(t, 3) {
		nd.Set(t.Context(), fenceKey, "-7", 0)
	}
	_, err := c.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry()})
	if !errors.Is(err, ErrBadCounter) {
		t.Errorf("Acquire over the counter -7 = %v; want ErrBadCounter", err)
	}
	assertNoLockKey(t, nodes(t, 3), key)
	for i, nd := range nodes(t, 3) {
		if got := nd.Get(t.Context(), fenceKey).Val(); got != "-7" {
			t.Errorf("node %d: counter %q; want \"-7\", untouched", i, got)
		}
		nd.Del(t.Context(), fenceKey)
	}
}

func TestAcquireScriptAttempts(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	ls := c.newLease("idem", 10*time.Second, leaseSpec{fenced: true})
	cl := newCall(t.Context(), ls)
	w := newWaiter(ls, queueBarge, time.Now(), c.waker.id)
	try := func(cl *call, attempt int) *Lock {
		t.Helper()
		l, qerr := c.try(t.Context(), cl, w, attempt)
		if l != nil {
			t.Cleanup(func() { l.end(ErrReleased, 0) })
			return l
		}
		if !errors.Is(qerr, ErrHeld) {
			t.Fatalf("attempt %d: %v; want success or ErrHeld", attempt, qerr)
		}
		return nil
	}
	// holds checks every node once the calls still on their way (an
	// attempt returns at its quorum) have landed.
	holds := func(value string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for i, nd := range nodes(t, 3) {
			got, err := nd.Get(t.Context(), ls.keys.lock).Result()
			for got != value && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				got, err = nd.Get(t.Context(), ls.keys.lock).Result()
			}
			if got != value {
				t.Errorf("node %d: GET %s = %q, %v; want %q", i, ls.keys.lock, got, err, value)
			}
		}
	}
	l1 := try(cl, 1)
	// The reply was "lost": the same attempt is sent again and succeeds.
	l1b := try(cl, 1)
	if l1 == nil || l1b == nil {
		t.Fatalf("attempt 1 and its resend = %v, %v; want both to succeed", l1, l1b)
	}
	if l1b.Fence() <= l1.Fence() {
		t.Errorf("resent attempt fence %d; want > %d", l1b.Fence(), l1.Fence())
	}
	// A later attempt of the same call takes over attempt 1's key (a late
	// grant of ours must not lock us out).
	if try(cl, 2) == nil {
		t.Fatalf("attempt 2 over attempt 1's key failed; want success")
	}
	holds(ls.value(2))
	// A delayed request of attempt 1 never takes the key back, and its
	// cleanup never deletes attempt 2's key. It is sent with its own call
	// state: the call itself never goes back to an earlier attempt, and
	// reusing it would make attempt 2's own late replies (still on their
	// way from the last node) look stale and clean themselves up.
	if l := try(newCall(t.Context(), ls), 1); l != nil {
		t.Errorf("delayed attempt 1 after attempt 2 succeeded; want ErrHeld")
	}
	c.cleanup(t.Context(), ls, ls.value(1), allNodes(3))
	holds(ls.value(2))
	c.releaseAll(t.Context(), cl)
	assertNoLockKey(t, nodes(t, 3), ls.keys.lock)
}

// allNodes lists the indexes of n nodes.
func allNodes(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}
