package redlock

import (
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/transport"

	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestModelStepsMatchScripts runs every node step the model restates
// (model_world_test.go) against the real Lua script on a real Redis, for
// every combination of a small set of node states and requests, and checks
// that both agree on the answer, the key left behind and the counter. The
// model's conclusions hold for the library only as far as this agreement
// goes; the model cannot drift from the scripts unnoticed.
func TestModelStepsMatchScripts(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	const key, ctrKey = "redlock:{model-conformance}", "redlock:{model-conformance}:fence"
	sn := &scriptNode{rdb: rdb, key: key, ctrKey: ctrKey}
	token, valueOf, setup, check := modelToken, modelValue, sn.setup, sn.check
	// The model's key states: absent, or a value of call 1 or 2, attempt 1
	// or 2 (the new protocol: every attempt writes "<token>.<attempt>").
	keys := []mval{{}, {1, 1}, {1, 2}, {2, 1}, {2, 2}}
	counters := []uint8{0, 4}
	run := func(s *transport.Script, keys []string, args ...any) (any, error) {
		return s.Run(ctx, rdb, keys, args...).Result()
	}
	steps := 0
	// Every string form runs these steps: the plain lock and the lock with
	// metadata (a gate is the plain form; a slot's steps are checked by
	// TestModelSemaphoreStepsMatchScripts).
	sn.others = append(sn.others, key+":meta")
	for _, form := range []struct {
		name                              string
		acquire, extend, release, cleanup *transport.Script
		meta                              []any // the acquire's last arguments
	}{
		{"plain", acquirePlainScript, extendPlainScript, releasePlainScript, cleanupPlainScript, nil},
		{"with metadata", acquireMetaScript, extendMetaScript, releaseMetaScript, cleanupMetaScript, []any{"T1x:m"}},
	} {
		// A grant "T1.0" is a start state too; the acquire that meets it is the
		// grant protocol's step (TestModelGrantStepsMatchScripts).
		for _, k := range append(keys, mval{1, 0}) {
			for _, ctr := range counters {
				start := mnode{key: k, ctr: ctr, exp: 9}
				name := fmt.Sprintf("%s: key %v counter %d", form.name, k, ctr)
				for _, v := range keys[1:] {
					if k == (mval{1, 0}) {
						break
					}
					what := fmt.Sprintf("%s: acquire %v", name, v)
					setup(t, start)
					n, ok, fence := nodeAcquire(start, 5, 3, v)
					res, err := run(form.acquire, []string{key}, append([]any{valueOf(v), "60000", "1", queueBarge}, form.meta...)...)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					g, err := takeOf(res)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					check(t, what, n, ok, g.ok)
					if ok && g.fence != uint64(fence) {
						t.Errorf("%s: script returned fence %d; model %d", what, g.fence, fence)
					}
					steps++
				}
				// A lease that won with T1.1, T1.2, the grant T1.0, or another
				// call's T2.1: extend matches the won value and the grant only.
				for _, won := range []mval{{1, 1}, {1, 2}, {1, 0}, {2, 1}} {
					what := fmt.Sprintf("%s: extend of a lease won with %v", name, won)
					setup(t, start)
					n, ok := nodeExtend(start, 5, 3, won)
					res, err := run(form.extend, []string{key}, valueOf(won), "60000")
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					check(t, what, n, ok, res.(int64) == 1)
					steps++
				}
				for _, tok := range []uint8{1, 2} {
					what := fmt.Sprintf("%s: release by call %d", name, tok)
					setup(t, start)
					n, ok := nodeRelease(start, tok)
					res, err := run(form.release, []string{key}, token(tok)+".", "redlock:released:model-conformance")
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					check(t, what, n, ok, res.(int64) == 1)
					steps++
				}
				for _, v := range keys[1:] {
					what := fmt.Sprintf("%s: cleanup %v", name, v)
					setup(t, start)
					n, ok := nodeCleanup(start, v)
					res, err := run(form.cleanup, []string{key}, valueOf(v))
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					check(t, what, n, ok, res.(int64) == 1)
					steps++
				}
				for _, f := range []uint8{2, 5} {
					what := fmt.Sprintf("%s: write-back %d", name, f)
					setup(t, start)
					n, ok := nodeWriteBack(start, f)
					res, err := run(fenceScript, []string{ctrKey}, strconv.Itoa(int(f)))
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					check(t, what, n, ok, res.(int64) == 1)
					steps++
				}
			}
		}
	}
	rdb.Del(context.Background(), key, ctrKey, key+":meta")
	if steps < 200 {
		t.Errorf("compared %d steps; the table shrank", steps)
	}
}

// modelToken is the token of the model's call tok on a real node.
func modelToken(tok uint8) string { return "T" + strconv.Itoa(int(tok)) + "x" }

// modelValue is the model's lock value v as the scripts write it.
func modelValue(v mval) string {
	if v.tok == 0 {
		return ""
	}
	return modelToken(v.tok) + "." + strconv.Itoa(int(v.att))
}

// scriptNode is a real Redis standing for one model node in the
// conformance tests: its lock key and fence counter, and the other keys a
// step may leave behind.
type scriptNode struct {
	rdb         redis.UniversalClient
	key, ctrKey string
	others      []string // cleared with the key and the counter
}

// setup makes the real node hold the model node n.
func (sn *scriptNode) setup(t *testing.T, n mnode) {
	t.Helper()
	ctx := t.Context()
	if err := sn.rdb.Del(ctx, append([]string{sn.key, sn.ctrKey}, sn.others...)...).Err(); err != nil {
		t.Fatal(err)
	}
	if n.key.tok != 0 {
		sn.rdb.Set(ctx, sn.key, modelValue(n.key), time.Minute)
	}
	if n.ctr != 0 {
		sn.rdb.Set(ctx, sn.ctrKey, n.ctr, 0)
	}
}

// check compares the real node, and the script's answer realOK, with the
// model's node n and answer ok after the step what.
func (sn *scriptNode) check(t *testing.T, what string, n mnode, ok, realOK bool) {
	t.Helper()
	ctx := t.Context()
	v, err := sn.rdb.Get(ctx, sn.key).Result()
	if err == redis.Nil {
		v = ""
	} else if err != nil {
		t.Fatal(err)
	}
	c, err := sn.rdb.Get(ctx, sn.ctrKey).Int()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	if realOK != ok || v != modelValue(n.key) || uint8(c) != n.ctr {
		t.Errorf("%s: script says ok=%v, key %q, counter %d; model says ok=%v, key %q, counter %d",
			what, realOK, v, c, ok, modelValue(n.key), n.ctr)
	}
}

// TestModelGuardMatchesGuard compares the model's guard rule with the rule
// the library's guards implement, for every small fence and owner.
func TestModelGuardMatchesGuard(t *testing.T) {
	owner := func(tok uint8) string {
		if tok == 0 {
			return ""
		}
		return guard.OwnerID("T" + strconv.Itoa(int(tok)))
	}
	for highest := uint8(0); highest < 4; highest++ {
		for recorded := uint8(0); recorded < 3; recorded++ {
			for f := uint8(0); f < 4; f++ {
				for tok := uint8(1); tok < 3; tok++ {
					_, _, model := guardAccess(highest, recorded, f, tok, true)
					lib := f != 0 && guard.Accepts(uint64(highest), owner(recorded), uint64(f), owner(tok))
					if model != lib {
						t.Errorf("highest %d by %d, access %d by %d: model accepts %v, library %v", highest, recorded, f, tok, model, lib)
					}
				}
			}
		}
	}
}

// TestModelExpiryMatchesScripts compares the expiry the model's node steps
// leave on a key of the call with the real scripts' (the key's PTTL), for
// keys expiring before, at and after now+ttl: extend (nodeExtend) and the
// acquire script's refresh of the call's own key (nodeAcquire: the same
// value, an earlier attempt's; nodeAcquireKeep: the release's grant) only
// move the expiry later. The old extend (nodeExtendOld) must disagree with
// the script on the keys that outlive now+ttl: the comparison can tell.
func TestModelExpiryMatchesScripts(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	const key, ctrKey = "redlock:{model-expiry}", "redlock:{model-expiry}:fence"
	sn := &scriptNode{rdb: rdb, key: key, ctrKey: ctrKey}
	// One model tick is 10s on the real node: the milliseconds a script
	// call takes are far below the 1s the expiries are compared within.
	const now, ttl, unit, slack = 5, 3, 10 * time.Second, time.Second
	ttlArg := strconv.Itoa(int(ttl * unit / time.Millisecond))
	acquire := func(v mval) func() (bool, error) {
		return func() (bool, error) {
			g, err := takeReply(acquirePlainScript.Run(ctx, rdb, []string{key}, modelValue(v), ttlArg, "1", queueBarge))
			return g.ok, err
		}
	}
	steps := []struct {
		name   string
		key    mval
		model  func(mnode) (mnode, bool)
		script func() (bool, error)
	}{
		{"extend by call 1", mval{1, 1}, func(n mnode) (mnode, bool) { return nodeExtend(n, now, ttl, mval{1, 1}) }, func() (bool, error) {
			r, err := extendPlainScript.Run(ctx, rdb, []string{key}, modelValue(mval{1, 1}), ttlArg).Int64()
			return r == 1, err
		}},
		{"acquire, the same value", mval{1, 2}, func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquire(n, now, ttl, mval{1, 2})
			return n, ok
		}, acquire(mval{1, 2})},
		{"acquire over an earlier attempt", mval{1, 1}, func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquire(n, now, ttl, mval{1, 2})
			return n, ok
		}, acquire(mval{1, 2})},
		{"acquire keeping the call's grant", mval{1, 0}, func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquireKeep(n, now, ttl, mval{1, 2})
			return n, ok
		}, acquire(mval{1, 2})},
	}
	compared, oldDiffers := 0, 0
	for _, st := range steps {
		for _, left := range []int16{1, 2, 3, 4, 6} { // the key's remaining life in ticks
			what := fmt.Sprintf("%s: key %v expiring in %d ticks, ttl %d", st.name, st.key, left, ttl)
			start := mnode{key: st.key, exp: now + left, ctr: 4}
			sn.setup(t, start)
			if err := rdb.PExpire(ctx, key, time.Duration(left)*unit).Err(); err != nil {
				t.Fatal(err)
			}
			n, ok := st.model(start)
			realOK, err := st.script()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			sn.check(t, what, n, ok, realOK)
			pttl, err := rdb.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := time.Duration(n.exp-now) * unit
			if d := pttl - want; d < -slack || d > slack {
				t.Errorf("%s: the script left the key living %v; the model %v (expiry %d)", what, pttl, want, n.exp)
			}
			if st.name == "extend by call 1" {
				if old, _ := nodeExtendOld(start, now, ttl, 1); time.Duration(old.exp-now)*unit-pttl > slack || pttl-time.Duration(old.exp-now)*unit > slack {
					oldDiffers++
				}
			}
			compared++
		}
	}
	rdb.Del(context.Background(), key, ctrKey)
	if compared < 20 {
		t.Errorf("compared %d steps; the table shrank", compared)
	}
	if oldDiffers != 2 {
		t.Errorf("the old extend step disagrees with extend.lua on %d keys; want 2 (the keys living 4 and 6 ticks): the comparison cannot tell an extend that shortens", oldDiffers)
	}
}
