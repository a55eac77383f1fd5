package redlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

// seen is an event with the value its context carried under ctxKey and
// whether that context had ended.
type seen struct {
	Event
	from  string
	ended bool
}

// ctxEvents records every event with its context's ctxKey value.
type ctxEvents struct {
	mu  sync.Mutex
	all []seen
}

func (r *ctxEvents) observe(ctx context.Context, e Event) {
	from, _ := ctx.Value(ctxKey{}).(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, seen{e, from, ctx.Err() != nil})
}

func (r *ctxEvents) find(match func(seen) bool) []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seen
	for _, s := range r.all {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

func from(ctx context.Context, v string) context.Context { return context.WithValue(ctx, ctxKey{}, v) }

// TestObserveGetsCallersContext: the observer receives the context of the
// call that caused each event (Acquire's, Extend's, Release's, for their
// node answers too); the watchdog's rounds and a loss get the lock's own:
// Acquire's values, without its cancellation.
func TestObserveGetsCallersContext(t *testing.T) {
	var rec ctxEvents
	c := newTestClient(t, nodes(t, 3), &Options{NodeTimeout: time.Second, OnEvent: rec.observe})

	actx, cancel := context.WithCancel(from(t.Context(), "acquire"))
	l, err := c.Acquire(actx, "observe-ctx", 600*time.Millisecond, &AcquireOptions{AutoExtend: true})
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the lock's own context outlives the call's
	if err := l.Extend(from(t.Context(), "extend"), 600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.find(func(s seen) bool { return s.Kind == EventExtend && s.Auto })) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Release(from(t.Context(), "release")); err != nil {
		t.Fatal(err)
	}

	lost, err := c.Acquire(from(t.Context(), "lost"), "observe-ctx-lost", 200*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-lost.Done()

	time.Sleep(100 * time.Millisecond) // the node answers after the quorum
	for _, want := range []struct {
		what  string
		match func(seen) bool
		from  string
	}{
		{"acquire", func(s seen) bool { return s.Kind == EventAcquire && s.Name == "observe-ctx" }, "acquire"},
		{"acquire's node answers", func(s seen) bool {
			return s.Kind == EventNode && s.Op == EventAcquire && s.Name == "observe-ctx"
		}, "acquire"},
		{"Extend", func(s seen) bool { return s.Kind == EventExtend && !s.Auto }, "extend"},
		{"watchdog round", func(s seen) bool { return s.Kind == EventExtend && s.Auto }, "acquire"},
		{"release", func(s seen) bool { return s.Kind == EventRelease }, "release"},
		{"release's node answers", func(s seen) bool {
			return s.Kind == EventNode && s.Op == EventRelease && s.Name == "observe-ctx"
		}, "release"},
		{"loss", func(s seen) bool { return s.Kind == EventLost }, "lost"},
	} {
		got := rec.find(want.match)
		if len(got) == 0 {
			t.Errorf("%s: no event", want.what)
		}
		for _, s := range got {
			if s.from != want.from {
				t.Errorf("%s: %v event's context is %q's; want %q's", want.what, s.Kind, s.from, want.from)
			}
			if (s.Kind == EventLost || s.Auto) && s.ended {
				t.Errorf("%s: the lock's own context has ended; want it without the call's cancellation", want.what)
			}
		}
	}
}

// TestObserveWait: a call that waits reports EventWait when it starts
// waiting and when it stops (won or gave up), with its context; one that
// wins at once reports none. Starts minus stops is the number waiting.
func TestObserveWait(t *testing.T) {
	var rec ctxEvents
	c := newTestClient(t, nodes(t, 3), &Options{NodeTimeout: time.Second, OnEvent: rec.observe})
	other := newTestClient(t, nodes(t, 3), nil)
	name := "observe-wait"
	waits := func() []seen { return rec.find(func(s seen) bool { return s.Kind == EventWait }) }

	held, err := c.Acquire(from(t.Context(), "first"), name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := waits(); len(w) != 0 {
		t.Errorf("an uncontended Acquire reported waits %+v; want none", w)
	}

	// Waits for this Client's holder (its local turn), then wins.
	local := make(chan error, 1)
	go func() {
		l, err := c.Acquire(from(t.Context(), "local"), name, 10*time.Second, nil)
		if err == nil {
			err = l.Release(t.Context())
		}
		local <- err
	}()
	// Waits for another Client's holder (the nodes' queue), gives up.
	heldElsewhere, err := other.Acquire(t.Context(), name+"-2", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(from(t.Context(), "remote"), 300*time.Millisecond)
	_, gaveUp := c.Acquire(short, name+"-2", 10*time.Second, nil)
	cancel()
	if !errors.Is(gaveUp, ErrNotAcquired) {
		t.Fatalf("Acquire of a lock held elsewhere = %v; want ErrNotAcquired", gaveUp)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(waits()) < 3 && time.Now().Before(deadline) { // local's start, remote's start and stop
		time.Sleep(5 * time.Millisecond)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-local; err != nil {
		t.Fatal(err)
	}
	_ = heldElsewhere.Release(t.Context())

	byCall := map[string][]seen{}
	for _, s := range waits() {
		byCall[s.from] = append(byCall[s.from], s)
	}
	if len(byCall) != 2 {
		t.Errorf("waits from %d calls; want 2 (local, remote): %+v", len(byCall), byCall)
	}
	for call, ws := range byCall {
		if len(ws) != 2 || !ws[0].Waiting || ws[1].Waiting || !ws[0].Start.Equal(ws[1].Start) || ws[1].End.Before(ws[1].Start) {
			t.Errorf("%s: waits %+v; want a start, then a stop with the same Start", call, ws)
			continue
		}
		if stop := ws[1]; (call == "local") != (stop.Err == nil) || (call == "remote" && !errors.Is(stop.Err, ErrNotAcquired)) {
			t.Errorf("%s: stop's Err = %v; want nil for the call that won, ErrNotAcquired for the one that gave up", call, stop.Err)
		}
	}
}
