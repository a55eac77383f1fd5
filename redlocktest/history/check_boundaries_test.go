package history_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	rt "github.com/redlock-go/redlock/redlocktest/history"
)

// TestCheckBoundaries: histories that come right up to an invariant without
// breaking it must not be reported.
func TestCheckBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		events []rt.Event
		opts   *rt.CheckOptions
		want   violationCounts
	}{
		{
			name: "handoff at the instant of release",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 110), evRelease("a", "ta", 50),
				evAcquire("b", "tb", 2, 20, 50, 150), evRelease("b", "tb", 60),
			},
		},
		{
			name: "concurrent attempts: the later start may get the lower fence",
			events: []rt.Event{
				evAcquire("a", "ta", 5, 0, 30, 130), evRelease("a", "ta", 35),
				evAcquire("b", "tb", 4, 10, 40, 140), evRelease("b", "tb", 45),
			},
		},
		{
			name: "fence order ignores unfenced locks",
			events: []rt.Event{
				evAcquire("a", "ta", 0, 0, 10, 110), evRelease("a", "ta", 20),
				evAcquire("b", "tb", 0, 30, 40, 140), evRelease("b", "tb", 45),
			},
		},
		{
			name: "holds of different locks",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 110),
				{Kind: rt.Acquire, Client: "b", Lock: "other", Token: "tb", Fence: 1, Start: tms(0), At: tms(20), Until: tms(120)},
			},
		},
		{
			name: "events of a token never acquired are ignored",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 110),
				evExtend("b", "ghost", 0, 5, 500, ""), evLost("b", "ghost", 900), evRelease("b", "ghost", 950),
			},
		},
		{
			name: "an earlier extend recorded later does not shorten the hold",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 110),
				evExtend("a", "ta", 60, 70, 170, ""), evExtend("a", "ta", 40, 50, 150, ""),
				evAcquire("b", "tb", 2, 100, 171, 300),
			},
		},
		{
			name: "equal fences in store order are not stale",
			events: []rt.Event{
				evWrite("a", "doc", 3, 10, true, 1, 1), evWrite("a", "doc", 3, 20, true, 2, 2),
				evWrite("b", "doc", 1, 30, false, 0, 3), evWrite("c", "doc", 4, 40, true, 3, 4),
			},
		},
		{
			name: "counter above the accepted increments (an ambiguous write) is no loss",
			events: []rt.Event{
				evWrite("a", "ctr", 1, 10, true, 1, 1), evWrite("b", "ctr", 2, 20, false, 0, 0),
			},
			opts: &rt.CheckOptions{Counters: map[string]int64{"ctr": 2}},
		},
		{
			name: "majority gone, history ends before the deadline plus tolerance",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 100), evMajorityGone(50),
				evWrite("a", "doc", 1, 110, true, 1, 1),
			},
		},
		{
			name: "majority gone, released before the deadline plus tolerance",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 100), evMajorityGone(50), evRelease("a", "ta", 120),
				evWrite("a", "doc", 1, 500, true, 1, 1),
			},
		},
		{
			name: "majority gone after the deadline",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 100), evMajorityGone(100),
				evWrite("a", "doc", 1, 500, true, 1, 1),
			},
		},
		{
			name: "majority gone before the acquisition",
			events: []rt.Event{
				evMajorityGone(5), evAcquire("a", "ta", 1, 0, 10, 100), evLost("a", "ta", 100),
				evWrite("a", "doc", 1, 500, true, 1, 1),
			},
		},
		{
			name: "wider tolerance",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 100), evLost("a", "ta", 190),
			},
			opts: &rt.CheckOptions{Tolerance: 100 * time.Millisecond},
		},
		{
			name: "default tolerance is 25ms",
			events: []rt.Event{
				evAcquire("a", "ta", 1, 0, 10, 100), evLost("a", "ta", 126),
			},
			want: violationCounts{late: 1},
		},
		{
			name:   "empty history",
			events: nil,
		},
	}
	for _, tt := range tests {
		checkViolationCounts(t, tt.name, rt.Check(tt.events, tt.opts), tt.want)
	}
}

// TestCheckLarge runs the checker on a soak-sized history (in any order) with
// one overlap hidden in it.
func TestCheckLarge(t *testing.T) {
	const holds = 20000
	var events []rt.Event
	for i := range holds {
		client := fmt.Sprintf("c%d", i%10)
		token := fmt.Sprintf("t%d", i)
		t0 := i * 100
		fence := uint64(i + 1)
		events = append(events,
			evAcquire(client, token, fence, t0-50, t0, t0+90),
			evExtend(client, token, t0+20, t0+30, t0+95, ""),
			evWrite(client, "ctr", fence, t0+40, true, int64(i+1), int64(i+1)),
			evRelease(client, token, t0+60),
		)
	}
	// Inside hold 5000 (fence 5001), fences in order: the only such fence
	// is 5001, so the intruder is a fence tie too.
	intruder := evAcquire("x", "tx", 5001, 500000, 500010, 500020)
	events = append(events, intruder)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })

	start := time.Now()
	rep := rt.Check(events, &rt.CheckOptions{Counters: map[string]int64{"ctr": holds}})
	t.Logf("Check(%d events) took %v", len(events), time.Since(start))
	checkViolationCounts(t, "soak with one intruder", rep, violationCounts{overlap: 1, tie: 1})
	if len(rep.Overlaps) == 1 && rep.Overlaps[0].Events[1] != intruder {
		t.Errorf("Check(soak with one intruder) overlap = %v; want it to involve the intruder", rep.Overlaps[0])
	}
	if rep.Acquisitions != holds+1 || rep.AcceptedWrites != holds {
		t.Errorf("Check(soak) counts %d acquisitions, %d accepted writes; want %d, %d", rep.Acquisitions, rep.AcceptedWrites, holds+1, holds)
	}
}

// tieHistory is two overlapping holds of "L" as in the fence tie: c2's
// acquisition started after c1's and returned before it, and got fence
// fence2; c1's got 101. Around them, things that are not ties: a second
// Acquire event of c1's token (the same holder) and two holds without
// fences.
func tieHistory(fence2 uint64) []rt.Event {
	return []rt.Event{
		evAcquire("c1", "t1", 101, 0, 300, 5000),
		evAcquire("c2", "t2", fence2, 100, 200, 5000),
		evAcquire("c1", "t1", 101, 0, 310, 5000),
		evAcquire("n1", "tn1", 0, 6000, 6010, 6100),
		evAcquire("n2", "tn2", 0, 6200, 6210, 6300),
	}
}

func TestCheckFenceTie(t *testing.T) {
	rep := rt.Check(tieHistory(101), nil)
	checkViolationCounts(t, "fence tie", rep, violationCounts{overlap: 1, tie: 1})
	if len(rep.FenceTies) == 1 {
		v := rep.FenceTies[0]
		want := []rt.Event{tieHistory(101)[1], tieHistory(101)[0]} // by Acquire.At: c2 first
		if v.Kind != "fence-tie" || !reflect.DeepEqual(v.Events, want) || !strings.Contains(v.Detail, "both got fence 101") {
			t.Errorf("Check(fence tie) = %v, events %v; want a fence-tie of c2's and c1's holds at fence 101", v, v.Events)
		}
		if s := rep.String(); !strings.Contains(s, "1 fence-tie") || !strings.Contains(s, "fence-tie: lock \"L\"") {
			t.Errorf("Report.String() = %q; want it to count and list the fence tie", s)
		}
	}
	// The negative control: the same history with distinct fences.
	checkViolationCounts(t, "distinct fences", rt.Check(tieHistory(102), nil), violationCounts{overlap: 1})
}
