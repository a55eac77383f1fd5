package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestObserveReportsNodeAnswers: every node's answer to an acquire and a
// release round is an EventNode with the node, its address, the latency the
// round saw and the node's error; a late answer (after the round was
// decided) is reported when it comes.
func TestObserveReportsNodeAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		events := map[EventKind][]Event{} // by Op
		c, fakes := newFakeClient(t, 5, &Options{OnEvent: func(_ context.Context, e Event) {
			if e.Kind != EventNode {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			events[e.Op] = append(events[e.Op], e)
		}})
		boom := errors.New("boom")
		fakes[1].set(func(f *fakeNode) { f.err = boom })
		const slow = 150 * time.Millisecond // past the 100ms node timeout
		fakes[4].set(func(f *fakeNode) { f.delay = slow })

		l, err := c.Acquire(t.Context(), "observed", time.Minute, &AcquireOptions{Retry: NoRetry()})
		if err != nil {
			t.Fatalf("Acquire = %v; want the lock from nodes 0, 2 and 3", err)
		}
		time.Sleep(time.Second) // node 4's late answer
		synctest.Wait()
		// Release returns at the quorum: node 1's error is in it only if it
		// came before the third delete; the node event reports it anyway.
		if err := l.Release(t.Context()); err != nil && !errors.Is(err, boom) {
			t.Errorf("Release = %v; want nil or node 1's error", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		for _, op := range []EventKind{EventAcquire, EventRelease} {
			byNode := map[int]Event{}
			for _, e := range events[op] {
				if _, dup := byNode[e.Node]; dup {
					t.Errorf("%v: node %d reported twice", op, e.Node)
				}
				byNode[e.Node] = e
			}
			if len(byNode) != 5 {
				t.Errorf("%v: events from %d nodes; want 5: %v", op, len(byNode), events[op])
			}
			for i, e := range byNode {
				wantLat, wantErr := time.Duration(0), error(nil)
				switch i {
				case 1:
					wantErr = boom
				case 4:
					wantLat = slow
				}
				if lat := e.End.Sub(e.Start); lat != wantLat || !errors.Is(e.Err, wantErr) || (wantErr == nil && e.Err != nil) {
					t.Errorf("%v node %d: latency %v, err %v; want %v, %v", op, i, lat, e.Err, wantLat, wantErr)
				}
				if e.Addr != c.nodes[i].addr || e.Name != "observed" || e.Token != "" {
					t.Errorf("%v node %d: addr %q, name %q, token %q; want %q, %q and no token", op, i, e.Addr, e.Name, e.Token, c.nodes[i].addr, "observed")
				}
			}
		}
	})
}

// TestNoObserverNoRoundObserver: without an observer, rounds take no time
// stamps for node events.
func TestNoObserverNoRoundObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 3, nil)
		if o := c.newRoundObserver(t.Context(), EventAcquire, "x"); o != nil {
			t.Errorf("newRoundObserver without Observe = %v; want nil", o)
		}
		c2, _ := newFakeClient(t, 3, &Options{OnEvent: func(context.Context, Event) {}})
		if o := c2.newRoundObserver(t.Context(), 0, "x"); o != nil {
			t.Errorf("newRoundObserver of an unobserved operation = %v; want nil", o)
		}
		if o := c2.newRoundObserver(t.Context(), EventRelease, "x"); o == nil || o.ev.Start.IsZero() {
			t.Errorf("newRoundObserver with Observe = %v; want one with its start", o)
		}
	})
}

func TestObserveReportsLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var kinds []string
		c, fakes := newFakeClient(t, 3, &Options{OnEvent: func(_ context.Context, e Event) {
			if e.Kind == EventNode {
				return // each node's answers: TestObserveReportsNodeAnswers
			}
			mu.Lock()
			defer mu.Unlock()
			if e.Kind != EventAcquire && e.Token == "" {
				t.Errorf("%v event without a token", e.Kind)
			}
			s := e.Kind.String()
			if e.Auto {
				s += "/auto"
			}
			if e.Err != nil {
				s += "/err"
			}
			kinds = append(kinds, s)
		}})
		l := autoLock(t, c, "obs", 3*time.Second)
		time.Sleep(1500 * time.Millisecond) // one automatic extend
		l.Release(context.Background())
		l2, err := c.Acquire(t.Context(), "obs", 3*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		failFor(fakes, 2, time.Hour)
		<-l2.Done()
		mu.Lock()
		defer mu.Unlock()
		want := "acquire extend/auto release acquire lost/err"
		if got := strings.Join(kinds, " "); got != want {
			t.Errorf("events = %q; want %q", got, want)
		}
	})
}
