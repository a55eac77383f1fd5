package history_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	rt "github.com/redlock-go/redlock/redlocktest/history"
)

// onSem moves an event of the builders in check_test.go from the lock "L" to
// the semaphore "S"; an Acquire becomes a permit of a semaphore of limit.
func onSem(limit int, e rt.Event) rt.Event {
	e.Lock = "S"
	if e.Kind == rt.Acquire {
		e.Limit = limit
	}
	return e
}

// Named events of the clean permits history (limit 2), so cases can replace
// or refer to them.
var (
	pA1Acq  = onSem(2, evAcquire("a", "a1", 1, 0, 5, 105))
	pA1Ext  = onSem(2, evExtend("a", "a1", 50, 55, 155, ""))
	pA1Rel  = onSem(2, evRelease("a", "a1", 120))
	pB1Acq  = onSem(2, evAcquire("b", "b1", 2, 10, 20, 120))
	pB1Lost = onSem(2, evLost("b", "b1", 90))
	pC1Acq  = onSem(2, evAcquire("c", "c1", 3, 60, 95, 195))
	pA2Acq  = onSem(2, evAcquire("a", "a2", 4, 100, 125, 225))
	pB2Acq  = onSem(2, evAcquire("b", "b2", 5, 130, 205, 305))
)

// permitsHistory is three clients taking turns at a semaphore of limit
// limit, never more than two permits believed at once: a's first permit is
// extended past b's loss and c's arrival and released just before a's
// second; c's is extended past b's second arrival.
func permitsHistory(limit int) []rt.Event {
	events := []rt.Event{
		pA1Acq, pB1Acq, pA1Ext, pC1Acq, pB1Lost, pA1Rel, pA2Acq,
		onSem(2, evExtend("c", "c1", 150, 160, 250, "")),
		onSem(2, evRelease("a", "a2", 200)),
		pB2Acq,
		onSem(2, evRelease("c", "c1", 240)),
		onSem(2, evRelease("b", "b2", 260)),
	}
	for i := range events {
		if events[i].Kind == rt.Acquire {
			events[i].Limit = limit
		}
	}
	return events
}

// permitsWith returns the clean permits history (limit 2) without the events
// for which drop returns true, and with extra appended.
func permitsWith(drop func(rt.Event) bool, extra ...rt.Event) []rt.Event {
	var events []rt.Event
	for _, e := range permitsHistory(2) {
		if drop == nil || !drop(e) {
			events = append(events, e)
		}
	}
	return append(events, extra...)
}

func TestCheckPermitsClean(t *testing.T) {
	rep := rt.Check(permitsHistory(2), nil)
	checkViolationCounts(t, "clean permits history", rep, violationCounts{})
	if rep.Acquisitions != 5 {
		t.Errorf("Check(clean permits history).Acquisitions = %d; want 5", rep.Acquisitions)
	}
}

// TestCheckPermitsCatches is the negative control of the permits invariant:
// each history is the clean one with one moment of three believed permits,
// and Check must report exactly that one, as a permits violation and not as
// an overlap.
func TestCheckPermitsCatches(t *testing.T) {
	c2Acq := onSem(2, evAcquire("c", "c2", 6, 210, 215, 315))
	b1LateLost := onSem(2, evLost("b", "b1", 100))
	tests := []struct {
		name       string
		events     []rt.Event
		wantEvents []rt.Event
		wantDetail string
	}{
		{
			name:       "a third permit while two are believed",
			events:     permitsWith(nil, c2Acq, onSem(2, evRelease("c", "c2", 230))),
			wantEvents: []rt.Event{pC1Acq, pB2Acq, c2Acq},
			wantDetail: `semaphore "S" (limit 2): 3 permits believed at once for 15.0ms [215.0ms, 230.0ms]: ` +
				`c's hold (fence 3) [95.0ms, 240.0ms], b's hold (fence 5) [205.0ms, 260.0ms], c's hold (fence 6) [215.0ms, 230.0ms]`,
		},
		{
			name:       "an extend keeps a permit believed into two others",
			events:     permitsWith(isEvent(pA1Rel)),
			wantEvents: []rt.Event{pA1Acq, pC1Acq, pA2Acq},
			wantDetail: `semaphore "S" (limit 2): 3 permits believed at once for 30.0ms [125.0ms, 155.0ms]`,
		},
		{
			name:       "told of a loss after the next permit",
			events:     permitsWith(isEvent(pB1Lost), b1LateLost),
			wantEvents: []rt.Event{pA1Acq, pB1Acq, pC1Acq},
			wantDetail: `semaphore "S" (limit 2): 3 permits believed at once for 5.0ms [95.0ms, 100.0ms]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append([]rt.Event(nil), tt.events...)
			rand.New(rand.NewPCG(5, 6)).Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })

			rep := rt.Check(events, nil)
			checkViolationCounts(t, tt.name, rep, violationCounts{permits: 1})
			if len(rep.Permits) != 1 {
				return
			}
			v := rep.Permits[0]
			if v.Kind != "permits" || !reflect.DeepEqual(v.Events, tt.wantEvents) {
				t.Errorf("Check(%s) = %v, events\n  %+v\nwant kind \"permits\", events\n  %+v", tt.name, v, v.Events, tt.wantEvents)
			}
			if !strings.HasPrefix(v.Detail, tt.wantDetail) {
				t.Errorf("Check(%s) detail = %q; want it to begin %q", tt.name, v.Detail, tt.wantDetail)
			}
			if s := rep.String(); !strings.Contains(s, "0 overlap, 1 permits, 0 fence-order") || !strings.Contains(s, "\n  "+v.String()) {
				t.Errorf("Report.String() = %q; want it to count and list the permits violation", s)
			}
		})
	}
}

// TestCheckPermitsLimitOne: a name whose Acquire events carry no Limit, or
// Limit 1, is a lock, judged by Overlaps; the clean permits history then has
// four overlaps (a1-b1, a1-c1, c1-a2, c1-b2).
func TestCheckPermitsLimitOne(t *testing.T) {
	for _, limit := range []int{0, 1} {
		rep := rt.Check(permitsHistory(limit), nil)
		checkViolationCounts(t, "permits history as a lock", rep, violationCounts{overlap: 4})
	}
	// A higher limit than needed is no violation either.
	checkViolationCounts(t, "permits history, limit 3", rt.Check(permitsHistory(3), nil), violationCounts{})
}

// TestCheckPermitsBoundaries: semaphore histories that come right up to an
// invariant without breaking it, and what the other invariants still say of
// permits.
func TestCheckPermitsBoundaries(t *testing.T) {
	sem := func(e rt.Event) rt.Event { return onSem(2, e) }
	tests := []struct {
		name   string
		events []rt.Event
		want   violationCounts
	}{
		{
			name: "a permit released at the instant the third begins",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 1, 0, 10, 110)), sem(evRelease("a", "ta", 50)),
				sem(evAcquire("b", "tb", 2, 0, 20, 120)),
				sem(evAcquire("c", "tc", 3, 30, 50, 150)),
			},
		},
		{
			name: "a permit's deadline at the instant the third begins",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 1, 0, 10, 50)),
				sem(evAcquire("b", "tb", 2, 0, 20, 120)),
				sem(evAcquire("c", "tc", 3, 30, 50, 150)),
			},
		},
		{
			name: "a permit lost at the instant the third begins",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 1, 0, 10, 110)), sem(evLost("a", "ta", 50)),
				sem(evAcquire("b", "tb", 2, 0, 20, 120)),
				sem(evAcquire("c", "tc", 3, 30, 50, 150)),
			},
		},
		{
			name: "a permit never believed (deadline before it returned) does not count",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 1, 0, 10, 110)),
				sem(evAcquire("b", "tb", 2, 0, 20, 120)),
				sem(evAcquire("c", "tc", 3, 0, 30, 25)),
			},
		},
		{
			name: "the largest Limit of a name counts",
			events: []rt.Event{
				onSem(0, evAcquire("a", "ta", 1, 0, 10, 110)),
				onSem(3, evAcquire("b", "tb", 2, 0, 20, 120)),
				sem(evAcquire("c", "tc", 3, 0, 30, 130)),
			},
		},
		{
			name: "a lock beside a semaphore is still judged by Overlaps",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 1, 0, 10, 110)),
				sem(evAcquire("b", "tb", 2, 0, 20, 120)),
				evAcquire("a", "la", 1, 0, 10, 110),
				evAcquire("b", "lb", 2, 0, 20, 120),
			},
			want: violationCounts{overlap: 1},
		},
		{
			name: "two permits must not share a fence",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 1, 0, 10, 110)),
				sem(evAcquire("b", "tb", 1, 0, 20, 120)),
			},
			want: violationCounts{tie: 1},
		},
		{
			name: "fences are ordered across permits",
			events: []rt.Event{
				sem(evAcquire("a", "ta", 2, 0, 10, 110)),
				sem(evAcquire("b", "tb", 1, 15, 20, 120)),
			},
			want: violationCounts{fence: 1},
		},
	}
	for _, tt := range tests {
		checkViolationCounts(t, tt.name, rt.Check(tt.events, nil), tt.want)
	}
}

// TestCheckPermitsNamesLongestBelieved: when more than limit permits are
// believed already, the violation of a newcomer names the limit of them
// believed longest, and the interval all of them share.
func TestCheckPermitsNamesLongestBelieved(t *testing.T) {
	a := onSem(2, evAcquire("a", "ta", 1, 0, 10, 300))
	b := onSem(2, evAcquire("b", "tb", 2, 0, 20, 100))
	c := onSem(2, evAcquire("c", "tc", 3, 0, 30, 200))
	d := onSem(2, evAcquire("d", "td", 4, 40, 50, 250))
	rep := rt.Check([]rt.Event{d, c, b, a}, nil)
	checkViolationCounts(t, "four permits of two", rep, violationCounts{permits: 2})
	if len(rep.Permits) != 2 {
		return
	}
	for i, want := range [][]rt.Event{{a, b, c}, {a, c, d}} {
		if got := rep.Permits[i].Events; !reflect.DeepEqual(got, want) {
			t.Errorf("Check(four permits of two) violation %d events =\n  %+v\nwant\n  %+v", i, got, want)
		}
	}
	if d := rep.Permits[1].Detail; !strings.Contains(d, "for 150.0ms [50.0ms, 200.0ms]") {
		t.Errorf("Check(four permits of two) detail = %q; want the interval [50.0ms, 200.0ms]", d)
	}
}

// TestPermitsSummaryTable: the summary table counts permits violations in a
// column of their own.
func TestPermitsSummaryTable(t *testing.T) {
	var table bytes.Buffer
	rows := []rt.SummaryRow{{Name: "third-permit", Report: rt.Check(permitsWith(nil, onSem(2, evAcquire("c", "c2", 6, 210, 215, 315))), nil)}}
	if err := rt.SummaryTable(&table, rows); err != nil {
		t.Fatalf("SummaryTable() = %v; want nil", err)
	}
	want := `RUN           FAULTS  ACQUISITIONS  OVERLAPS  PERMITS  FENCE-ORDER  FENCE-TIES  STALE-WRITES  LOST-INCREMENTS  LATE-LOSSES  CONTROL
third-permit  0       6             0         1        0            0           0             0                0            -
`
	if got := table.String(); got != want {
		t.Errorf("SummaryTable() wrote\n%s\nwant\n%s", got, want)
	}
}

// TestTimelinePermits: the timeline shades the stretch a permits violation
// covers on each of its holds' lanes, as it does for an overlap, and lists
// the violation under the chart.
func TestTimelinePermits(t *testing.T) {
	events := permitsWith(nil, onSem(2, evAcquire("c", "c2", 6, 210, 215, 315)), onSem(2, evRelease("c", "c2", 230)))
	rep := rt.Check(events, nil)
	page := renderTimeline(t, "permits", events, rep)
	keepTimeline(t, "TestTimelinePermits", events, rep)
	// One shading per hold (c's two permits share a lane), each over
	// [215ms, 230ms].
	if got := strings.Count(chart(t, page), `class="ovl"`); got != 3 {
		t.Errorf("WriteTimeline(third permit) has %d permits shadings; want 3", got)
	}
	if got := strings.Count(page, `<td class="kind">permits</td>`); got != 1 {
		t.Errorf("WriteTimeline(third permit) lists %d permits violations under the chart; want 1", got)
	}
	if clean := renderTimeline(t, "clean permits", permitsHistory(2), rt.Check(permitsHistory(2), nil)); strings.Contains(chart(t, clean), `class="ovl"`) {
		t.Errorf("WriteTimeline(clean permits history) shades a violation; want none")
	}
}
