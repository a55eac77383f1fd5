package redlock

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestModelGrantStepsMatchScripts does for the grant protocol's two node
// steps what TestModelStepsMatchScripts does for the others: the acquire
// script meeting a release's grant (nodeAcquireKeep) and the release that
// grants the freed (or free) key to the queue's head (nodeRelease, then
// nodeGrant), and the cleanup that grants the key it freed (nodeCleanup,
// then nodeGrant),
// against the real scripts on a real Redis, for every small node state.
func TestModelGrantStepsMatchScripts(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	const name = "model-grant-conformance"
	c := newTestClient(t, []redis.UniversalClient{rdb}, nil)
	key, ctrKey := c.Keys(name)
	q, qt := c.keys(name).queue, c.keys(name).queueTimes
	channel := c.keys(name).channel
	sn := &scriptNode{rdb: rdb, key: key, ctrKey: ctrKey, others: []string{q, qt}}
	token, valueOf, setup, check := modelToken, modelValue, sn.setup, sn.check
	// Key states: absent, a grant to call 1 or 2 ("T.0"), or an attempt's
	// value.
	keys := []mval{{}, {1, 0}, {2, 0}, {1, 1}, {1, 2}, {2, 1}}
	// The head's Client listens, as a live waiter's does.
	ps := rdb.Subscribe(ctx, channel+":c2")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// notice reads the grant notice a step must have sent: "<entry> <fence>".
	notice := func(what, entry string, f uint8) {
		t.Helper()
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := entry + " " + strconv.Itoa(int(f)); m.Payload != want {
			t.Errorf("%s: notice %q, model %q", what, m.Payload, want)
		}
	}
	steps := 0
	for _, k := range keys {
		for _, ctr := range []uint8{0, 4} {
			start := mnode{key: k, ctr: ctr, exp: 9}
			name := fmt.Sprintf("key %v counter %d", k, ctr)
			for _, v := range []mval{{1, 1}, {1, 3}, {2, 2}} {
				what := fmt.Sprintf("%s: acquire %v", name, v)
				setup(t, start)
				n, ok, fence := nodeAcquireKeep(start, 5, 3, v)
				g, err := takeReply(acquirePlainScript.Run(ctx, rdb, []string{key}, valueOf(v), "60000", "1", queueBarge))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				check(t, what, n, ok, g.ok)
				if ok && g.fence != uint64(fence) {
					t.Errorf("%s: script returned fence %d; model %d", what, g.fence, fence)
				}
				if ok {
					if pttl := rdb.PTTL(ctx, key).Val(); pttl < 59*time.Second {
						t.Errorf("%s: PTTL %v after the grant, want the attempt's 60s", what, pttl)
					}
				}
				steps++
			}
			// Release by call 1 with call 2 queued at the head, asking for
			// a fenced grant.
			what := fmt.Sprintf("%s: release by call 1, call 2 queued", name)
			setup(t, start)
			entry := token(2) + ":c2:60000:1"
			rdb.ZAdd(ctx, q, redis.Z{Score: 1, Member: entry})
			rdb.ZAdd(ctx, qt, redis.Z{Score: 1e15, Member: entry})
			// It grants the key when it deleted it or found it free.
			n, ok := nodeRelease(start, 1)
			granted := ok || start.key.tok == 0
			var f uint8
			if granted {
				n, f = nodeGrant(n, 5, 3, 2)
			}
			res, err := releasePlainScript.Run(ctx, rdb, []string{key}, token(1)+".", channel).Int64()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			check(t, what, n, ok, res == 1)
			if granted {
				notice(what, entry, f)
			}
			steps++
			// The cleanup of call 1's attempt 1, call 2 queued at the head:
			// it grants the key when it deleted it.
			what = fmt.Sprintf("%s: cleanup of attempt 1 of call 1, call 2 queued", name)
			setup(t, start)
			rdb.ZAdd(ctx, q, redis.Z{Score: 1, Member: entry})
			rdb.ZAdd(ctx, qt, redis.Z{Score: 1e15, Member: entry})
			n, ok = nodeCleanup(start, mval{1, 1})
			f = 0
			if ok {
				n, f = nodeGrant(n, 5, 3, 2)
			}
			res, err = cleanupPlainScript.Run(ctx, rdb, []string{key}, valueOf(mval{1, 1}), channel).Int64()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			check(t, what, n, ok, res == 1)
			if ok {
				notice(what, entry, f)
			}
			steps++
		}
	}
	rdb.Del(ctx, key, ctrKey, q, qt)
	if steps < 60 {
		t.Errorf("compared %d steps; the table shrank", steps)
	}
}
