package redlock

import (
	"context"
	"testing"
	"time"
)

// An observer hears a resign nobody campaigns behind at once, not at its
// next poll (an hour here): while it listens it marks the name, as a
// refused barging attempt does, so the release announces itself though
// nobody queues. When it stops, its mark lapses within a second.
func TestObserveHearsResignNobodyWaitsFor(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	ctx := t.Context()
	ld, err := c.Campaign(ctx, "resigns", time.Minute, "a")
	if err != nil {
		t.Fatal(err)
	}
	octx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := c.Observe(octx, "resigns", &ObserveOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	next := func(what string) LeaderInfo {
		t.Helper()
		select {
		case info, ok := <-ch:
			if !ok {
				t.Fatalf("%s: Observe's channel closed", what)
			}
			return info
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no entry from Observe within 5s (its interval is an hour)", what)
		}
		return LeaderInfo{}
	}
	if info := next("the first entry"); !info.Held || info.Value != "a" {
		t.Fatalf("Observe's first entry %+v; want a leading", info)
	}
	// Every node's subscription is in place, then the release.
	k := c.keys("resigns")
	for i, n := range ns {
		for n.PubSubNumSub(ctx, k.channel).Val()[k.channel] == 0 {
			if err := ctx.Err(); err != nil {
				t.Fatalf("node %d: Observe never subscribed to %s", i, k.channel)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // the marks written after the subscriptions
	if err := ld.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if info := next("after the resign"); info.Held {
		t.Errorf("Observe's entry after the resign %+v; want nobody leading", info)
	}
	stop()
	for range ch { // Observe ends
	}
	time.Sleep(1100 * time.Millisecond)
	for i, n := range ns {
		if got := n.Exists(ctx, k.lock+":b").Val(); got != 0 {
			t.Errorf("node %d: the observer's mark %s:b outlived it by over a second", i, k.lock)
		}
	}
}
