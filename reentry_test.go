package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of the re-entrant form against real Redis (docs/design.md,
// "Re-entry and resume").

// reentrant acquires name in the re-entrant form, released when the test
// ends if the test has not.
func reentrant(t *testing.T, c *Client, name string, ttl time.Duration, meta string) *Lock {
	t.Helper()
	l, err := c.Acquire(t.Context(), name, ttl, &AcquireOptions{Reentrant: true, Metadata: meta})
	if err != nil {
		t.Fatalf("Acquire(%q, Reentrant) = %v; want the lock", name, err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	return l
}

// holdsOn returns the number of holds each node keeps the key for (-1:
// no key there).
func holdsOn(t *testing.T, c *Client, name string) []int {
	t.Helper()
	st, err := c.Inspect(t.Context(), name)
	if err != nil {
		t.Fatalf("Inspect(%q) = %v", name, err)
	}
	out := make([]int, len(st.Nodes))
	for i, ns := range st.Nodes {
		out[i] = -1
		if ns.Err != nil {
			t.Fatalf("Inspect(%q): node %d: %v", name, i, ns.Err)
		}
		if ns.Held {
			out[i] = ns.Holds
		}
	}
	return out
}

// wantHolds checks that every node keeps name for want holds, once the
// calls in flight have landed (a round returns at its quorum).
func wantHolds(t *testing.T, c *Client, name string, want int) {
	t.Helper()
	got := holdsOn(t, c, name)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); got = holdsOn(t, c, name) {
		same := true
		for _, n := range got {
			same = same && n == want
		}
		if same {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i, got := range got {
		if got != want {
			t.Errorf("node %d keeps %q for %d holds; want %d", i, name, got, want)
		}
	}
}

func TestReentrantNestedAcquireReleaseCounts(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		c := newTestClient(t, nodes(n), nil)
		name := "reentrant-counts"
		key, _ := c.Keys(name)
		outer := reentrant(t, c, name, 10*time.Second, "")
		wantHolds(t, c, name, 1)
		inner1, err := outer.Reenter(t.Context(), 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Reenter = %v", err)
		}
		inner2, err := inner1.Reenter(t.Context(), 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Reenter of a nested lock = %v", err)
		}
		wantHolds(t, c, name, 3)
		for _, l := range []*Lock{inner1, inner2} {
			if l.Fence() != outer.Fence() || l.Token() != outer.Token() || l.Name() != name {
				t.Errorf("nested lock: fence %d token %q name %q; want the outer's %d %q %q",
					l.Fence(), l.Token(), l.Name(), outer.Fence(), outer.Token(), name)
			}
		}
		if err := inner2.Release(t.Context()); err != nil {
			t.Fatalf("Release(inner2) = %v", err)
		}
		wantHolds(t, c, name, 2)
		// The outer hold goes first: the lock stays held for inner1.
		if err := outer.Release(t.Context()); err != nil {
			t.Fatalf("Release(outer) = %v", err)
		}
		wantHolds(t, c, name, 1)
		if _, err := c.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry(), Reentrant: true}); !errors.Is(err, ErrHeld) {
			t.Errorf("Acquire by another owner while a nested hold is left = %v; want ErrHeld", err)
		}
		if err := inner1.Extend(t.Context(), 10*time.Second); err != nil {
			t.Errorf("Extend of the last hold = %v", err)
		}
		if err := inner1.Release(t.Context()); err != nil {
			t.Fatalf("Release(inner1) = %v", err)
		}
		assertNoLockKey(t, nodes(n), key)
		if _, err := outer.Reenter(t.Context(), time.Second, nil); !errors.Is(err, ErrNotAcquired) {
			t.Errorf("Reenter of a released lock = %v; want ErrNotAcquired", err)
		}
	})
}

func TestReentrantTTLNeverShortened(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	name := "reentrant-ttl"
	key, _ := c.Keys(name)
	outer := reentrant(t, c, name, 20*time.Second, "")
	pttls := func() []time.Duration {
		var out []time.Duration
		for _, nd := range nodes(3) {
			out = append(out, nd.PTTL(t.Context(), key).Val())
		}
		return out
	}
	inner, err := outer.Reenter(t.Context(), time.Second, nil)
	if err != nil {
		t.Fatalf("Reenter = %v", err)
	}
	if err := inner.Extend(t.Context(), 500*time.Millisecond); err != nil {
		t.Fatalf("Extend(500ms) = %v", err)
	}
	for i, d := range pttls() {
		if d < 15*time.Second {
			t.Errorf("node %d: PTTL %v after a nested acquire of 1s and an extend of 500ms; want the outer 20s kept", i, d)
		}
	}
	// The nested lock's own deadline follows its own TTL, not the key's.
	if left := time.Until(inner.ValidUntil()); left > 500*time.Millisecond {
		t.Errorf("nested lock valid for %v more; want at most its own 500ms", left)
	}
	// A longer TTL raises the key's.
	longer, err := outer.Reenter(t.Context(), 40*time.Second, nil)
	if err != nil {
		t.Fatalf("Reenter(40s) = %v", err)
	}
	wantHolds(t, c, name, 3) // the last node's answer has landed
	if err := outer.Extend(t.Context(), time.Second); err != nil {
		t.Fatalf("Extend(1s) = %v", err)
	}
	for i, d := range pttls() {
		if d < 35*time.Second {
			t.Errorf("node %d: PTTL %v after a nested acquire of 40s; want 40s kept", i, d)
		}
	}
	for _, l := range []*Lock{inner, longer, outer} {
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	assertNoLockKey(t, nodes(3), key)
}

func TestResumeFromSecondClient(t *testing.T) {
	for _, reent := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "Reentrant"}[reent], func(t *testing.T) {
			a := newTestClient(t, nodes(3), nil)
			b := newTestClient(t, nodes(3), nil)
			name := "resume-" + map[bool]string{false: "plain", true: "reentrant"}[reent]
			key, _ := a.Keys(name)
			l, err := a.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Reentrant: reent})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			text, err := l.Handle().MarshalText()
			if err != nil {
				t.Fatalf("MarshalText = %v", err)
			}
			h, err := ParseHandle(string(text))
			if err != nil {
				t.Fatalf("ParseHandle(%q) = %v", text, err)
			}
			start := time.Now()
			r, err := b.Resume(t.Context(), h, 5*time.Second, nil)
			if err != nil {
				t.Fatalf("Resume = %v", err)
			}
			if r.Fence() != l.Fence() || r.Token() != l.Token() || r.Name() != name {
				t.Errorf("resumed: fence %d token %q; want %d %q", r.Fence(), r.Token(), l.Fence(), l.Token())
			}
			if u := r.ValidUntil(); u.Before(start) || u.After(start.Add(5*time.Second)) {
				t.Errorf("resumed lock valid until %v; want within its own 5s from %v", u, start)
			}
			if err := r.Extend(t.Context(), 5*time.Second); err != nil {
				t.Errorf("Extend of the resumed lock = %v", err)
			}
			if err := r.Release(t.Context()); err != nil {
				t.Fatalf("Release of the resumed lock = %v", err)
			}
			if reent {
				// Its own hold went; the sender's is left.
				wantHolds(t, a, name, 1)
				if err := l.Extend(t.Context(), 5*time.Second); err != nil {
					t.Errorf("sender's Extend after the resumed hold was released = %v", err)
				}
			} else {
				// One lease shared: the key is gone for both.
				assertNoLockKey(t, nodes(3), key)
				if err := l.Extend(t.Context(), 5*time.Second); !errors.Is(err, ErrLost) {
					t.Errorf("sender's Extend after the resumed lock was released = %v; want ErrLost", err)
				}
			}
			l.Release(t.Context())
			assertNoLockKey(t, nodes(3), key)
		})
	}
}

// forged is a lock of c on name with a token of its own, as someone who
// knows the name but not the token would make it.
func forged(c *Client, name string, ttl time.Duration, reent bool) *Lock {
	ls := c.newLease(name, ttl, true)
	ls.queueKey, ls.queueTimesKey = queueKeys(ls.key)
	if reent {
		ls.hold = ls.token
	}
	return newLock(c, ls, 1, time.Now().Add(ttl), &call{leaveTurn: func() {}})
}

func TestResumeWrongTokenRejected(t *testing.T) {
	for _, reent := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "Reentrant"}[reent], func(t *testing.T) {
			c := newTestClient(t, nodes(3), nil)
			name := "wrong-token-" + map[bool]string{false: "plain", true: "reentrant"}[reent]
			key, _ := c.Keys(name)
			l, err := c.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Reentrant: reent})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			defer l.Release(context.Background())
			wantHolds(t, c, name, 1) // the last node's answer has landed
			snapshot := func() []string {
				var out []string
				for _, nd := range nodes(3) {
					if reent {
						out = append(out, strings.Join(nd.HKeys(t.Context(), key).Val(), ","))
					} else {
						out = append(out, nd.Get(t.Context(), key).Val())
					}
				}
				return out
			}
			before := snapshot()

			h := l.Handle()
			h.token = newToken()
			text, _ := h.MarshalText()
			bad, err := ParseHandle(string(text))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Resume(t.Context(), bad, time.Second, nil); !errors.Is(err, ErrNotAcquired) {
				t.Errorf("Resume with a wrong token = %v; want ErrNotAcquired", err)
			}
			f := forged(c, name, time.Second, reent)
			if err := f.Extend(t.Context(), 30*time.Second); !errors.Is(err, ErrLost) {
				t.Errorf("Extend with a wrong token = %v; want ErrLost", err)
			}
			f = forged(c, name, time.Second, reent)
			f.Release(t.Context())
			if after := snapshot(); strings.Join(after, "|") != strings.Join(before, "|") {
				t.Errorf("keys after a wrong token's resume, extend and release: %q; want unchanged %q", after, before)
			}
			for i, nd := range nodes(3) {
				if d := nd.PTTL(t.Context(), key).Val(); d > 10*time.Second || d <= 0 {
					t.Errorf("node %d: PTTL %v; want the holder's 10s, not the forger's 30s", i, d)
				}
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatalf("Release = %v", err)
			}
			assertNoLockKey(t, nodes(3), key)
		})
	}
}

func TestReentrantCrashedHolderFreesAfterTTL(t *testing.T) {
	name := "reentrant-crash"
	crashed := newTestClient(t, nodes(3), nil)
	outer := reentrant(t, crashed, name, 700*time.Millisecond, "job 7")
	if _, err := outer.Reenter(t.Context(), 700*time.Millisecond, nil); err != nil {
		t.Fatalf("Reenter = %v", err)
	}
	crashed.Close() // no release: the holder is gone

	c := newTestClient(t, nodes(3), nil)
	if _, err := c.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire while the crashed holder's TTL runs = %v; want ErrHeld", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire after the crashed holder's TTL = %v; want the lock", err)
	}
	if l.Fence() <= outer.Fence() {
		t.Errorf("fence %d after the crashed holder's %d; want larger", l.Fence(), outer.Fence())
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	key, _ := c.Keys(name)
	assertNoLockKey(t, nodes(3), key)
}

func TestReentrantAndPlainExclude(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	name := "reentrant-vs-plain"
	key, _ := c.Keys(name)
	try := &AcquireOptions{Retry: NoRetry()}
	tryReentrant := &AcquireOptions{Retry: NoRetry(), Reentrant: true}
	for _, tc := range []struct {
		holder, other *AcquireOptions
		what          string
	}{
		{try, tryReentrant, "re-entrant Acquire of a plain lock"},
		{tryReentrant, try, "plain Acquire of a re-entrant lock"},
	} {
		l, err := c.Acquire(t.Context(), name, 10*time.Second, tc.holder)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Acquire(t.Context(), name, time.Second, tc.other)
		if !errors.Is(err, ErrHeld) || strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("%s = %v; want ErrHeld, no WRONGTYPE", tc.what, err)
		}
		var qe *QuorumError
		if !errors.As(err, &qe) || qe.Held < 2 {
			t.Errorf("%s: %v; want at least 2 of 3 nodes to say held", tc.what, err)
		}
		if err := l.Extend(t.Context(), 10*time.Second); err != nil {
			t.Errorf("holder's Extend after the other form's attempt = %v", err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		assertNoLockKey(t, nodes(3), key)
	}
}

// TestReentrantScriptsTreatOtherFormAsNotOurs runs every extend, release
// and cleanup script of one form on a key of the other form with the
// holder's own token: each must answer "not ours" and change nothing.
func TestReentrantScriptsTreatOtherFormAsNotOurs(t *testing.T) {
	rdb := nodes(1)[0]
	ctx := t.Context()
	const key, tok = "redlock:{reentrant-forms}", "T1x"
	q, qt := queueKeys(key)
	setPlain := func() { rdb.Del(ctx, key); rdb.Set(ctx, key, tok+".1", time.Minute) }
	setHash := func() {
		rdb.Del(ctx, key)
		rdb.HSet(ctx, key, "rl-owner", tok, "rl-fence", "1", "rl-ttl", "60000", "rl-meta", "", "h:"+tok, "1")
		rdb.PExpire(ctx, key, time.Minute)
	}
	for _, tc := range []struct {
		what  string
		setup func()
		run   func() (int64, error)
	}{
		{"plain extend on a hash", setHash, func() (int64, error) {
			return extendScript.Run(ctx, rdb, []string{key}, tok+".", "1000").Int64()
		}},
		{"plain release on a hash", setHash, func() (int64, error) {
			return releaseScript.Run(ctx, rdb, []string{key, q, qt}, tok+".", "ch").Int64()
		}},
		{"plain cleanup on a hash", setHash, func() (int64, error) {
			return cleanupScript.Run(ctx, rdb, []string{key}, tok+".1").Int64()
		}},
		{"hold extend on a string", setPlain, func() (int64, error) {
			return holdExtendScript.Run(ctx, rdb, []string{key}, tok, tok, "1000", "0").Int64()
		}},
		{"hold add on a string", setPlain, func() (int64, error) {
			return holdExtendScript.Run(ctx, rdb, []string{key}, tok, "other", "1000", "1").Int64()
		}},
		{"hold release on a string", setPlain, func() (int64, error) {
			return holdReleaseScript.Run(ctx, rdb, []string{key, q, qt}, tok, tok, "ch", "").Int64()
		}},
		{"hold cleanup on a string", setPlain, func() (int64, error) {
			return holdReleaseScript.Run(ctx, rdb, []string{key, q, qt}, tok, tok, "", "1").Int64()
		}},
	} {
		tc.setup()
		before := rdb.Dump(ctx, key).Val()
		got, err := tc.run()
		if err != nil || got != 0 {
			t.Errorf("%s = %d, %v; want 0 (not ours)", tc.what, got, err)
		}
		if after := rdb.Dump(ctx, key).Val(); after != before || rdb.PTTL(ctx, key).Val() < 50*time.Second {
			t.Errorf("%s changed the key", tc.what)
		}
	}
	rdb.Del(ctx, key)
}

// TestReentrantHoldReleaseIdempotent: a release resent after a lost reply
// removes nothing more, so it can never free the key of another hold (a
// counter decremented twice would).
func TestReentrantHoldReleaseIdempotent(t *testing.T) {
	c := newTestClient(t, nodes(1), nil)
	name := "reentrant-resent"
	key, _ := c.Keys(name)
	outer := reentrant(t, c, name, 10*time.Second, "")
	inner, err := outer.Reenter(t.Context(), 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, qt := queueKeys(key)
	for i := 0; i < 2; i++ {
		got, err := holdReleaseScript.Run(t.Context(), nodes(1)[0], []string{key, q, qt}, inner.Token(), inner.ls.hold, "ch", "").Int64()
		if want := []int64{2, 0}[i]; err != nil || got != want {
			t.Errorf("release of the nested hold, send %d = %d, %v; want %d", i+1, got, err, want)
		}
	}
	wantHolds(t, c, name, 1)
	if err := outer.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertNoLockKey(t, nodes(1), key)
}

func TestReentrantMetadataAndBadInput(t *testing.T) {
	c := newTestClient(t, nodes(1), nil)
	_, err := c.Acquire(t.Context(), "meta-too-long", time.Second, &AcquireOptions{Metadata: strings.Repeat("x", MaxMetadataLen+1)})
	if err == nil || !strings.HasPrefix(err.Error(), "redlock: Metadata of 257 bytes") {
		t.Errorf("Acquire with long Metadata = %v; want a redlock: error naming its size", err)
	}
	if _, err := c.Acquire(t.Context(), "meta-bad", time.Second, &AcquireOptions{Metadata: "\xff"}); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("Acquire with non-UTF-8 Metadata = %v; want an error", err)
	}
	for _, name := range []string{"meta-too-long", "meta-bad"} {
		key, _ := c.Keys(name)
		assertNoLockKey(t, nodes(1), key)
	}
	plain, err := c.Acquire(t.Context(), "reenter-plain", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Release(context.Background())
	if _, err := plain.Reenter(t.Context(), time.Second, nil); err == nil || !strings.Contains(err.Error(), "AcquireOptions.Reentrant") {
		t.Errorf("Reenter of a plain lock = %v; want an error saying to use AcquireOptions.Reentrant", err)
	}
}

// deleteOn deletes key on the given nodes.
func deleteOn(t *testing.T, ns []redis.UniversalClient, key string, which ...int) {
	t.Helper()
	for _, i := range which {
		if err := ns[i].Del(t.Context(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReentrantWaiterWokenByLastHold: a waiter queued behind a re-entrant
// lock stays queued while any hold is left, and is woken when the last one
// goes (the hold release script announces the release as release.lua does).
func TestReentrantWaiterWokenByLastHold(t *testing.T) {
	c := newTestClient(t, nodes(3), nil)
	name := "reentrant-waiter"
	key, _ := c.Keys(name)
	outer := reentrant(t, c, name, time.Minute, "")
	inner, err := outer.Reenter(t.Context(), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiter := newTestClient(t, nodes(3), nil)
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		l, err := waiter.Acquire(ctx, name, time.Second, &AcquireOptions{Reentrant: true})
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	if err := outer.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantHolds(t, c, name, 1)
	select {
	case err := <-got:
		t.Fatalf("waiter returned %v while a nested hold was left; want it to wait", err)
	default:
	}
	if err := inner.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter after the last hold was released = %v; want the lock (the holds had a minute left)", err)
	}
	assertNoLockKey(t, nodes(3), key)
}
