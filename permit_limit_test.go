package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The limit of a semaphore: only a limit in force on a quorum of the nodes
// refuses a call (ErrLimitMismatch, at once); what another limit left on a
// minority is a node that did not grant; a new limit is usable as soon as
// no permit of the old one is held.

// TestSemaphoreLimitMismatch: a client with another limit than the live
// permits' (on every node: in force on a quorum) is refused at once, and
// writes nothing.
func TestSemaphoreLimitMismatch(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := permitName(t)
	ctx := context.Background()
	p, err := c.AcquirePermit(ctx, name, 2, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(ctx)
	for _, try := range []bool{true, false} {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		var err error
		if try {
			_, err = c.TryAcquirePermit(wctx, name, 3, 10*time.Second, nil)
		} else {
			_, err = c.AcquirePermit(wctx, name, 3, 10*time.Second, nil)
		}
		cancel()
		if !errors.Is(err, ErrLimitMismatch) {
			t.Errorf("try=%v: AcquirePermit with limit 3 while limit 2 is in use = %v; want ErrLimitMismatch", try, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("try=%v: the mismatch took %v to report; want it at once (no retry can cure it)", try, d)
		}
	}
	sk := semKeysOf(c.opts.KeyPrefix, name)
	for i, n := range ns {
		if got := n.Exists(ctx, sk.slotKeys(2).lock).Val(); got != 0 {
			t.Errorf("node %d: slot 2 (only limit 3 has it) exists; want nothing written", i)
		}
	}
}

// TestSemaphoreLimitOutlivesEveryPermit: a short permit taken and extended
// after a long one never shortens the nodes' record of the limit under the
// long one: a client with another limit is refused for as long as the
// long permit lives.
func TestSemaphoreLimitOutlivesEveryPermit(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := permitName(t)
	ctx := context.Background()
	long, err := c.AcquirePermit(ctx, name, 2, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Release(ctx)
	short, err := c.AcquirePermit(ctx, name, 2, 400*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := short.Extend(ctx, 400*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := short.Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // past the short permit's TTL
	if _, err := c.TryAcquirePermit(ctx, name, 3, time.Second, nil); !errors.Is(err, ErrLimitMismatch) {
		t.Errorf("limit 3 while a limit-2 permit lives = %v; want ErrLimitMismatch (the short permit must not have shortened the limit's record)", err)
	}
}

// strayLimit writes on node n what an attempt with limit leaves there when
// its call failed: the semaphore's limit record, and with slot >= 0 the
// attempt's slot key (a cleanup not landed yet, or lost), both for ttl.
// They are deleted when the test ends.
func strayLimit(t *testing.T, n redis.UniversalClient, sk semKeys, limit, slot int, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	keys := []string{sk.limit}
	if err := n.Set(ctx, sk.limit, strconv.Itoa(limit), ttl).Err(); err != nil {
		t.Fatal(err)
	}
	if slot >= 0 {
		k := sk.slotKeys(slot).lock
		keys = append(keys, k)
		if err := n.Set(ctx, k, "failed-attempt.1", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { n.Del(context.Background(), keys...) })
}

// TestSemaphoreLimitMinorityStray: a failed limit-5 call left its limit
// record on 1 of 3 nodes (with its slot key, or without: cleaned up), and
// one limit-2 permit is held. Limit-2 calls that try the held slot first
// (then scan for the free one) all get the free permit: the minority's
// record refuses nothing, and a record without a live slot is overwritten
// by the next grant. They failed with ErrLimitMismatch, every one.
func TestSemaphoreLimitMinorityStray(t *testing.T) {
	for _, tc := range []struct {
		name string
		slot int // the failed attempt's slot key left on node 0; -1: none
	}{{"record", -1}, {"record and slot", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := nodes(t, 3)
			holder, c := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
			name := permitName(t)
			sk := semKeysOf(c.opts.KeyPrefix, name)
			ctx := context.Background()
			strayLimit(t, ns[0], sk, 5, tc.slot, 30*time.Second)
			a, err := holder.AcquirePermit(ctx, name, 2, 30*time.Second, nil)
			if err != nil {
				t.Fatalf("AcquirePermit(limit 2) with a limit-5 record on node 0 = %v; want a permit", err)
			}
			defer a.Release(ctx)
			if st, err := c.InspectPermits(ctx, name, 2); err != nil || st.InUse != 2 {
				t.Errorf("InspectPermits(2).InUse = %v, %v; want 2, the limit in force on a quorum", st.InUse, err)
			}
			const calls = 8
			refused := 0
			for i := range calls + 1 {
				c.hints.put(name, a.Slot()) // the held slot first: the take fails, then the scan
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				var p *Permit
				if i < calls {
					p, err = c.TryAcquirePermit(wctx, name, 2, 5*time.Second, nil)
				} else {
					p, err = c.AcquirePermit(wctx, name, 2, 5*time.Second, nil)
				}
				cancel()
				if err != nil {
					refused++
					t.Logf("call %d: %v", i, err)
					continue
				}
				if p.Slot() == a.Slot() {
					t.Errorf("call %d got slot %d, the held one", i, p.Slot())
				}
				if err := p.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			if refused > 0 {
				t.Errorf("%d of %d limit-2 calls with a slot free failed; want none (a limit-5 record on 1 of 3 nodes is not in force)", refused, calls+1)
			}
			got := ns[0].Get(ctx, sk.limit).Val()
			if want := map[bool]string{true: "2", false: "5"}[tc.slot < 0]; got != want {
				t.Errorf("node 0's limit record = %q; want %q (a record no live slot backs is overwritten by a grant)", got, want)
			}
		})
	}
}

// TestSemaphoreLimitRace: two limits race for the first permit of a fresh
// name; one wins. The later calls with the winner's limit (each trying the
// held slot first) all get a permit: the loser's record, left on the node
// its attempt took before it failed, refuses nothing. 3 to 9 of 30 were
// refused with ErrLimitMismatch.
func TestSemaphoreLimitRace(t *testing.T) {
	ns := nodes(t, 3)
	racers := []*Client{newTestClient(t, ns, nil), newTestClient(t, ns, nil)}
	c := newTestClient(t, ns, nil)
	ctx := context.Background()
	const rounds, calls = 5, 6
	refused, raced := 0, 0
	for round := range rounds {
		name := fmt.Sprintf("%s-%d", permitName(t), round)
		limits := []int{2, 3}
		got := make([]*Permit, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				got[i], _ = racers[i].TryAcquirePermit(ctx, name, limits[i], 30*time.Second, nil)
			})
		}
		close(start)
		wg.Wait()
		var w *Permit
		for _, p := range got {
			switch {
			case p == nil:
			case w != nil:
				t.Errorf("round %d: limits %d and %d both got a permit", round, w.Limit(), p.Limit())
			default:
				w = p
			}
		}
		if w == nil {
			t.Logf("round %d: neither limit won", round)
			continue
		}
		raced++
		for i := range calls {
			c.hints.put(name, w.Slot())
			p, err := c.TryAcquirePermit(ctx, name, w.Limit(), 5*time.Second, nil)
			if err != nil {
				refused++
				t.Logf("round %d, call %d with the winner's limit %d: %v", round, i, w.Limit(), err)
				continue
			}
			_ = p.Release(ctx)
		}
		_ = w.Release(ctx)
	}
	if refused > 0 {
		t.Errorf("%d of %d calls with the winning limit refused; want none", refused, raced*calls)
	}
}

// TestSemaphoreLimitNoQuorum: with 4 nodes (quorum 3), a limit-5 attempt's
// slot key and record live on 2: a limit-2 try fails for want of a quorum,
// not with ErrLimitMismatch, and a waiting call retries and gets its
// permit once they expire. Both failed at once with ErrLimitMismatch.
func TestSemaphoreLimitNoQuorum(t *testing.T) {
	ns := nodes(t, 4)
	c := newTestClient(t, ns, nil)
	name := permitName(t)
	sk := semKeysOf(c.opts.KeyPrefix, name)
	ctx := context.Background()
	const stray = 1500 * time.Millisecond
	for _, n := range ns[:2] {
		strayLimit(t, n, sk, 5, 4, stray)
	}
	start := time.Now()
	_, err := c.TryAcquirePermit(ctx, name, 2, 5*time.Second, nil)
	if !errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrLimitMismatch) {
		t.Errorf("TryAcquirePermit(limit 2) with limit 5 on 2 of 4 nodes = %v; want ErrNotAcquired, not ErrLimitMismatch", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := c.AcquirePermit(wctx, name, 2, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquirePermit(limit 2) with limit 5 on 2 of 4 nodes for %v = %v; want a permit once they expire", stray, err)
	}
	defer p.Release(ctx)
	if d := time.Since(start); d < stray-100*time.Millisecond {
		t.Errorf("permit after %v; want it only once the limit-5 slots expired (%v)", d, stray)
	}
}

// TestSemaphoreNewLimitAfterRelease: once every permit of limit 2 is
// released (and the releases reached the nodes), limit 3 is usable at
// once: InspectPermits(3) sees no limit in use, and limit-3 permits are
// granted. The limit record outlived the permits by their TTL (30s here),
// and both said limit 2 was in use.
func TestSemaphoreNewLimitAfterRelease(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := permitName(t)
	sk := semKeysOf(c.opts.KeyPrefix, name)
	ctx := context.Background()
	for range 2 {
		p, err := c.AcquirePermit(ctx, name, 2, 30*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(ctx) // a no-op once released below; releases what a failed test left
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Release returns at a quorum; the rest of the deletes land within
	// the node timeout.
	for i := range 2 {
		assertNoLockKey(t, ns, sk.slotKeys(i).lock)
	}
	start := time.Now()
	st, err := c.InspectPermits(ctx, name, 3)
	if err != nil || st.InUse != 0 || st.Free != 3 {
		t.Errorf("InspectPermits(3) after every limit-2 permit was released = InUse %d, Free %d, %v; want 0 and 3 free", st.InUse, st.Free, err)
	}
	p, err := c.TryAcquirePermit(ctx, name, 3, 30*time.Second, nil)
	if err != nil {
		t.Fatalf("TryAcquirePermit(limit 3) after every limit-2 permit was released = %v; want a permit", err)
	}
	defer p.Release(ctx)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	q, err := c.AcquirePermit(wctx, name, 3, 30*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquirePermit(limit 3) after every limit-2 permit was released = %v; want a permit", err)
	}
	defer q.Release(ctx)
	if st, err := c.InspectPermits(ctx, name, 3); err != nil || st.InUse != 3 || st.Held != 2 {
		t.Errorf("InspectPermits(3) with two limit-3 permits = InUse %d, Held %d, %v; want 3 and 2", st.InUse, st.Held, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the new limit took %v; want it at once, not after the old permits' TTL", d)
	}
	// The old limit is refused now, at once: the new one is in force.
	if _, err := c.TryAcquirePermit(ctx, name, 2, time.Second, nil); !errors.Is(err, ErrLimitMismatch) {
		t.Errorf("TryAcquirePermit(limit 2) while limit-3 permits are held = %v; want ErrLimitMismatch", err)
	}
}

// TestSemaphoreLimitRecordRule runs the slot scripts on one node: a node's
// limit record refuses another limit only while a live slot below it backs
// it (then nothing is written); a record no live slot backs is stale,
// overwritten by the next grant with the granted slot's expiry (and left
// as it is by a call that is not granted); the scan reports the limit in
// force, ” for a stale record.
func TestSemaphoreLimitRecordRule(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		record  string        // the node's limit record before the call
		expiry  time.Duration // its TTL; 0: none
		live    int           // a slot key live before the call; -1: none
		gate    bool          // the gate is held, and the call yields to it
		limit   int           // the call's limit
		want    string        // the script's reply, or the start of its error
		after   string        // the record after the call
		inForce string        // what the scan reports before the call
	}{
		{"backed", "2", time.Minute, 1, false, 3, "LIMIT", "2", "2"},
		{"backed by slot 0", "2", time.Minute, 0, false, 3, "LIMIT", "2", "2"},
		{"same limit", "2", time.Minute, 0, false, 2, "1:", "2", "2"},
		{"stale", "2", time.Minute, -1, false, 3, "1:", "3", ""},
		{"stale without expiry", "2", 0, -1, false, 3, "1:", "3", ""},
		{"not a limit", "x", time.Minute, -1, false, 3, "1:", "3", ""},
		{"stale, not granted", "2", time.Minute, -1, true, 3, "0:0", "2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sk := semKeysOf("redlock:", permitName(t))
			t.Cleanup(func() {
				rdb.Del(context.Background(), sk.limit, sk.fence, sk.gate.lock, sk.slotKeys(0).lock, sk.slotKeys(1).lock, sk.slotKeys(2).lock)
			})
			rdb.Set(ctx, sk.limit, tc.record, tc.expiry)
			if tc.live >= 0 {
				rdb.Set(ctx, sk.slotKeys(tc.live).lock, "other.1", time.Minute)
			}
			yield := "0"
			if tc.gate {
				yield = "1"
				rdb.Set(ctx, sk.gate.lock, "waiter.1", time.Minute)
			}
			scan, err := permitScanScript.Run(ctx, rdb, []string{sk.slotKeys(0).lock, sk.slotKeys(1).lock, sk.limit}).Slice()
			if err != nil || len(scan) != 3 || scan[0] != tc.inForce {
				t.Errorf("scan = %v, %v; want the limit in force %q first", scan, err, tc.inForce)
			}
			const ttl = 5000
			slot := sk.slotKeys(2).lock
			if tc.limit < 3 {
				slot = sk.slotKeys(1 - max(tc.live, 0)).lock
			}
			res, err := slotAcquireScript.Run(ctx, rdb, []string{slot},
				"me.1", strconv.Itoa(ttl), "1", queueBarge, strconv.Itoa(tc.limit), yield).Result()
			got := takeText(res)
			if err != nil {
				got = err.Error()
			}
			if len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Fatalf("limit %d with record %q: reply %q; want %q…", tc.limit, tc.record, got, tc.want)
			}
			if rec := rdb.Get(ctx, sk.limit).Val(); rec != tc.after {
				t.Errorf("record after the call = %q; want %q", rec, tc.after)
			}
			if tc.want != "1:" {
				if n := rdb.Exists(ctx, slot).Val(); n != 0 {
					t.Errorf("slot key %s written by a call not granted", slot)
				}
				return
			}
			lp, sp := rdb.PTTL(ctx, sk.limit).Val(), rdb.PTTL(ctx, slot).Val()
			// The record is written a ms past the slot's PTTL (permit_end.lua).
			if sp <= 0 || lp < sp || tc.record != tc.after && lp > (ttl+1)*time.Millisecond {
				t.Errorf("record's TTL %v, slot's %v; want the record to outlive the slot (and a stale record's expiry replaced)", lp, sp)
			}
		})
	}
}
