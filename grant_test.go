package redlock

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// Tests of the handoff by grant (grant.go, release.lua) on real Redis.

// fromGrant reports whether l was taken from the releases' grants rather
// than won by an attempt.
func fromGrant(l *Lock) bool {
	l.call.mu.Lock()
	defer l.call.mu.Unlock()
	return l.call.attempt == 0
}

// keyValues returns the lock key's value on each node ("" when absent).
func keyValues(t testing.TB, ns []redis.UniversalClient, key string) []string {
	t.Helper()
	out := make([]string, len(ns))
	for i, n := range ns {
		v, err := n.Get(context.Background(), key).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("node %d: GET %s: %v", i, key, err)
		}
		out[i] = v
	}
	return out
}

// A release grants the key to the queue's head, which then holds the lock
// without an attempt of its own; a barging or re-entrant waiter (no
// grantable entry) still takes it with an attempt: the control that shows
// fromGrant can tell the two apart. A waiter polls while it waits (its
// entry must stay alive), so a poll may reach the nodes just after the
// release and win on the grant first: the handoff is made several times,
// and a fair waiter must take most of them from the grants.
func TestGrantHandsOffWithoutAnAttempt(t *testing.T) {
	const handoffs = 5
	for _, tc := range []struct {
		name    string
		opts    *AcquireOptions
		granted bool
	}{
		{"fair", nil, true},
		{"fair unfenced", &AcquireOptions{NoFence: true}, true},
		{"barging", &AcquireOptions{Barging: true}, false},
		{"reentrant", &AcquireOptions{Reentrant: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var w *Client
			fromGrants := 0
			// The waiter polls as seldom as a queued waiter may (every
			// queueRefresh), so that a poll rarely meets the release.
			opts := AcquireOptions{Retry: func(int) (time.Duration, bool) { return time.Hour, true }}
			if tc.opts != nil {
				opts.NoFence, opts.Barging, opts.Reentrant = tc.opts.NoFence, tc.opts.Barging, tc.opts.Reentrant
			}
			for i := range handoffs {
				name := fmt.Sprintf("grant-%s-%d", strings.ReplaceAll(tc.name, " ", "-"), i)
				ns, holder, l := holdFair(t, 3, name)
				if w == nil {
					w = newTestClient(t, ns, nil)
				}
				key, _ := holder.Keys(name)
				// A long TTL: a slow start (subscribing) never makes the
				// wait long enough for the waiter to confirm with an attempt.
				const ttl = time.Minute
				type result struct {
					l   *Lock
					err error
				}
				got := make(chan result, 1)
				go func() { // owner: the test; joined by <-got
					lk, err := w.Acquire(ctx, name, ttl, &opts)
					got <- result{lk, err}
				}()
				if !tc.opts.isBarging() {
					waitQueued(t, w, ns, name, 1)
					// A grant goes only to a waiter that listens: wait
					// until its subscription is live on every node.
					waitSubscribed(t, w, w.keys(name).channel+":"+w.waker.id, len(ns))
				} else {
					time.Sleep(50 * time.Millisecond) // its first attempt is refused
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				r := <-got
				if r.err != nil {
					t.Fatal(r.err)
				}
				if fromGrant(r.l) {
					fromGrants++
					// Every node that granted holds "<token>.0"; a quorum did.
					n := 0
					for _, v := range keyValues(t, ns, key) {
						if v == r.l.Token()+".0" {
							n++
						}
					}
					if n < 2 {
						t.Fatalf("%d nodes hold the grant %s.0, want a quorum: %v", n, r.l.Token(), keyValues(t, ns, key))
					}
					// Taken from the grants only after a wait of at most
					// 1/grantShare of the TTL: at least 1-2/grantShare of it left.
					if until := time.Until(r.l.ValidUntil()); until < ttl*(grantShare-2)/grantShare-drift(ttl, DefaultDriftFactor)-100*time.Millisecond {
						t.Fatalf("the granted lock is valid for %v, want at least %d/%d of its %v TTL", until, grantShare-2, grantShare, ttl)
					}
				}
				if tc.opts == nil || !tc.opts.NoFence {
					if r.l.Fence() <= l.Fence() {
						t.Fatalf("fence %d after the holder's %d, want larger", r.l.Fence(), l.Fence())
					}
				}
				if err := r.l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				assertNoLockKey(t, ns, key)
				assertNoQueueKeys(t, holder, ns, name)
			}
			if tc.granted && fromGrants < handoffs/2+1 || !tc.granted && fromGrants != 0 {
				t.Fatalf("%d of %d handoffs to the waiter came from the grants, want %v", fromGrants, handoffs,
					map[bool]string{true: "most", false: "none"}[tc.granted])
			}
		})
	}
}

// waitSubscribed waits until c's subscriptions to channel are live on n
// nodes.
func waitSubscribed(t testing.TB, c *Client, channel string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.waker.mu.Lock()
		live := c.waker.live[channel]
		c.waker.mu.Unlock()
		if live >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d nodes' subscriptions to %s are live", live, n, channel)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (o *AcquireOptions) isBarging() bool { return o != nil && o.Barging }

// grantableEntry queues, on every node, an entry asking for a grant (TTL
// 10s, fenced) for a waiter of client id that never listens for notices,
// as a waiter whose process is gone leaves it.
func grantableEntry(t testing.TB, c *Client, ns []redis.UniversalClient, name, token, client string) string {
	t.Helper()
	entry := token + ":" + client + ":10000:1"
	enqueueDead(t, c, ns, name, entry, time.Now().UnixMicro())
	return entry
}

// A release does not grant the key to a head whose Client does not listen on
// the node (its process is gone): the grant is undone and the key stays
// free. The control: with a listener on the head's channel, the same
// release grants it, and the listener hears "<entry> <fence>".
func TestGrantSkipsAWaiterNobodyListensFor(t *testing.T) {
	for _, listening := range []bool{false, true} {
		t.Run(fmt.Sprintf("listening=%v", listening), func(t *testing.T) {
			name := fmt.Sprintf("grant-gone-%v", listening)
			ns, holder, l := holdFair(t, 3, name)
			ctx := context.Background()
			entry := grantableEntry(t, holder, ns, name, "gonetoken", "goneclient")
			key, fenceKey := holder.Keys(name)
			var subs []*redis.PubSub
			if listening {
				for _, n := range ns {
					ps := n.Subscribe(ctx, holder.keys(name).channel+":goneclient")
					if _, err := ps.Receive(ctx); err != nil { // the subscription is live
						t.Fatal(err)
					}
					defer ps.Close()
					subs = append(subs, ps)
				}
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// Release returns at a quorum: wait for every node.
			time.Sleep(100 * time.Millisecond)
			vals := keyValues(t, ns, key)
			for i, v := range vals {
				want := ""
				if listening {
					want = "gonetoken.0"
				}
				if v != want {
					t.Fatalf("node %d: the key holds %q after the release, want %q (all: %v)", i, v, want, vals)
				}
			}
			for i, ps := range subs {
				m, err := ps.ReceiveMessage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ctr, _ := ns[i].Get(ctx, fenceKey).Result()
				if want := entry + " " + ctr; m.Payload != want {
					t.Fatalf("node %d: notice %q, want %q", i, m.Payload, want)
				}
			}
			for _, n := range ns {
				n.Del(ctx, key)
			}
			for _, n := range ns {
				q, qt := holder.keys(name).queue, holder.keys(name).queueTimes
				n.Del(ctx, q, qt)
			}
		})
	}
}

// A release does not grant a fenced head the key over a corrupt fence
// counter (it could not give it a fence); it wakes it instead, to meet the
// error with its own attempt.
func TestGrantNotOverABadCounter(t *testing.T) {
	const name = "grant-badcounter"
	ns, holder, l := holdFair(t, 3, name)
	ctx := context.Background()
	entry := grantableEntry(t, holder, ns, name, "badtoken", "badclient")
	key, fenceKey := holder.Keys(name)
	var subs []*redis.PubSub
	for _, n := range ns {
		ps := n.Subscribe(ctx, holder.keys(name).channel+":badclient")
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		subs = append(subs, ps)
		if err := n.Set(ctx, fenceKey, "not-a-number", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i, ps := range subs {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Payload != entry {
			t.Fatalf("node %d: notice %q, want the bare entry %q (no grant)", i, m.Payload, entry)
		}
	}
	for i, v := range keyValues(t, ns, key) {
		if v != "" {
			t.Fatalf("node %d: the key holds %q, want it free", i, v)
		}
	}
	for _, n := range ns {
		q, qt := holder.keys(name).queue, holder.keys(name).queueTimes
		n.Del(ctx, q, qt, fenceKey)
	}
}

// An attempt of the call that finds the release's grant succeeds on it and
// keeps it as it is (refreshed), so that the attempt's cleanup, if the
// attempt fails, cannot delete it; the call's release deletes it.
func TestGrantKeptByTheCallsAttempts(t *testing.T) {
	ctx := context.Background()
	n := nodes(t, 1)[0]
	c := newTestClient(t, []redis.UniversalClient{n}, nil)
	key, fenceKey := c.Keys("grant-kept")
	if err := n.Set(ctx, key, "keeptoken.0", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	g, err := takeReply(acquirePlainScript.Run(ctx, n, []string{key}, "keeptoken.3", "10000", "1", queueBarge))
	if err != nil || !g.ok {
		t.Fatalf("the attempt on its call's grant: %+v, %v; want it granted", g, err)
	}
	if got := n.Get(ctx, key).Val(); got != "keeptoken.0" {
		t.Fatalf("the key holds %q after the attempt, want the grant keeptoken.0 kept", got)
	}
	if pttl := n.PTTL(ctx, key).Val(); pttl < 9*time.Second {
		t.Fatalf("PTTL %v after the attempt, want it refreshed to the 10s TTL", pttl)
	}
	if got, err := cleanupPlainScript.Run(ctx, n, []string{key}, "keeptoken.3", "ch").Int64(); err != nil || got != 0 {
		t.Fatalf("the attempt's cleanup: %v, %v; want nothing deleted", got, err)
	}
	if got := n.Get(ctx, key).Val(); got != "keeptoken.0" {
		t.Fatalf("the key holds %q after the attempt's cleanup, want the grant kept", got)
	}
	// Another call's attempt is refused.
	if g, err := takeReply(acquirePlainScript.Run(ctx, n, []string{key}, "other.1", "10000", "1", queueBarge)); err != nil || g.ok {
		t.Fatalf("another call's attempt on the grant: %+v, %v; want it refused", g, err)
	}
	if got, err := releasePlainScript.Run(ctx, n, []string{key}, "keeptoken.", "ch").Int64(); err != nil || got != 1 {
		t.Fatalf("the call's release: %v, %v; want the grant deleted", got, err)
	}
	n.Del(ctx, fenceKey)
}

// A call that gives up takes the release's grant to it away with its queue
// entry, and wakes the next head; one that won (leaving only a late entry)
// keeps it, as it is its lock.
func TestGrantLeftByAGivingUpCall(t *testing.T) {
	for _, gaveUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("gaveUp=%v", gaveUp), func(t *testing.T) {
			ctx := context.Background()
			n := nodes(t, 1)[0]
			c := newTestClient(t, []redis.UniversalClient{n}, nil)
			key, _ := c.Keys(fmt.Sprintf("grant-leave-%v", gaveUp))
			q, qt := c.keys(fmt.Sprintf("grant-leave-%v", gaveUp)).queue, c.keys(fmt.Sprintf("grant-leave-%v", gaveUp)).queueTimes
			mine, next := "leavetoken:me:10000:1", "nexttoken:nextclient"
			n.ZAdd(ctx, q, redis.Z{Score: 1, Member: mine}, redis.Z{Score: 2, Member: next})
			n.ZAdd(ctx, qt, redis.Z{Score: 1e15, Member: mine}, redis.Z{Score: 1e15, Member: next})
			n.Set(ctx, key, "leavetoken.0", 10*time.Second)
			channel := c.keys(fmt.Sprintf("grant-leave-%v", gaveUp)).channel
			ps := n.Subscribe(ctx, channel+":nextclient")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			flag := "0"
			if gaveUp {
				flag = "1"
			}
			if got, err := queueLeaveScript.Run(ctx, n, []string{key}, mine, channel, flag).Int64(); err != nil || got != 1 {
				t.Fatalf("leave: %v, %v; want the entry removed", got, err)
			}
			v := n.Get(ctx, key).Val()
			if gaveUp && v != "" || !gaveUp && v != "leavetoken.0" {
				t.Fatalf("the key holds %q after the leave (gave up %v)", v, gaveUp)
			}
			if gaveUp {
				m, err := ps.ReceiveMessage(ctx)
				if err != nil || m.Payload != next {
					t.Fatalf("the next head heard %v, %v; want %q", m, err, next)
				}
			}
			n.Del(ctx, key, q, qt)
		})
	}
}

// Two Clients (as two processes) taking one lock in turns, each taking it
// again as soon as it has released it: each waits behind the other's short
// hold, and the other's release hands it the lock by grant. Two ways the
// waiter used to miss its turn and sleep until its next poll (queueRefresh,
// a quarter of a second), each now fixed and caught here:
//   - the release came before the waiter listened for it (the nodes refused
//     its attempt, and the holder released, before the refusal was back):
//     now a call listens before its first attempt when notices on its
//     channel reach us already, and is woken when they start to;
//   - a node whose key was free with the waiter's entry behind the
//     releasing call's (that call's attempt there had failed and been
//     cleaned up) told nobody: now a release that finds the key free hands
//     it on to the head as well.
//
// Mutual exclusion is checked on the way.
func TestGrantPingPongBetweenTwoClients(t *testing.T) {
	const each = 20
	ns := nodes(t, 3)
	name := "grant-ping-pong"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var inCS atomic.Int32
	var fromGrants, byAttempt, slept, overlaps atomic.Int64
	var g errgroup.Group
	for range 2 {
		c := newTestClient(t, ns, nil)
		g.Go(func() error {
			for range each {
				t0 := time.Now()
				l, err := c.Acquire(ctx, name, 10*time.Second, nil)
				if err != nil {
					return err
				}
				if inCS.Add(1) != 1 {
					overlaps.Add(1)
				}
				if time.Since(t0) >= queueRefresh {
					slept.Add(1)
				}
				l.call.mu.Lock()
				switch a := l.call.attempt; {
				case a == 0:
					fromGrants.Add(1)
				case a > 1: // waited, then won by an attempt
					byAttempt.Add(1)
				}
				l.call.mu.Unlock()
				inCS.Add(-1)
				if err := l.Release(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d critical sections overlapped", n)
	}
	granted, attempted := fromGrants.Load(), byAttempt.Load()
	t.Logf("of %d acquisitions: %d waited and took the lock from the grants, %d waited and won an attempt, %d waited a poll interval or longer",
		2*each, granted, attempted, slept.Load())
	// Many acquisitions find the lock free (the other Client is between its
	// release and its next attempt); a quarter must have waited.
	if granted+attempted < each/2 {
		t.Fatalf("only %d of %d acquisitions waited: the two Clients did not take turns", granted+attempted, 2*each)
	}
	// A handoff takes milliseconds; a wait as long as a waiter's poll
	// interval means it slept through its turn. One is allowed for a
	// machine that stalls the test for that long.
	if n := slept.Load(); n > 1 {
		t.Fatalf("%d of %d waits lasted %v (the waiter's poll interval) or longer: the waiters missed their turns", n, granted+attempted, queueRefresh)
	}
}

// Releases that grant the key to different waiters on different nodes, so
// that none has a quorum, must not leave the waiters stuck. Each waiter
// keeps its grants while it waits (it may count them from their notices),
// so before a waiter gave its grants up on such a split (Client.split),
// both waited until their contexts ended. Set up on 5 nodes: a foreign key
// on node 4, the holder on nodes 0-3, two waiters queued everywhere; then
// the first waiter's entry is taken out on nodes 2 and 3 and the second's
// on nodes 0 and 1 (as when an entry reaches a node after the release
// there), and the holder releases: nodes 0 and 1 grant the first waiter,
// 2 and 3 the second, each two of the quorum of three. Both must then get
// the lock in turn, one after the other.
func TestGrantSplitBetweenWaitersResolves(t *testing.T) {
	ctx := context.Background()
	ns := nodes(t, 5)
	const name = "grant-split"
	holder := newTestClient(t, ns, nil)
	key, _ := holder.Keys(name)
	q, qt := holder.keys(name).queue, holder.keys(name).queueTimes
	if err := ns[4].Set(ctx, key, "foreign.1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	defer ns[4].Del(ctx, key)
	h, err := holder.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The holder's key on nodes 0-3, every one of them (its lock is freed
	// by hand below, with the release script).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		for _, v := range keyValues(t, ns[:4], key) {
			if strings.HasPrefix(v, h.Token()+".") {
				n++
			}
		}
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's key is on %d of nodes 0-3: %v", n, keyValues(t, ns[:4], key))
		}
	}
	// The waiters poll as seldom as a queued waiter may (queueRefresh): the
	// split is set up between their polls.
	opts := &AcquireOptions{Retry: func(int) (time.Duration, bool) { return time.Hour, true }}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var inCS atomic.Int32
	var g errgroup.Group
	waiters := []*Client{newTestClient(t, ns, nil), newTestClient(t, ns, nil)}
	for i, w := range waiters {
		g.Go(func() error {
			l, err := w.Acquire(wctx, name, 10*time.Second, opts)
			if err != nil {
				return fmt.Errorf("waiter %d: %w", i+1, err)
			}
			if inCS.Add(1) != 1 {
				return fmt.Errorf("waiter %d: another holds the lock too", i+1)
			}
			inCS.Add(-1)
			return l.Release(ctx)
		})
		waitQueued(t, w, ns, name, int64(i+1))
		waitSubscribed(t, w, w.keys(name).channel+":"+w.waker.id, len(ns))
	}
	// Each waiter's entry, by its Client's id.
	entries := make([]string, 2)
	for _, e := range ns[0].ZRange(ctx, q, 0, -1).Val() {
		for i, w := range waiters {
			if strings.Contains(e, ":"+w.waker.id+":") {
				entries[i] = e
			}
		}
	}
	if entries[0] == "" || entries[1] == "" {
		t.Fatalf("queue on node 0: %v, want both waiters' entries", ns[0].ZRange(ctx, q, 0, -1).Val())
	}
	// On each node, in one transaction (no poll of a waiter between): the
	// entry out, then the holder's release, the release script as its
	// Release runs it.
	// (the release derives the queue and the counter from the key)
	for i, n := range ns[:4] {
		gone := entries[0] // nodes 2 and 3 grant the second waiter
		if i < 2 {
			gone = entries[1] // nodes 0 and 1 the first
		}
		if _, err := n.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.ZRem(ctx, q, gone)
			p.ZRem(ctx, qt, gone)
			p.Eval(ctx, releasePlainScript.Source(), []string{key}, h.ls.prefix)
			return nil
		}); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	// The split: each waiter granted on two nodes (a waiter's poll keeps
	// its grant as it is).
	want := []string{entries[0], entries[0], entries[1], entries[1]}
	for i, v := range keyValues(t, ns[:4], key) {
		if tok, _, _ := strings.Cut(want[i], ":"); v != tok+".0" {
			t.Fatalf("node %d holds %q after the release, want the grant %s.0", i, v, tok)
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	assertNoLockKey(t, ns[:4], key)
	ns[4].Del(ctx, key)
	assertNoQueueKeys(t, holder, ns, name)
}
