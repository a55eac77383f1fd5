package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestNetHoldRequests(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 1, nil)
	direct := c.Client(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := newNet(t, c, "holder")
	cl := n.Clients()[0]
	if err := ping(cl); err != nil { // connect before the hold
		t.Fatal(err)
	}
	const key = "held-request"

	// A caller that gives up gets its context's error, the request stays
	// held, and a request sent after Heal overtakes it.
	if err := n.HoldRequests(0, 700*time.Millisecond); err != nil {
		t.Fatalf("HoldRequests(0, 700ms) = %v; want nil", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	err := cl.Set(short, key, "first", 0).Err()
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SET with a 100ms context through a 700ms hold = %v; want context.DeadlineExceeded", err)
	}
	if got := n.Held(); got != 1 {
		t.Errorf("Held() after the caller gave up = %d; want 1 (the request still held)", got)
	}
	if cnt, err := direct.Exists(ctx, key).Result(); cnt != 0 || err != nil {
		t.Errorf("EXISTS right after the caller gave up = %d, %v; want 0 (not sent yet)", cnt, err)
	}
	if err := n.Heal(0); err != nil {
		t.Fatalf("Heal(0) = %v; want nil", err)
	}
	if err := cl.Set(ctx, key, "second", 0).Err(); err != nil {
		t.Fatalf("SET after Heal = %v; want nil", err)
	}
	if got := direct.Get(ctx, key).Val(); got != "second" {
		t.Errorf("GET after the healed SET = %q; want %q", got, "second")
	}
	if !waitHeld(n, 10*time.Second) {
		t.Fatalf("Held() = %d 10s after a 700ms hold; want 0", n.Held())
	}
	if got := direct.Get(ctx, key).Val(); got != "first" {
		t.Errorf("GET once the held SET was sent = %q; want %q (the held request lands last)", got, "first")
	}

	// A caller that waits gets its own answer after the hold.
	if err := n.HoldRequests(0, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Get(ctx, key).Result(); got != "first" || err != nil {
		t.Errorf("GET through a 50ms hold with time to wait = %q, %v; want %q, nil", got, err, "first")
	}
	if err := n.HoldRequests(0, -time.Second); err == nil {
		t.Error("HoldRequests(0, -1s) = nil; want an error")
	}

	// Close drops the requests still held, and waits for their goroutines.
	if err := n.HoldRequests(0, time.Hour); err != nil {
		t.Fatal(err)
	}
	short, cancelShort = context.WithTimeout(ctx, 50*time.Millisecond)
	err = cl.Set(short, key, "dropped", 0).Err()
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SET with a 50ms context through a 1h hold = %v; want context.DeadlineExceeded", err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if got := n.Held(); got != 0 {
		t.Errorf("Held() after Close = %d; want 0", got)
	}
	if got := direct.Get(ctx, key).Val(); got != "first" {
		t.Errorf("GET after Close = %q; want %q (the held SET dropped)", got, "first")
	}
	if err := n.HoldRequests(0, time.Second); err == nil {
		t.Error("HoldRequests after Close = nil; want an error")
	}
}

// waitHeld waits up to d for n to hold no request.
func waitHeld(n *redlocktest.Net, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n.Held() == 0 {
			return true
		}
	}
	return n.Held() == 0
}

// TestNetHoldRequestsBy: only the requests the function picks are held,
// for the time it gives, and a later one overtakes them (a new
// connection's handshake, which it does not pick, goes at once too).
func TestNetHoldRequestsBy(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 1, nil)
	direct := c.Client(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := newNet(t, c, "picker")
	cl := n.Clients()[0]
	if err := n.HoldRequestsBy(0, func(args []any) time.Duration {
		if len(args) > 2 && args[0] == "set" && args[2] == "held" {
			return 500 * time.Millisecond
		}
		return 0
	}); err != nil {
		t.Fatalf("HoldRequestsBy = %v; want nil", err)
	}
	// The first request opens a connection: its handshake goes through.
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	err := cl.Set(short, "picked", "held", 0).Err()
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the picked SET with a 100ms context = %v; want context.DeadlineExceeded (held)", err)
	}
	if err := cl.Set(ctx, "picked", "passed", 0).Err(); err != nil {
		t.Fatalf("a SET the function does not pick = %v; want nil at once", err)
	}
	if got := direct.Get(ctx, "picked").Val(); got != "passed" {
		t.Errorf("GET before the held SET lands = %q; want %q", got, "passed")
	}
	if !waitHeld(n, 10*time.Second) {
		t.Fatalf("Held() = %d 10s after a 500ms hold; want 0", n.Held())
	}
	if got := direct.Get(ctx, "picked").Val(); got != "held" {
		t.Errorf("GET once the held SET landed = %q; want %q (it lands last)", got, "held")
	}
	if err := n.Heal(0); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "picked", "held", 0).Err(); err != nil {
		t.Errorf("the SET the function picked, after Heal = %v; want nil at once", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.HoldRequestsBy(0, nil); err == nil {
		t.Error("HoldRequestsBy after Close = nil; want an error")
	}
}
