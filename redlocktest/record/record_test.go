package record_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
	"github.com/redlock-go/redlock/redlocktest/record"
)

func TestMain(m *testing.M) {
	redlocktest.SkipExamplesWithoutDocker("^Example$")
	os.Exit(m.Run())
}

func TestRecord(t *testing.T) {
	cl := redlocktest.Start(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := history.NewRecorder()
	var observed atomic.Int64
	user := func(context.Context, redlock.Event) { observed.Add(1) } // the user's own observer still runs
	c1, err := record.As(rec, "c1").New(cl.Clients(), &redlock.Options{OnEvent: user})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := record.As(rec, "c2").New(cl.Clients(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()

	// A hold kept by the watchdog, a refused rival, a guarded write.
	l, err := c1.Acquire(ctx, "job", 300*time.Millisecond, &redlock.AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Acquire(ctx, "job", time.Second, &redlock.AcquireOptions{Retry: redlock.NoRetry()}); !errors.Is(err, redlock.ErrHeld) {
		t.Fatalf("c2's Acquire while c1 holds = %v; want ErrHeld", err)
	}
	time.Sleep(500 * time.Millisecond) // the watchdog extends at TTL/3
	g := new(guard.InProcess)
	var stored int64
	err = record.As(rec, "c1").Write("job", l, 1, func() (int64, error) {
		return 1, g.Do("job", l, func() error { stored = 1; return nil })
	})
	if err != nil || stored != 1 {
		t.Fatalf("guarded write = %v (stored %d); want accepted", err, stored)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A hold lost: its keys vanish, the watchdog hears "not ours".
	l2, err := c2.Acquire(ctx, "other", 300*time.Millisecond, &redlock.AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the flushed hold never ended")
	}

	count := map[history.Kind]int{}
	var extends []history.Event
	for _, e := range rec.Events() {
		count[e.Kind]++
		if e.Kind == history.Extend && e.Token == l.Token() && e.Detail == "" {
			extends = append(extends, e)
		}
		if e.Kind == history.Acquire && e.Token == l.Token() && (e.Fence != l.Fence() || e.Client != "c1" || e.Until <= e.At) {
			t.Errorf("c1's Acquire recorded as %+v; want client c1, fence %d, a deadline after its end", e, l.Fence())
		}
	}
	want := map[history.Kind]int{history.Acquire: 2, history.AcquireFail: 1, history.Release: 1, history.Lost: 1, history.Write: 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s events = %d; want %d (history: %v)", k, count[k], n, rec.Events())
		}
	}
	if len(extends) == 0 {
		t.Errorf("watchdog extends of c1's hold recorded = 0; want >= 1 in 500ms of a 300ms TTL")
	}
	for i := 1; i < len(extends); i++ {
		if extends[i].Until <= extends[i-1].Until {
			t.Errorf("extend %d moved the deadline to %v, not past %v", i, extends[i].Until, extends[i-1].Until)
		}
	}
	if observed.Load() == 0 {
		t.Error("the user's Observe was never called; want it chained")
	}
	if rep := history.Check(rec.Events(), &history.CheckOptions{Counters: map[string]int64{"job": 1}}); !rep.OK() {
		t.Errorf("Check of the recorded history: %v; want no violation", rep)
	}
}
