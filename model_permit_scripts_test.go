package redlock

import (
	"fmt"
	"testing"
)

// TestModelSemaphoreStepsMatchScripts: the semaphore model takes a slot
// with the lock model's node steps (model_permit_world_test.go). The slot
// scripts are the lock's scripts wrapped in the semaphore's checks
// (lua/permit.lua, permit_extend.lua, permit_end.lua); this runs them on a
// real Redis for every node state and request of the lock's conformance
// test, with a matching limit and no gate (the model's world), and checks
// that they agree with the model's steps on the answer, the key and the
// counter, and that a slot a node now holds keeps the limit's record alive
// at least as long.
func TestModelSemaphoreStepsMatchScripts(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	sk := semKeysOf("redlock:", "model-permits")
	key, ctrKey := sk.slotKeys(0).lock, sk.fence
	sn := &scriptNode{rdb: rdb, key: key, ctrKey: ctrKey}
	keys := []mval{{}, {1, 1}, {1, 2}, {2, 1}, {2, 2}}
	limitLives := func(what string) {
		t.Helper()
		// Both TTLs at one instant.
		both, err := rdb.Eval(ctx, "return {redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}", []string{key, sk.limit}).Int64Slice()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		slot, limit := both[0], both[1]
		if got := rdb.Get(ctx, sk.limit).Val(); got != "2" || limit < slot {
			t.Errorf("%s: limit key %q with TTL %d ms, slot TTL %d ms; want \"2\" living at least as long as the slot", what, got, limit, slot)
		}
	}
	steps := 0
	for _, k := range keys {
		for _, ctr := range []uint8{0, 4} {
			start := mnode{key: k, ctr: ctr, exp: 9}
			name := fmt.Sprintf("key %v counter %d", k, ctr)
			for _, v := range keys[1:] {
				what := fmt.Sprintf("%s: take slot %v", name, v)
				sn.setup(t, start)
				rdb.Del(ctx, sk.limit, sk.gate.lock)
				n, ok, fence := nodeAcquire(start, 5, 3, v)
				res, err := slotAcquireScript.Run(ctx, rdb, []string{key}, modelValue(v), "60000", "1", queueBarge, "2", "0").Result()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				g, err := takeOf(res)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				sn.check(t, what, n, ok, g.ok)
				if ok && g.fence != uint64(fence) {
					t.Errorf("%s: script returned counter %d; model %d", what, g.fence, fence)
				}
				if g.ok {
					limitLives(what)
				}
				steps++
			}
			for _, won := range []mval{{1, 1}, {1, 2}, {2, 1}} {
				what := fmt.Sprintf("%s: extend slot won with %v", name, won)
				sn.setup(t, start)
				rdb.Set(ctx, sk.limit, "2", 0).Val()
				rdb.PExpire(ctx, sk.limit, 50)
				n, ok := nodeExtend(start, 5, 3, won)
				res, err := slotExtendScript.Run(ctx, rdb, []string{key}, modelValue(won), "60000", "2").Result()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				sn.check(t, what, n, ok, res.(int64) == 1)
				if res.(int64) == 1 {
					limitLives(what)
				}
				steps++
			}
		}
	}
	t.Logf("%d slot steps agree with the model", steps)
}
