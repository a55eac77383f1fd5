package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A re-entrant holder's queue entry leaves with its release on every node,
// also where the key is not its own (another owner's hash there): else the
// entry stands at the head of that node's queue, a dead waiter that stalls
// the node's waiters until it expires. A plain lock's release does the same.
func TestReentrantReleaseLeavesQueueWhereKeyIsForeign(t *testing.T) {
	for _, reent := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "Reentrant"}[reent], func(t *testing.T) {
			ns := nodes(t, 3)
			c := newTestClient(t, ns, nil)
			name := "foreign-queue-" + map[bool]string{false: "plain", true: "reentrant"}[reent]
			key, fenceKey := c.Keys(name)
			q, qt := c.keys(name).queue, c.keys(name).queueTimes
			ctx := t.Context()
			// Node 2 holds another owner's re-entrant lock.
			ns[2].HSet(ctx, key, "rl-owner", "other", "rl-fence", "1", "rl-ttl", "60000", "rl-meta", "", "h:other", "1")
			ns[2].PExpire(ctx, key, time.Minute)
			t.Cleanup(func() {
				for _, n := range ns {
					n.Del(context.Background(), key, fenceKey, q, qt)
				}
			})
			l, err := c.Acquire(ctx, name, 10*time.Second, &AcquireOptions{Reentrant: reent})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			mine := l.Token() + ":"
			entries := func() []string {
				var out []string
				for _, m := range ns[2].ZRange(ctx, q, 0, -1).Val() {
					if strings.HasPrefix(m, mine) {
						out = append(out, m)
					}
				}
				return out
			}
			// Node 2 refused the call and queued it, if its answer came
			// before the round was decided (a later one is taken out again
			// at once): put the entry there as that refusal does.
			entry := newWaiter(l.ls, queueWait, time.Now(), c.waker.id).member
			ns[2].ZAdd(ctx, q, redis.Z{Score: 1, Member: entry})
			ns[2].ZAdd(ctx, qt, redis.Z{Score: float64(time.Now().Add(time.Second).UnixMilli()), Member: entry})
			ns[2].PExpire(ctx, q, time.Second)
			ns[2].PExpire(ctx, qt, time.Second)
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release = %v", err)
			}
			// The entry would expire by itself after about a second: look
			// well before that.
			deadline := time.Now().Add(300 * time.Millisecond)
			for len(entries()) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := entries(); len(got) > 0 {
				t.Errorf("node 2's queue still holds %q after Release; want the holder's entry gone", got)
			}
			if got := ns[2].HGet(ctx, key, "rl-owner").Val(); got != "other" {
				t.Errorf("node 2's key owner after Release = %q; want the other owner's lock untouched", got)
			}
		})
	}
}
