package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
)

func TestPause(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 2, nil)
	ctx := ctxT(t)
	if err := c.Client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := c.Pause(0); err != nil {
		t.Fatalf("Pause(0) = %v; want nil", err)
	}
	if err := c.Pause(0); err != nil {
		t.Errorf("second Pause(0) = %v; want nil", err)
	}
	stalled := async(func() error { return c.Client(0).Get(context.Background(), "k").Err() })
	stalls(t, stalled, 500*time.Millisecond, "GET on a paused node")
	if err := dial(c.Addr(0)); err != nil {
		t.Errorf("TCP dial to a paused node = %v; want nil (the port still accepts)", err)
	}
	if err := ping(c.Client(1)); err != nil {
		t.Errorf("node 1: PING while node 0 is paused = %v; want nil", err)
	}
	if err := c.FlushAll(ctx); err != nil {
		t.Errorf("FlushAll with node 0 paused = %v; want nil (paused nodes skipped)", err)
	}
	if err := c.Unpause(0); err != nil {
		t.Fatalf("Unpause(0) = %v; want nil", err)
	}
	// The command sent during the pause is answered after it.
	if err, ok := result(t, stalled, 5*time.Second, "GET sent during the pause, after Unpause"); ok && err != nil {
		t.Errorf("GET sent during the pause = %v after Unpause; want nil", err)
	}
	if err := c.Unpause(0); err != nil {
		t.Errorf("Unpause(0) of a running node = %v; want nil", err)
	}

	// A paused node can be killed and restarted, with its data.
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(0); err != nil {
		t.Fatalf("Kill(0) of a paused node = %v; want nil", err)
	}
	if err := c.Pause(0); err == nil || !strings.Contains(err.Error(), "Restart") {
		t.Errorf("Pause(0) of a killed node = %v; want an error saying to Restart it", err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatalf("Restart(0) = %v; want nil", err)
	}
	if got, err := c.Client(0).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k after Pause, Kill, Restart = %q, %v; want v", got, err)
	}

	// Stop of a paused node is clean (no 5s SIGTERM timeout needed).
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(1); err != nil {
		t.Fatalf("Stop(1) of a paused node = %v; want nil", err)
	}
	if err := c.Restart(1); err != nil {
		t.Fatalf("Restart(1) = %v; want nil", err)
	}

	// Close removes a paused node.
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close() with a paused node = %v; want nil", err)
	}
	if err := c.Pause(0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Pause after Close = %v; want a 'cluster is closed' error", err)
	}
	if err := c.Unpause(1); err == nil {
		t.Error("Unpause after Close = nil; want an error")
	}
}

func TestClockJump(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3, nil)
	ctx := ctxT(t)
	for i := range c.Len() {
		if err := c.Client(i).Set(ctx, "lock", "token", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Client(i).Set(ctx, "fence", 7, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ClockJump(1, "lock"); err != nil {
		t.Fatalf("ClockJump(1, lock) = %v; want nil", err)
	}
	for i := range c.Len() {
		n, err := c.Client(i).Exists(ctx, "lock").Result()
		want := int64(1)
		if i == 1 {
			want = 0
		}
		if err != nil || n != want {
			t.Errorf("node %d: EXISTS lock after ClockJump(1) = %d, %v; want %d", i, n, err, want)
		}
		if i != 1 {
			if ttl := c.Client(i).PTTL(ctx, "lock").Val(); ttl < 50*time.Second {
				t.Errorf("node %d: PTTL lock after ClockJump(1) = %v; want about 1m (untouched)", i, ttl)
			}
		}
	}
	// A clock jump does not touch keys without a TTL, nor missing keys.
	if err := c.ClockJump(1, "fence"); err != nil {
		t.Fatalf("ClockJump(1, fence) = %v; want nil", err)
	}
	if got, err := c.Client(1).Get(ctx, "fence").Int(); err != nil || got != 7 {
		t.Errorf("GET fence after ClockJump(1, fence) = %d, %v; want 7 (no TTL, untouched)", got, err)
	}
	if err := c.ClockJump(1, "lock"); err != nil {
		t.Errorf("ClockJump(1, lock) on a missing key = %v; want nil", err)
	}

	if err := c.Kill(2); err != nil {
		t.Fatal(err)
	}
	if err := c.ClockJump(2, "lock"); err == nil || !strings.HasPrefix(err.Error(), "redlocktest: ClockJump(2") {
		t.Errorf("ClockJump on a killed node = %v; want a redlocktest: ClockJump(2, ...) error", err)
	}
}

func TestClientPause(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 2, nil)
	ctx := ctxT(t)
	const pause = 1500 * time.Millisecond
	begin := time.Now()
	if err := c.ClientPause(1, pause); err != nil {
		t.Fatalf("ClientPause(1, %v) = %v; want nil", pause, err)
	}
	stalled := async(func() error { return c.Client(1).Set(context.Background(), "w", 1, 0).Err() })
	stalls(t, stalled, 500*time.Millisecond, "SET on a client-paused node")
	if err := c.Client(0).Set(ctx, "w", 0, 0).Err(); err != nil {
		t.Errorf("node 0: SET while node 1 is client-paused = %v; want nil", err)
	}
	if err, ok := result(t, stalled, 5*time.Second, "SET on a client-paused node"); ok {
		if err != nil {
			t.Errorf("SET on a client-paused node = %v after the pause; want nil", err)
		}
		if took := time.Since(begin); took < pause-50*time.Millisecond {
			t.Errorf("SET on a client-paused node answered %v after ClientPause(1, %v); want after the pause", took, pause)
		}
	}
	if got, err := c.Client(1).Get(ctx, "w").Int(); err != nil || got != 1 {
		t.Errorf("node 1: GET w = %d, %v; want 1", got, err)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if err := c.ClientPause(0, d); err == nil {
			t.Errorf("ClientPause(0, %v) = nil; want an error", d)
		}
	}
}

func TestRestartEmpty(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 2, nil)
	n := newNet(t, c, "carol")
	ctx := ctxT(t)
	addr := c.Addr(0)
	set := func() {
		t.Helper()
		if err := c.Client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	empty := func(how string) {
		t.Helper()
		if err := c.Client(0).Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET k after %s = %v; want redis.Nil (data lost)", how, err)
		}
		if got, err := c.Client(0).Incr(ctx, "fence").Result(); err != nil || got != 1 {
			t.Errorf("INCR fence after %s = %d, %v; want 1 (counter lost)", how, got, err)
		}
		if got := c.Addr(0); got != addr {
			t.Errorf("Addr(0) after %s = %q; want %q", how, got, addr)
		}
		if err := ping(n.Clients()[0]); err != nil {
			t.Errorf("PING through a Net after %s = %v; want nil", how, err)
		}
	}

	// Restart keeps the data; RestartEmpty does not.
	set()
	for range 2 {
		if err := c.Client(0).Incr(ctx, "fence").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Client(0).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k after Kill and Restart = %q, %v; want v", got, err)
	}
	if err := c.RestartEmpty(0); err != nil {
		t.Fatalf("RestartEmpty(0) of a running node = %v; want nil", err)
	}
	empty("RestartEmpty of a running node")

	set()
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartEmpty(0); err != nil {
		t.Fatalf("RestartEmpty(0) of a killed node = %v; want nil", err)
	}
	empty("Kill and RestartEmpty")

	set()
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartEmpty(0); err != nil {
		t.Fatalf("RestartEmpty(0) of a paused node = %v; want nil", err)
	}
	empty("Pause and RestartEmpty")

	// The other node is untouched, and the new container is a normal node.
	if err := ping(c.Client(1)); err != nil {
		t.Errorf("node 1: PING = %v; want nil", err)
	}
	set()
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Client(0).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k after RestartEmpty, Kill and Restart = %q, %v; want v (AOF)", got, err)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartEmpty(0); err == nil {
		t.Error("RestartEmpty after Close = nil; want an error")
	}
	if err := c.ClockJump(0, "k"); err == nil {
		t.Error("ClockJump after Close = nil; want an error")
	}
	if err := c.ClientPause(0, time.Second); err == nil {
		t.Error("ClientPause after Close = nil; want an error")
	}
}

// The faults of a Cluster and its Nets record themselves, with their kinds,
// into Options.Recorder.
func TestFaultsRecord(t *testing.T) {
	t.Parallel()
	rec := history.NewRecorder()
	c := redlocktest.Start(t, 2, &redlocktest.Options{Recorder: rec})
	n, err := c.NewNet("c1")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	steps := []func() error{
		func() error { return c.Kill(0) },
		func() error { return c.Restart(0) },
		func() error { return c.Pause(1) },
		func() error { return c.Unpause(1) },
		func() error { return c.ClockJump(1, "k") },
		func() error { return c.ClientPause(1, 10*time.Millisecond) },
		func() error { return n.Down(0) },
		func() error { return n.Latency(1, 20*time.Millisecond) },
		func() error { return n.HoldRequests(1, 30*time.Millisecond) },
		func() error { return n.HealAll() },
		func() error { return n.Blackhole(0) },
		func() error { return n.Heal(0) },
		func() error { return c.RestartEmpty(1) },
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	var got []string
	for _, e := range rec.Events() {
		got = append(got, fmt.Sprintf("%s %s %d %s %s", e.Kind, e.Fault, e.Node, e.Client, e.Detail))
	}
	want := []string{
		"fault kill 0  ", "heal kill 0  restart",
		"fault pause 1  ", "heal pause 1  ",
		"fault clock-jump 1  ", "heal clock-jump 1  ",
		"fault client-pause 1  10ms", "heal client-pause 1  10ms",
		"fault down 0 c1 ", "fault latency 1 c1 20ms", "fault hold 1 c1 30ms",
		"heal down 0 c1 ", "heal latency 1 c1 20ms", "heal hold 1 c1 30ms",
		"fault blackhole 0 c1 ", "heal blackhole 0 c1 ",
		"fault amnesia 1  ", "heal amnesia 1  ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded faults:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A lock handed on in one step (a release that grants the next waiter) is
// never absent: ClockJump returns once the value it cut is gone, even if
// the key already holds another.
func TestClockJumpKeyTakenAtOnce(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 1, nil)
	ctx := ctxT(t)
	n := c.Client(0)
	if err := n.Set(ctx, "lock", "first", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// Whoever comes next takes the key the moment it is free, again and
	// again: a script that only waits for EXISTS 0 rarely sees it.
	taker := n.Options()
	taker.PoolSize = 1
	other := redis.NewClient(taker)
	defer other.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // owner: the test; stopped by stop, joined by <-done
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			other.Eval(ctx, `if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) end`,
				[]string{"lock"}, fmt.Sprint("next", i))
		}
	}()
	err := c.ClockJump(0, "lock")
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("ClockJump(0, lock) with the key taken at once = %v; want nil", err)
	}
	if v := n.Get(ctx, "lock").Val(); v == "first" {
		t.Fatalf("the key still holds %q after ClockJump; want it cut", v)
	}
}
