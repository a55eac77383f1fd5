package history_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

func TestRecorderConcurrent(t *testing.T) {
	r := history.NewRecorder()
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := fmt.Sprintf("c%d", g)
			for i := range each {
				r.Record(history.Event{Kind: history.Write, Client: client, Value: int64(i)})
				if i%20 == 0 {
					_ = r.Events() // readers run alongside writers
				}
			}
		}()
	}
	wg.Wait()

	events := r.Events()
	if len(events) != goroutines*each {
		t.Fatalf("Record %d events: Events() has %d; want %d", goroutines*each, len(events), goroutines*each)
	}
	// Each client's events keep their order, and their At never goes back.
	next := make(map[string]int64)
	last := make(map[string]time.Duration)
	for _, e := range events {
		if e.Value != next[e.Client] {
			t.Fatalf("Events(): %s's event %d comes where %d was expected", e.Client, e.Value, next[e.Client])
		}
		next[e.Client]++
		if e.At <= 0 || e.At < last[e.Client] {
			t.Fatalf("Events(): %s's event %d has At %v after %v; want a positive, non-decreasing clock", e.Client, e.Value, e.At, last[e.Client])
		}
		last[e.Client] = e.At
	}
}

func TestRecordFields(t *testing.T) {
	r := history.NewRecorder()
	r.Record(history.Event{Kind: history.Acquire, Client: "a", At: 42 * time.Millisecond}) // Node 0 left unset
	r.Record(history.Event{Kind: history.Fault, Node: 0, Fault: history.FaultKill, At: 50 * time.Millisecond})
	r.Record(history.Event{Kind: history.Heal, Node: 2, Fault: history.FaultKill})
	r.Record(history.Event{Kind: history.Lost, Client: "a", Node: 3})

	events := r.Events()
	tests := []struct {
		i        int
		wantNode int
		wantAt   time.Duration // 0: stamped by Record, so > 50ms is not required, > 0 is
	}{
		{0, -1, 42 * time.Millisecond},
		{1, 0, 50 * time.Millisecond},
		{2, 2, 0},
		{3, -1, 0},
	}
	for _, tt := range tests {
		e := events[tt.i]
		if e.Node != tt.wantNode {
			t.Errorf("Record(%s).Node = %d; want %d", e.Kind, e.Node, tt.wantNode)
		}
		if tt.wantAt != 0 && e.At != tt.wantAt {
			t.Errorf("Record(%s).At = %v; want %v (given)", e.Kind, e.At, tt.wantAt)
		}
		if tt.wantAt == 0 && e.At <= 0 {
			t.Errorf("Record(%s).At = %v; want the recorder's now (> 0)", e.Kind, e.At)
		}
	}

	events[0].Client = "changed"
	if got := r.Events()[0].Client; got != "a" {
		t.Errorf("Events()[0].Client = %q after changing the returned slice; want %q (a copy)", got, "a")
	}
}

func TestRecorderClock(t *testing.T) {
	r := history.NewRecorder()
	before := r.Now()
	deadline := time.Now().Add(time.Second)
	got := r.Stamp(deadline)
	after := r.Now()
	if got < before+time.Second || got > after+time.Second {
		t.Errorf("Stamp(now+1s) = %v; want within [%v, %v]", got, before+time.Second, after+time.Second)
	}
	if after < before {
		t.Errorf("Now() = %v after %v; want a monotonic clock", after, before)
	}
	// Without a monotonic reading (Round(0) strips it) Stamp falls back to
	// the wall clock, which agrees while nobody sets the clock.
	if d := r.Stamp(deadline) - r.Stamp(deadline.Round(0)); d > 50*time.Millisecond || d < -50*time.Millisecond {
		t.Errorf("Stamp(t) - Stamp(t without monotonic reading) = %v; want about 0 with an honest wall clock", d)
	}
}
