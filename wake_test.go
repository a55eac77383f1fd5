package redlock

import (
	"github.com/redlock-go/redlock/internal/transport"

	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of waking waiters: release notices (pub/sub on every node), the
// waker that turns them into wake-ups, and its connections.

func TestReleaseWakesWaiter(t *testing.T) {
	c := newTestClient(t, nodes(t, 3), nil)
	holder, err := c.Acquire(t.Context(), "wake", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's retry delay is an hour: only the release notice can
	// get it the lock within the test's time.
	hour := func(int) (time.Duration, bool) { return time.Hour, true }
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := c.Acquire(ctx, "wake", time.Minute, &AcquireOptions{Retry: hour})
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(500 * time.Millisecond) // the waiter has failed once and subscribed
	if err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter: %v; want the lock after the holder's release", err)
	}
}

// A release nobody waits for announces nothing: no PUBLISH on the node. A
// barging attempt that is refused marks the key ({name}:b) for a second,
// and a release while the mark lives publishes the notice bargers wake on
// ("" on the lock's channel). That a barger waiting an hour between
// attempts wakes on it: TestGrantHandsOffWithoutAnAttempt.
func TestReleaseAnnouncesOnlyWhenABargerMarked(t *testing.T) {
	ns := nodes(t, 1)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	k := c.keys("marked")
	sub := ns[0].Subscribe(ctx, k.channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	msgs := sub.Channel() // closed by sub.Close
	notice := func() bool {
		select {
		case m := <-msgs:
			return m.Payload == ""
		case <-time.After(300 * time.Millisecond):
			return false
		}
	}
	cycle := func(refused bool) {
		t.Helper()
		l, err := c.Acquire(ctx, "marked", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ns[0].ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		// Another call's barging attempt, refused.
		if refused {
			g, err := takeReply(acquirePlainScript.Run(ctx, ns[0], []string{k.lock}, "barger.1", "60000", "1", queueBarge))
			if err != nil || g.ok {
				t.Fatalf("barging attempt on the held key = %+v, %v; want refused", g, err)
			}
			if ttl := ns[0].PTTL(ctx, k.lock+":b").Val(); ttl <= 0 || ttl > time.Second {
				t.Fatalf("mark's TTL after the refusal %v; want up to a second", ttl)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle(false)
	if got := commandCalls(t, ns[0])["publish"]; got != 0 || notice() {
		t.Errorf("a release nobody waits for published %d notices; want none", got)
	}
	cycle(true)
	if !notice() {
		t.Errorf("no notice on %s from the release after a barging attempt was refused", k.channel)
	}

	// A semaphore's slot is taken barging but never marked (its release is
	// announced while the gate is held: TestSlotReleaseAnnouncedWhileGateHeld).
	slot := semKeysOf(c.opts.KeyPrefix, "marked-slots").slotKeys(0).lock
	if err := ns[0].Set(ctx, slot, "other.1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := slotAcquireScript.Run(ctx, ns[0], []string{slot}, "me.1", "60000", "1", queueBarge, "2", "0").Result()
	if g, perr := takeOf(res); err != nil || perr != nil || g.ok {
		t.Fatalf("slot attempt on a held slot = %v, %v; want refused", res, err)
	}
	if n := ns[0].Exists(ctx, slot+":b").Val(); n != 0 {
		t.Errorf("a refused slot attempt marked %s:b; want no mark", slot)
	}
}

// The re-entrant, shared and multi-name releases keep the plain lock's
// rule: a release nobody waits for publishes nothing, and a barging
// waiter, whose refused attempt marked the key, is woken by the release
// (its retry delay is an hour, the holder's TTL a minute).
func TestFormsAnnounceReleaseOnlyWhenMarked(t *testing.T) {
	ns := nodes(t, 3)
	c, w := newTestClient(t, ns, nil), newTestClient(t, ns, nil)
	ctx := t.Context()
	hour := func(int) (time.Duration, bool) { return time.Hour, true }
	type release func(context.Context) error
	for _, f := range []struct {
		form string
		take func(c *Client, name string, o *AcquireOptions) (release, error)
	}{
		{"re-entrant", func(c *Client, name string, o *AcquireOptions) (release, error) {
			o.Reentrant = true
			l, err := c.Acquire(ctx, name, time.Minute, o)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}},
		{"shared, a writer waiting", func(c *Client, name string, o *AcquireOptions) (release, error) {
			take := c.AcquireShared
			if o.Barging { // the waiter: a writer
				take = c.Acquire
			}
			l, err := take(ctx, name, time.Minute, o)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		}},
		{"multi", func(c *Client, name string, o *AcquireOptions) (release, error) {
			m, err := c.AcquireMulti(ctx, []string{name + "-a", name + "-b"}, time.Minute, o)
			if err != nil {
				return nil, err
			}
			return m.Release, nil
		}},
	} {
		t.Run(f.form, func(t *testing.T) {
			name := "announce-" + strings.ReplaceAll(f.form, " ", "-")
			rel, err := f.take(c, name, &AcquireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			announcesNothing(t, ns, "a release", func() error { return rel(ctx) })

			if rel, err = f.take(c, name, &AcquireOptions{}); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() {
				rel, err := f.take(w, name, &AcquireOptions{Barging: true, Retry: hour})
				if err == nil {
					err = rel(ctx)
				}
				got <- err
			}()
			// The barger's first attempt is refused (and marks the key):
			// give it time to be, then release.
			select {
			case err := <-got:
				t.Fatalf("barging waiter returned %v while the key was held; want it to wait", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := rel(ctx); err != nil {
				t.Fatal(err)
			}
			wokenByRelease(t, got, "the barging waiter")
		})
	}
}

// A slot's release is announced while its semaphore's gate is held, and
// only then: the gate's holder is the one waiter a slot's release
// concerns. A release nobody waits for publishes nothing; a waiter whose
// retry delay is an hour, holding the gate while the only permit is held
// for a minute, gets it on the release's notice.
func TestSlotReleaseAnnouncedWhileGateHeld(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	p, err := c.AcquirePermit(ctx, "gated", 1, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	announcesNothing(t, ns, "a permit's release", func() error { return p.Release(ctx) })

	if p, err = c.AcquirePermit(ctx, "gated", 1, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	hour := func(int) (time.Duration, bool) { return time.Hour, true }
	w := newTestClient(t, ns, nil)
	got := make(chan error, 1)
	go func() {
		q, err := w.AcquirePermit(ctx, "gated", 1, time.Minute, &AcquireOptions{Retry: hour})
		if err == nil {
			err = q.Release(ctx)
		}
		got <- err
	}()
	gate := semKeysOf(c.opts.KeyPrefix, "gated").gate.lock
	for held := 0; held < len(ns); {
		select {
		case err := <-got:
			t.Fatalf("waiter returned %v before the release; want it to wait", err)
		case <-time.After(10 * time.Millisecond):
		}
		held = 0
		for _, n := range ns {
			held += int(n.Exists(ctx, gate).Val())
		}
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wokenByRelease(t, got, "the waiter holding the gate")
}

// announcesNothing runs release, with every node's command counts reset
// before it, and reports every node that published a notice for it.
func announcesNothing(t *testing.T, ns []redis.UniversalClient, what string, release func() error) {
	t.Helper()
	for _, n := range ns {
		if err := n.ConfigResetStat(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for i, n := range ns {
		if got := commandCalls(t, n)["publish"]; got != 0 {
			t.Errorf("node %d: %s nobody waits for published %d notices; want none", i, what, got)
		}
	}
}

// wokenByRelease waits for a waiter's result on got: nil within 10s,
// which only a release's notice can give a waiter whose retry delay is an
// hour.
func wokenByRelease(t *testing.T, got <-chan error, who string) {
	t.Helper()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("%s: %v; want it to hold after the release", who, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s was not woken by the release within 10s (its retry is an hour)", who)
	}
}

// wokenNow reports whether a wake-up is waiting on ch, taking it.
func wokenNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestQueueWakerWakesNamedHeadOnQuorum(t *testing.T) {
	w := newWaker(make([]node, 5), time.Second, nil, new(transport.Tracker)) // no subscriptions: notices are fed by hand
	defer w.close()
	head, _, cancelHead, _ := w.watch("ch", "head")
	defer cancelHead()
	other, _, cancelOther, _ := w.watch("ch", "other")
	defer cancelOther()
	barger, _, cancelBarger, _ := w.watch("ch", "")
	defer cancelBarger()
	for i := 1; i <= 3; i++ {
		w.notify(0, "ch", "head")
		if got, want := wokenNow(head), i == 3; got != want {
			t.Fatalf("after %d notices naming the head: woken %v, want %v (a quorum of 5 is 3)", i, got, want)
		}
		if !wokenNow(barger) {
			t.Fatalf("notice %d did not wake the barging waiter", i)
		}
	}
	if wokenNow(other) {
		t.Fatal("a queued waiter not named by the notices was woken")
	}
	w.notify(0, "ch", "")
	if wokenNow(head) || wokenNow(other) || !wokenNow(barger) {
		t.Fatal("an empty notice (nobody queued) must wake the barging waiter only")
	}
}

// A waiter that listened before notices on its channel reached us is woken
// once they start to, from a quorum of the nodes: a release announced before
// then went unheard. A waiter that listens later is told they reach us
// already, so that it tries again at once instead.
func TestQueueWakerWakesWaitersWhenNoticesStart(t *testing.T) {
	w := newWaker(make([]node, 5), time.Second, nil, new(transport.Tracker)) // no subscriptions: counted in by hand
	defer w.close()
	early, _, cancelEarly, live := w.watch("ch", "early")
	defer cancelEarly()
	if live {
		t.Fatal("watch reported notices reaching us before any node's subscription is live")
	}
	for i := 1; i <= 5; i++ {
		w.setLive("ch", 1)
		if got, want := wokenNow(early), i == 3; got != want {
			t.Fatalf("after %d nodes' subscriptions went live: woken %v, want %v (a quorum of 5 is 3)", i, got, want)
		}
	}
	late, _, cancelLate, live := w.watch("ch", "late")
	defer cancelLate()
	if !live {
		t.Fatal("watch did not report notices reaching us from every node")
	}
	if wokenNow(late) {
		t.Fatal("a waiter that listened after the subscriptions went live was woken by them")
	}
	// Down to 2 nodes of 5, then back to a quorum: notices may have gone
	// unheard meanwhile, so every waiter is woken again.
	w.setLive("ch", -1)
	w.setLive("ch", -1)
	w.setLive("ch", -1)
	if wokenNow(early) || wokenNow(late) {
		t.Fatal("woken as notices stopped reaching us from a quorum")
	}
	w.setLive("ch", 1)
	if !wokenNow(early) || !wokenNow(late) {
		t.Fatal("not woken when notices reached us from a quorum again")
	}
}

// A name contended in a loop keeps its release subscription between calls
// for subscriptionLinger, then drops it.
func TestQueueSubscriptionLingers(t *testing.T) {
	ns := nodes(t, 1)
	const name = "fair-linger"
	_, holder, l := holdFair(t, 1, name)
	c := newTestClient(t, ns, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Acquire(ctx, name, 10*time.Second, nil); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire of a held lock: %v; want ErrNotAcquired when ctx ends", err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	channel := holder.keys(name).channel + ":" + c.waker.id // c's own channel for the name
	subs := func() int64 {
		m, err := ns[0].PubSubNumSub(context.Background(), channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m[channel]
	}
	if n := subs(); n != 1 {
		t.Fatalf("%d subscribers to %s just after the waiter left; want 1 (it lingers)", n, channel)
	}
	deadline := time.Now().Add(subscriptionLinger + 5*time.Second)
	for subs() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still subscribed to %s %v after the waiter left; want dropped after %v", channel, subscriptionLinger+5*time.Second, subscriptionLinger)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A Client's first Acquire that may wait opens its notice connections, one
// per node, even when it meets no contention: its first contended wait then
// subscribes on connections already open instead of dialling every node at
// the moment it waits. A Client that only try-locks opens none.
func TestQueueNoticeConnectionsOpenAtFirstWaitingAcquire(t *testing.T) {
	const n = 3
	ctx := context.Background()
	dials := make([]atomic.Int32, n)
	client := func() *Client {
		ns := make([]redis.UniversalClient, n)
		for i := range ns {
			// One pooled connection per node: the count is then the pool's 1
			// and the notice connections (a pub/sub connection is not the
			// pool's). With more, a node whose acquire answered after the
			// quorum could take a second pooled connection for the release,
			// which a loaded machine did.
			rc := redis.NewClient(&redis.Options{Addr: cluster(t).Addr(i), PoolSize: 1, OnConnect: func(context.Context, *redis.Conn) error {
				dials[i].Add(1)
				return nil
			}})
			t.Cleanup(func() { _ = rc.Close() })
			ns[i] = rc
		}
		return newTestClient(t, ns, nil)
	}
	lockOnce := func(c *Client, name string, o *AcquireOptions) {
		l, err := c.Acquire(ctx, name, 10*time.Second, o)
		if err != nil {
			t.Fatalf("uncontended Acquire: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	settled := func(want int32) []int32 {
		got := make([]int32, n)
		deadline := time.Now().Add(5 * time.Second)
		for {
			ok := true
			for i := range dials {
				got[i] = dials[i].Load()
				ok = ok && got[i] == want
			}
			if ok || time.Now().After(deadline) {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	tryOnly := client()
	lockOnce(tryOnly, "notice-conns-try", &AcquireOptions{Retry: NoRetry()})
	time.Sleep(200 * time.Millisecond) // room for a connection that should not come
	if got := settled(1); !slices.Equal(got, []int32{1, 1, 1}) {
		t.Fatalf("connections dialled per node by a Client that only try-locked: %v; want 1 each (its pool's)", got)
	}
	tryOnly.Close()

	for i := range dials {
		dials[i].Store(0)
	}
	waiting := client()
	lockOnce(waiting, "notice-conns-wait", nil)
	if got := settled(2); !slices.Equal(got, []int32{2, 2, 2}) {
		t.Fatalf("connections dialled per node by a Client after one uncontended waiting Acquire: %v; want 2 each (its pool's and its notice connection)", got)
	}
}

// A node that cannot be reached is dialled again for its notices with a
// growing pause (at most a second), not ten times a second for as long as
// it is down: every Client that has waited once keeps trying.
func TestQueueNoticeRedialBacksOff(t *testing.T) {
	ctx := context.Background()
	var dials atomic.Int32
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, // one dial per try
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("node down (test)")
		}})
	t.Cleanup(func() { _ = down.Close() })
	c := newTestClient(t, []redis.UniversalClient{cluster(t).Client(0), cluster(t).Client(1), down}, nil)
	l, err := c.Acquire(ctx, "notice-redial", 10*time.Second, nil) // opens the notice connections
	if err != nil {
		t.Fatalf("Acquire with one node of three down: %v", err)
	}
	_ = l.Release(ctx) // it reports the down node; the other two released it
	const watch = 2500 * time.Millisecond
	time.Sleep(200 * time.Millisecond) // the calls' own dials are over
	before := dials.Load()
	time.Sleep(watch)
	// Pauses of 100, 200, 400, 800 ms, then a second: about six dials in
	// the window. A fixed 100 ms pause dials about 25 times.
	if n := dials.Load() - before; n > 10 {
		t.Errorf("the down node was dialled %d times in %v for its notices; want a growing pause between tries (at most about 7)", n, watch)
	}
}
