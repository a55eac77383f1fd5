package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	rt "github.com/redlock-go/redlock/redlocktest/history"
)

// Builders for hand-made histories. Times are in milliseconds; the lock is
// "L", the fenced counter "ctr".

func tms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func evAcquire(client, token string, fence uint64, start, at, until int) rt.Event {
	return rt.Event{Kind: rt.Acquire, Client: client, Node: -1, Lock: "L", Token: token, Fence: fence,
		Start: tms(start), At: tms(at), Until: tms(until)}
}

func evExtend(client, token string, start, at, until int, err string) rt.Event {
	return rt.Event{Kind: rt.Extend, Client: client, Node: -1, Lock: "L", Token: token,
		Start: tms(start), At: tms(at), Until: tms(until), Detail: err}
}

func evRelease(client, token string, at int) rt.Event {
	return rt.Event{Kind: rt.Release, Client: client, Node: -1, Lock: "L", Token: token, At: tms(at)}
}

func evLost(client, token string, at int) rt.Event {
	return rt.Event{Kind: rt.Lost, Client: client, Node: -1, Lock: "L", Token: token, At: tms(at)}
}

func evWrite(client, resource string, fence uint64, at int, accepted bool, seq, value int64) rt.Event {
	return rt.Event{Kind: rt.Write, Client: client, Node: -1, Lock: resource, Fence: fence,
		Start: tms(at - 2), At: tms(at), Accepted: accepted, Seq: seq, Value: value}
}

func evFault(kind rt.Kind, node int, client string, fault rt.FaultKind, at int) rt.Event {
	return rt.Event{Kind: kind, Node: node, Client: client, Fault: fault, At: tms(at)}
}

func evMajorityGone(at int) rt.Event {
	return rt.Event{Kind: rt.MajorityGone, Node: -1, Lock: "L", At: tms(at)}
}

// Named events of the clean history, so cases can replace or refer to them.
var (
	c1Acq     = evAcquire("c1", "t1", 1, 0, 5, 105)
	c1Ext     = evExtend("c1", "t1", 50, 55, 155, "")
	c1Rel     = evRelease("c1", "t1", 70)
	c2Acq     = evAcquire("c2", "t2", 2, 20, 72, 170)
	c2Lost    = evLost("c2", "t2", 172) // after the deadline, within the tolerance
	c2Write   = evWrite("c2", "ctr", 2, 80, true, 3, 3)
	majGone   = evMajorityGone(100)
	c3Acq     = evAcquire("c3", "t3", 3, 150, 210, 310)
	c3ExtFail = evExtend("c3", "t3", 240, 250, 400, "redlock: no quorum") // does not move the deadline
	c4Acq     = evAcquire("c4", "t4", 4, 260, 312, 412)
	c4Write   = evWrite("c4", "ctr", 4, 320, true, 4, 4)
)

// cleanHistory is a run that breaks no invariant but comes close to each:
// handoffs, an extend, a failed extend, a loss signal within the tolerance
// after a majority went away, a rejected stale write, faults.
func cleanHistory() []rt.Event {
	return []rt.Event{
		c1Acq,
		evWrite("c1", "ctr", 1, 10, true, 1, 1),
		c1Ext,
		evWrite("c1", "ctr", 1, 60, true, 2, 2),
		c1Rel,
		c2Acq,
		c2Write,
		evFault(rt.Fault, 0, "", "kill", 90),
		{Kind: rt.AcquireFail, Client: "c3", Node: -1, Lock: "L", Start: tms(30), At: tms(130), Detail: "redlock: lock not acquired"},
		majGone,
		c2Lost,
		evFault(rt.Heal, 0, "", "kill", 200),
		evWrite("c1", "ctr", 1, 210, false, 0, 4), // stale holder rejected
		c3Acq,
		c3ExtFail,
		c4Acq,
		c4Write,
		evRelease("c4", "t4", 330),
	}
}

func cleanCounters() map[string]int64 { return map[string]int64{"ctr": 4} }

// with returns the clean history without the events for which drop returns
// true, and with extra appended.
func cleanWith(drop func(rt.Event) bool, extra ...rt.Event) []rt.Event {
	var events []rt.Event
	for _, e := range cleanHistory() {
		if drop == nil || !drop(e) {
			events = append(events, e)
		}
	}
	return append(events, extra...)
}

func isEvent(target rt.Event) func(rt.Event) bool {
	return func(e rt.Event) bool { return e == target }
}

type violationCounts struct{ overlap, permits, fence, tie, stale, lost, late int }

func checkViolationCounts(tb testing.TB, name string, rep *rt.Report, want violationCounts) {
	tb.Helper()
	got := []struct {
		field     string
		got, want int
	}{
		{"overlaps", len(rep.Overlaps), want.overlap},
		{"permits", len(rep.Permits), want.permits},
		{"fence order", len(rep.FenceOrder), want.fence},
		{"fence ties", len(rep.FenceTies), want.tie},
		{"stale writes", len(rep.StaleWrites), want.stale},
		{"lost increments", len(rep.LostIncrements), want.lost},
		{"late losses", len(rep.LateLoss), want.late},
	}
	for _, g := range got {
		if g.got != g.want {
			tb.Errorf("Check(%s) %s = %d; want %d\n%s", name, g.field, g.got, g.want, rep)
		}
	}
	if wantOK := want == (violationCounts{}); rep.OK() != wantOK {
		tb.Errorf("Check(%s).OK() = %v; want %v", name, rep.OK(), wantOK)
	}
	if n := want.overlap + want.permits + want.fence + want.tie + want.stale + want.lost + want.late; len(rep.Violations()) != n {
		tb.Errorf("Check(%s).Violations() has %d; want %d", name, len(rep.Violations()), n)
	}
}

func TestCheckClean(t *testing.T) {
	rep := rt.Check(cleanHistory(), &rt.CheckOptions{Counters: cleanCounters()})
	checkViolationCounts(t, "clean history", rep, violationCounts{})
	want := rt.Report{Acquisitions: 4, Writes: 5, AcceptedWrites: 4, RejectedWrites: 1, Faults: 1}
	if !reflect.DeepEqual(*rep, want) {
		t.Errorf("Check(clean history) = %+v; want %+v", *rep, want)
	}
	if s := rep.String(); !strings.HasSuffix(s, ": OK") {
		t.Errorf("Check(clean history).String() = %q; want it to end in \": OK\"", s)
	}
}

// TestCheckCatches is the checker's own negative control: each history holds
// exactly one kind of violation, and Check must report it, with the events
// involved.
func TestCheckCatches(t *testing.T) {
	late := evLost("c2", "t2", 196) // deadline 170 + tolerance 25 < 196
	c1LateRel := evRelease("c1", "t1", 75)
	c3Ext := evExtend("c3", "t3", 240, 250, 400, "")
	c3HighAcq := evAcquire("c3", "t3", 5, 150, 210, 310)    // above c4's 4
	c4SlowTieAcq := evAcquire("c4", "t4", 3, 200, 315, 412) // c3's fence; started before c3 returned, believed after c3's deadline
	docNew := evWrite("c2", "doc", 2, 85, true, 1, 20)
	docStale := evWrite("c1", "doc", 1, 95, true, 2, 10)
	c4Dup := evWrite("c4", "ctr", 4, 320, true, 4, 3)
	c2LateRel := evRelease("c2", "t2", 200)
	c5Acq := evAcquire("c5", "t5", 5, 300, 320, 420)

	tests := []struct {
		name       string
		events     []rt.Event
		counters   map[string]int64
		want       violationCounts
		wantEvents [][]rt.Event // per violation, in Violations() order; nil: not compared
	}{
		{
			name:       "second holder during a hold",
			events:     cleanWith(nil, c5Acq),
			want:       violationCounts{overlap: 1},
			wantEvents: [][]rt.Event{{c4Acq, c5Acq}},
		},
		{
			name:       "release after the next acquire",
			events:     cleanWith(isEvent(c1Rel), c1LateRel),
			want:       violationCounts{overlap: 1},
			wantEvents: [][]rt.Event{{c1Acq, c2Acq}},
		},
		{
			name:       "successful extend moves the deadline past the next acquire",
			events:     cleanWith(isEvent(c3ExtFail), c3Ext),
			want:       violationCounts{overlap: 1},
			wantEvents: [][]rt.Event{{c3Acq, c4Acq}},
		},
		{
			name:       "fence not above an earlier acquisition's",
			events:     cleanWith(isEvent(c3Acq), c3HighAcq),
			want:       violationCounts{fence: 1},
			wantEvents: [][]rt.Event{{c3HighAcq, c4Acq}},
		},
		{
			name:       "two holders got one fence",
			events:     cleanWith(isEvent(c4Acq), c4SlowTieAcq),
			want:       violationCounts{tie: 1},
			wantEvents: [][]rt.Event{{c3Acq, c4SlowTieAcq}},
		},
		{
			name:       "lower fence accepted after a higher one",
			events:     cleanWith(nil, docNew, docStale),
			want:       violationCounts{stale: 1},
			wantEvents: [][]rt.Event{{docNew, docStale}},
		},
		{
			name:       "counter lower than the accepted increments",
			events:     cleanHistory(),
			counters:   map[string]int64{"ctr": 3},
			want:       violationCounts{lost: 1},
			wantEvents: [][]rt.Event{nil},
		},
		{
			name:       "two accepted writes of the same value",
			events:     cleanWith(isEvent(c4Write), c4Dup),
			want:       violationCounts{lost: 1},
			wantEvents: [][]rt.Event{{c2Write, c4Dup}},
		},
		{
			name:     "two holders incremented from the same read",
			events:   cleanWith(isEvent(c4Write), c4Dup),
			counters: map[string]int64{"ctr": 3},
			want:     violationCounts{lost: 2}, // the count, and the duplicate value
		},
		{
			name:       "told after the deadline",
			events:     cleanWith(isEvent(c2Lost), late),
			want:       violationCounts{late: 1},
			wantEvents: [][]rt.Event{{c2Acq, late}},
		},
		{
			name:       "majority gone, never told",
			events:     cleanWith(isEvent(c2Lost)),
			want:       violationCounts{late: 1},
			wantEvents: [][]rt.Event{{c2Acq, majGone}},
		},
		{
			name:       "majority gone, released after the deadline without being told",
			events:     cleanWith(isEvent(c2Lost), c2LateRel),
			want:       violationCounts{late: 1},
			wantEvents: [][]rt.Event{{c2Acq, majGone}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counters := tt.counters
			if counters == nil {
				counters = cleanCounters()
			}
			// Check must not depend on the order of the history.
			events := append([]rt.Event(nil), tt.events...)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })

			rep := rt.Check(events, &rt.CheckOptions{Counters: counters})
			checkViolationCounts(t, tt.name, rep, tt.want)
			vs := rep.Violations()
			for i, v := range vs {
				if v.Detail == "" {
					t.Errorf("Check(%s) violation %d has no Detail", tt.name, i)
				}
				if i < len(tt.wantEvents) && tt.wantEvents[i] != nil && !reflect.DeepEqual(v.Events, tt.wantEvents[i]) {
					t.Errorf("Check(%s) violation %d (%s) events =\n  %+v\nwant\n  %+v", tt.name, i, v, v.Events, tt.wantEvents[i])
				}
			}
			if s := rep.String(); len(vs) > 0 && !strings.Contains(s, vs[0].Detail) {
				t.Errorf("Check(%s).String() = %q; want it to list %q", tt.name, s, vs[0].Detail)
			}
		})
	}
}

func TestCheckViolationKinds(t *testing.T) {
	tests := []struct {
		events []rt.Event
		opts   *rt.CheckOptions
		field  func(*rt.Report) []rt.Violation
		want   string
	}{
		{cleanWith(nil, evAcquire("c5", "t5", 5, 300, 320, 420)), nil, func(r *rt.Report) []rt.Violation { return r.Overlaps }, "overlap"},
		{cleanWith(isEvent(c4Acq), evAcquire("c4", "t4", 3, 260, 312, 412)), nil, func(r *rt.Report) []rt.Violation { return r.FenceOrder }, "fence-order"},
		{cleanWith(isEvent(c4Acq), evAcquire("c4", "t4", 3, 200, 230, 250)), nil, func(r *rt.Report) []rt.Violation { return r.FenceTies }, "fence-tie"},
		{cleanWith(nil, evWrite("a", "doc", 2, 1, true, 1, 1), evWrite("b", "doc", 1, 2, true, 2, 2)), nil, func(r *rt.Report) []rt.Violation { return r.StaleWrites }, "stale-write"},
		{cleanHistory(), &rt.CheckOptions{Counters: map[string]int64{"ctr": 0}}, func(r *rt.Report) []rt.Violation { return r.LostIncrements }, "lost-increment"},
		{cleanWith(isEvent(c2Lost)), nil, func(r *rt.Report) []rt.Violation { return r.LateLoss }, "late-loss"},
	}
	for _, tt := range tests {
		vs := tt.field(rt.Check(tt.events, tt.opts))
		if len(vs) != 1 || vs[0].Kind != tt.want {
			t.Errorf("Check(history with one %s) = %v; want one violation of kind %q", tt.want, vs, tt.want)
		}
	}
}

func TestReportString(t *testing.T) {
	var events []rt.Event
	for i := range 8 { // 8 holds all at once: 28 overlaps
		events = append(events, evAcquire(fmt.Sprint("c", i), fmt.Sprint("t", i), uint64(i+1), 0, 10+i, 100))
	}
	s := rt.Check(events, nil).String()
	for _, want := range []string{"8 acquisitions", "28 violations: 28 overlap, 0 permits, 0 fence-order", "... and 23 more"} {
		if !strings.Contains(s, want) {
			t.Errorf("Report.String() = %q; want it to contain %q", s, want)
		}
	}
	if n := strings.Count(s, "\n  overlap: "); n != 5 {
		t.Errorf("Report.String() lists %d violations; want 5:\n%s", n, s)
	}
}

func TestSummaryTable(t *testing.T) {
	caught, missed := true, false
	rows := []rt.SummaryRow{
		{Name: "kill-minority", Report: rt.Check(cleanHistory(), &rt.CheckOptions{Counters: cleanCounters()})},
		{Name: "control/no-fence", Report: rt.Check(cleanWith(nil, evWrite("a", "doc", 2, 1, true, 1, 1), evWrite("b", "doc", 1, 2, true, 2, 2)), nil), ControlCaught: &caught},
		{Name: "control/naive", Report: &rt.Report{}, ControlCaught: &missed},
		{Name: "fence-tie", Report: rt.Check(tieHistory(101), nil)},
		{Name: "not-run"},
	}
	var b bytes.Buffer
	if err := rt.SummaryTable(&b, rows); err != nil {
		t.Fatalf("SummaryTable() = %v; want nil", err)
	}
	want := `RUN               FAULTS  ACQUISITIONS  OVERLAPS  PERMITS  FENCE-ORDER  FENCE-TIES  STALE-WRITES  LOST-INCREMENTS  LATE-LOSSES  CONTROL
kill-minority     1       4             0         0        0            0           0             0                0            -
control/no-fence  1       4             0         0        0            0           1             0                0            caught
control/naive     0       0             0         0        0            0           0             0                0            MISSED
fence-tie         0       5             1         0        0            1           0             0                0            -
not-run           -       -             -         -        -            -           -             -                -            -
`
	if got := b.String(); got != want {
		t.Errorf("SummaryTable() wrote\n%s\nwant\n%s", got, want)
	}

	errBroken := errors.New("disk full")
	err := rt.SummaryTable(failingWriter{errBroken}, rows)
	if !errors.Is(err, errBroken) || !strings.HasPrefix(fmt.Sprint(err), "redlocktest:") {
		t.Errorf("SummaryTable(failing writer) = %v; want a redlocktest: error wrapping %v", err, errBroken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
