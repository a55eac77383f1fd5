package redlock

import (
	"testing"
	"time"
)

// TestReentrantScriptsTreatOtherFormAsNotOurs runs every extend, release
// and cleanup script of one form on a key of the other form with the
// holder's own token: each must answer "not ours" and change nothing.
func TestReentrantScriptsTreatOtherFormAsNotOurs(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	const tok = "T1x"
	k := keysOf(DefaultKeyPrefix, "reentrant-forms")
	key := k.lock
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
			return extendPlainScript.Run(ctx, rdb, []string{key}, tok+".", "1000").Int64()
		}},
		{"plain release on a hash", setHash, func() (int64, error) {
			return releasePlainScript.Run(ctx, rdb, []string{key}, tok+".", "ch").Int64()
		}},
		{"plain cleanup on a hash", setHash, func() (int64, error) {
			return cleanupPlainScript.Run(ctx, rdb, []string{key}, tok+".1", "ch").Int64()
		}},
		{"hold extend on a string", setPlain, func() (int64, error) {
			return holdExtendScript.Run(ctx, rdb, []string{key}, tok, tok, "1000", "0").Int64()
		}},
		{"hold add on a string", setPlain, func() (int64, error) {
			return holdExtendScript.Run(ctx, rdb, []string{key}, tok, "other", "1000", "1").Int64()
		}},
		{"hold release on a string", setPlain, func() (int64, error) {
			return holdReleaseScript.Run(ctx, rdb, []string{key}, tok, tok, "ch", "").Int64()
		}},
		{"hold cleanup on a string", setPlain, func() (int64, error) {
			return holdReleaseScript.Run(ctx, rdb, []string{key}, tok, tok, "", "1").Int64()
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
	c := newTestClient(t, nodes(t, 1), nil)
	name := "reentrant-resent"
	key, _ := c.Keys(name)
	outer := reentrant(t, c, name, 10*time.Second, "")
	inner, err := outer.Reenter(t.Context(), 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, qt := c.keys(name).queue, c.keys(name).queueTimes
	for i := 0; i < 2; i++ {
		got, err := holdReleaseScript.Run(t.Context(), nodes(t, 1)[0], []string{key, q, qt}, inner.Token(), inner.ls.hold, "ch", "").Int64()
		if want := []int64{2, 0}[i]; err != nil || got != want {
			t.Errorf("release of the nested hold, send %d = %d, %v; want %d", i+1, got, err, want)
		}
	}
	wantHolds(t, c, name, 1)
	if err := outer.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertNoLockKey(t, nodes(t, 1), key)
}
