package redlocktest

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// DefaultTolerance is the slack the late-loss check grants when
// CheckOptions.Tolerance is zero: a loss signal fires on a timer, and timers
// and goroutine scheduling run late by a few milliseconds on a loaded machine.
const DefaultTolerance = 25 * time.Millisecond

// CheckOptions tunes [Check]. A nil *CheckOptions means defaults; so does the
// zero value of every field.
type CheckOptions struct {
	// Counters gives, for each fenced counter resource, its final value as
	// read from the downstream store after the run. Check then verifies that
	// no increment was lost (see [Report.LostIncrements]). Resources not in
	// the map are not checked for lost increments.
	Counters map[string]int64

	// Tolerance is how late a loss signal may come after the holder's local
	// deadline before the late-loss check reports it. Default
	// [DefaultTolerance] (25ms).
	Tolerance time.Duration
}

// Report is what [Check] found in a history: counts of what happened, and
// every violation of each invariant, oldest first within each kind. A Report
// with no violations is OK; see [Report.OK].
type Report struct {
	// Acquisitions counts successful Acquire events; Writes counts Write
	// events, split into AcceptedWrites and RejectedWrites; Faults counts
	// Fault events.
	Acquisitions, Writes, AcceptedWrites, RejectedWrites, Faults int

	// Overlaps: mutual exclusion broke. Two holds of the same lock (different
	// tokens) whose believed intervals intersect: for a while both clients
	// believed they held the lock. A believed hold runs from Acquire.At to
	// the earliest of its Release.At, its Lost.At and its local deadline
	// (Acquire.Until, moved by every successful Extend of the same token;
	// the last one counts). Redlock promises no overlap only while faults
	// stay within a minority of the nodes and clocks are honest, so tests
	// that break those assumptions expect overlaps and rely on fencing.
	// Each violation holds the two Acquire events.
	Overlaps []Violation

	// FenceOrder: fences went backwards. An acquisition B of a lock that
	// started strictly after an acquisition A of the same lock returned
	// (B.Start > A.At) got a fence B.Fence <= A.Fence. A downstream store
	// that trusts fences would then reject the newer holder or, worse,
	// accept the older one after it. Only acquisitions with fences > 0 are
	// compared. Each violation holds A's and B's Acquire events (for each B,
	// the earlier A with the largest fence).
	FenceOrder []Violation

	// StaleWrites: the downstream store accepted a write whose fence is
	// lower than a fence it had already accepted for the same resource, in
	// the store's order of acceptance (Seq, then At). That is exactly what
	// fencing exists to prevent: a stale holder overwrote a newer one. Each
	// violation holds the earlier write with the highest fence and the
	// stale write.
	StaleWrites []Violation

	// LostIncrements: a fenced counter lost updates. For each resource in
	// CheckOptions.Counters: the store accepted more increments than the
	// final counter value shows (one violation giving the difference, with
	// no events); and every value written by more than one accepted write
	// (two holders incremented from the same read; one violation per value
	// with those writes).
	LostIncrements []Violation

	// LateLoss: a holder was not told in time that it lost the lock. Either
	// a Lost event came more than the tolerance after the hold's local
	// deadline, or a hold believed when a MajorityGone event for its lock
	// happened got neither Lost nor Release by its deadline plus the
	// tolerance (holds whose deadline plus tolerance lies after the end of
	// the history are not judged). A holder that is not told keeps writing
	// as if it held the lock. Each violation holds the Acquire event, then
	// the Lost, Release or MajorityGone event concerned.
	LateLoss []Violation
}

// Violation is one breach of an invariant found by [Check].
type Violation struct {
	Kind   string  // "overlap", "fence-order", "stale-write", "lost-increment" or "late-loss"
	Events []Event // the events involved, as recorded
	Detail string  // one line a person can read
}

// The values of Violation.Kind.
const (
	kindOverlap       = "overlap"
	kindFenceOrder    = "fence-order"
	kindStaleWrite    = "stale-write"
	kindLostIncrement = "lost-increment"
	kindLateLoss      = "late-loss"
)

// String formats v as "kind: detail".
func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// OK reports whether r contains no violation of any kind.
func (r *Report) OK() bool {
	return len(r.Overlaps)+len(r.FenceOrder)+len(r.StaleWrites)+len(r.LostIncrements)+len(r.LateLoss) == 0
}

// Violations returns all violations in one new slice: overlaps, then fence
// order, stale writes, lost increments and late losses.
func (r *Report) Violations() []Violation {
	var all []Violation
	for _, vs := range [][]Violation{r.Overlaps, r.FenceOrder, r.StaleWrites, r.LostIncrements, r.LateLoss} {
		all = append(all, vs...)
	}
	return all
}

// maxListed is how many violations Report.String lists.
const maxListed = 5

// String returns a short multi-line summary: the counts, the number of
// violations of each kind and the first few violations.
func (r *Report) String() string {
	if r == nil {
		return "no report"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d acquisitions, %d writes (%d accepted, %d rejected), %d faults",
		r.Acquisitions, r.Writes, r.AcceptedWrites, r.RejectedWrites, r.Faults)
	if r.OK() {
		b.WriteString(": OK")
		return b.String()
	}
	all := r.Violations()
	fmt.Fprintf(&b, "\n%d violations: %d overlap, %d fence-order, %d stale-write, %d lost-increment, %d late-loss",
		len(all), len(r.Overlaps), len(r.FenceOrder), len(r.StaleWrites), len(r.LostIncrements), len(r.LateLoss))
	for i, v := range all {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... and %d more", len(all)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// hold is one acquisition and what became of it.
type hold struct {
	idx     int // order of the Acquire event in the history
	acq     Event
	until   time.Duration // local deadline: Acquire.Until, moved by successful extends
	untilAt time.Duration // At of the event that set until
	release *Event        // first Release
	lost    *Event        // first Lost
	end     time.Duration // end of belief
}

// Check reads a history (events in any order, typically Recorder.Events) and
// reports every violation of the invariants the chaos tests rely on; the
// fields of [Report] define each of them. opts may be nil.
//
// Holds are identified by Token: Extend, Release and Lost events of a token
// without an Acquire event are ignored, and so is a second Acquire of a token
// (an Acquire with an empty Token is a hold no other event refers to). An
// Extend with a non-empty Detail failed and does not move the deadline. Check runs in O(n log n) time for n
// events, plus the number of violations found.
func Check(events []Event, opts *CheckOptions) *Report {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}

	r := &Report{}
	var horizon time.Duration // the last time the history speaks of
	for _, e := range events {
		horizon = max(horizon, e.At)
		switch e.Kind {
		case Acquire:
			r.Acquisitions++
		case Write:
			r.Writes++
			if e.Accepted {
				r.AcceptedWrites++
			} else {
				r.RejectedWrites++
			}
		case Fault:
			r.Faults++
		}
	}

	holds := collectHolds(events, horizon)
	r.Overlaps = checkOverlaps(holds)
	r.FenceOrder = checkFenceOrder(holds)
	r.StaleWrites = checkStaleWrites(events)
	r.LostIncrements = checkLostIncrements(events, o.Counters)
	r.LateLoss = checkLateLoss(events, holds, horizon, o.Tolerance)
	return r
}

// collectHolds returns the holds of a history, sorted by Acquire.At. A hold
// without a deadline (Until <= 0) is believed until horizon unless released
// or lost.
func collectHolds(events []Event, horizon time.Duration) []*hold {
	var holds []*hold
	byToken := make(map[string]*hold)
	for _, e := range events {
		if e.Kind != Acquire {
			continue
		}
		h := &hold{idx: len(holds), acq: e, until: e.Until, untilAt: e.At}
		if e.Token != "" {
			if byToken[e.Token] != nil {
				continue // the first Acquire of a token counts
			}
			byToken[e.Token] = h
		}
		holds = append(holds, h)
	}
	for i := range events {
		e := &events[i]
		h := byToken[e.Token]
		if h == nil || e.Token == "" {
			continue
		}
		switch e.Kind {
		case Extend:
			if e.Detail == "" && e.Until > 0 && e.At >= h.untilAt {
				h.until, h.untilAt = e.Until, e.At
			}
		case Release:
			if h.release == nil || e.At < h.release.At {
				h.release = e
			}
		case Lost:
			if h.lost == nil || e.At < h.lost.At {
				h.lost = e
			}
		}
	}
	for _, h := range holds {
		h.end = horizon
		if h.until > 0 {
			h.end = h.until
		}
		if h.release != nil {
			h.end = min(h.end, h.release.At)
		}
		if h.lost != nil {
			h.end = min(h.end, h.lost.At)
		}
	}
	slices.SortFunc(holds, func(a, b *hold) int {
		return cmp.Or(cmp.Compare(a.acq.At, b.acq.At), cmp.Compare(a.idx, b.idx))
	})
	return holds
}

// byLock groups holds by lock name, keeping their order, and returns the
// names sorted.
func byLock(holds []*hold) (map[string][]*hold, []string) {
	m := make(map[string][]*hold)
	for _, h := range holds {
		m[h.acq.Lock] = append(m[h.acq.Lock], h)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return m, names
}

// checkOverlaps sweeps the holds of each lock in order of their start,
// keeping the holds still believed.
func checkOverlaps(holds []*hold) []Violation {
	var vs []Violation
	m, names := byLock(holds)
	for _, name := range names {
		var active []*hold
		for _, h := range m[name] {
			if h.end <= h.acq.At {
				continue // never believed: deadline passed before Acquire returned
			}
			kept := active[:0]
			for _, a := range active {
				if a.end > h.acq.At {
					kept = append(kept, a)
				}
			}
			active = kept
			for _, a := range active {
				vs = append(vs, Violation{
					Kind:   kindOverlap,
					Events: []Event{a.acq, h.acq},
					Detail: fmt.Sprintf("lock %q: %s overlaps %s by %s",
						name, describeHold(a), describeHold(h), ms(min(a.end, h.end)-h.acq.At)),
				})
			}
			active = append(active, h)
		}
	}
	sortByTime(vs)
	return vs
}

func describeHold(h *hold) string {
	return fmt.Sprintf("%s's hold (fence %d) [%s, %s]", h.acq.Client, h.acq.Fence, ms(h.acq.At), ms(h.end))
}

// checkFenceOrder compares each acquisition B with the largest fence among
// the acquisitions of the same lock that returned before B started.
func checkFenceOrder(holds []*hold) []Violation {
	var vs []Violation
	m, names := byLock(holds)
	for _, name := range names {
		var as, bs []*hold
		for _, h := range m[name] {
			if h.acq.Fence > 0 {
				as = append(as, h)
			}
		}
		bs = append(bs, as...) // as is sorted by At; bs by Start
		slices.SortFunc(bs, func(a, b *hold) int {
			return cmp.Or(cmp.Compare(a.acq.Start, b.acq.Start), cmp.Compare(a.idx, b.idx))
		})
		var top *hold // the largest fence among as[:i]
		i := 0
		for _, b := range bs {
			for ; i < len(as) && as[i].acq.At < b.acq.Start; i++ {
				if top == nil || as[i].acq.Fence > top.acq.Fence {
					top = as[i]
				}
			}
			if top != nil && b.acq.Fence <= top.acq.Fence {
				vs = append(vs, Violation{
					Kind:   kindFenceOrder,
					Events: []Event{top.acq, b.acq},
					Detail: fmt.Sprintf("lock %q: %s's acquisition started at %s got fence %d, not above fence %d of %s's acquisition that returned at %s",
						name, b.acq.Client, ms(b.acq.Start), b.acq.Fence, top.acq.Fence, top.acq.Client, ms(top.acq.At)),
				})
			}
		}
	}
	sortByTime(vs)
	return vs
}

// acceptedWrites returns the accepted writes by resource, each in the store's
// order (Seq, then At), and the resource names sorted.
func acceptedWrites(events []Event) (map[string][]Event, []string) {
	idx := make(map[string][]int) // indexes into events: sorting them moves less
	for i := range events {
		if e := &events[i]; e.Kind == Write && e.Accepted {
			idx[e.Lock] = append(idx[e.Lock], i)
		}
	}
	m := make(map[string][]Event, len(idx))
	names := make([]string, 0, len(idx))
	for name, is := range idx {
		names = append(names, name)
		slices.SortFunc(is, func(i, j int) int {
			a, b := &events[i], &events[j]
			return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.At, b.At), cmp.Compare(i, j))
		})
		ws := make([]Event, len(is))
		for k, i := range is {
			ws[k] = events[i]
		}
		m[name] = ws
	}
	sort.Strings(names)
	return m, names
}

func checkStaleWrites(events []Event) []Violation {
	var vs []Violation
	m, names := acceptedWrites(events)
	for _, name := range names {
		var top Event // the accepted write with the highest fence so far
		for i, w := range m[name] {
			if i > 0 && w.Fence < top.Fence {
				vs = append(vs, Violation{
					Kind:   kindStaleWrite,
					Events: []Event{top, w},
					Detail: fmt.Sprintf("resource %q: %s's write with fence %d accepted (seq %d, at %s) after %s's write with fence %d (seq %d)",
						name, w.Client, w.Fence, w.Seq, ms(w.At), top.Client, top.Fence, top.Seq),
				})
			}
			if i == 0 || w.Fence > top.Fence {
				top = w
			}
		}
	}
	sortByTime(vs)
	return vs
}

func checkLostIncrements(events []Event, counters map[string]int64) []Violation {
	if len(counters) == 0 {
		return nil
	}
	var vs []Violation
	m, _ := acceptedWrites(events)
	names := make([]string, 0, len(counters))
	for name := range counters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ws, final := m[name], counters[name]
		if lost := int64(len(ws)) - final; lost > 0 {
			vs = append(vs, Violation{
				Kind: kindLostIncrement,
				Detail: fmt.Sprintf("counter %q: %d increments accepted but the final value is %d: %d lost",
					name, len(ws), final, lost),
			})
		}
		byValue := make(map[int64][]Event)
		var values []int64
		for _, w := range ws {
			if byValue[w.Value] == nil {
				values = append(values, w.Value)
			}
			byValue[w.Value] = append(byValue[w.Value], w)
		}
		for _, v := range values {
			same := byValue[v]
			if len(same) < 2 {
				continue
			}
			who := make([]string, len(same))
			for i, w := range same {
				who[i] = fmt.Sprintf("%s fence %d", w.Client, w.Fence)
			}
			vs = append(vs, Violation{
				Kind:   kindLostIncrement,
				Events: same,
				Detail: fmt.Sprintf("counter %q: value %d written by %d accepted writes (%s): increments from the same read",
					name, v, len(same), strings.Join(who, ", ")),
			})
		}
	}
	return vs
}

func checkLateLoss(events []Event, holds []*hold, horizon, tolerance time.Duration) []Violation {
	var vs []Violation
	late := make(map[*hold]bool)
	for _, h := range holds {
		if h.lost != nil && h.until > 0 && h.lost.At > h.until+tolerance {
			late[h] = true
			vs = append(vs, Violation{
				Kind:   kindLateLoss,
				Events: []Event{h.acq, *h.lost},
				Detail: fmt.Sprintf("lock %q: %s told of the loss of its hold (fence %d) at %s, %s after its deadline %s",
					h.acq.Lock, h.acq.Client, h.acq.Fence, ms(h.lost.At), ms(h.lost.At-h.until), ms(h.until)),
			})
		}
	}

	var gone []Event
	for _, e := range events {
		if e.Kind == MajorityGone {
			gone = append(gone, e)
		}
	}
	if len(gone) > 0 {
		sort.SliceStable(gone, func(i, j int) bool { return gone[i].At < gone[j].At })
		for _, h := range holds {
			if late[h] || h.lost != nil || h.until <= 0 {
				continue // reported above, told in time, or no deadline to judge by
			}
			due := h.until + tolerance
			if due > horizon || (h.release != nil && h.release.At <= due) {
				continue // not judged yet, or the holder let go in time
			}
			for _, g := range gone {
				// Believed at g: acquired by then, not released yet.
				if g.Lock != h.acq.Lock || g.At < h.acq.At || (h.release != nil && h.release.At <= g.At) || g.At >= h.until {
					continue
				}
				what := "never told"
				if h.release != nil {
					what = "not told; released at " + ms(h.release.At)
				}
				vs = append(vs, Violation{
					Kind:   kindLateLoss,
					Events: []Event{h.acq, g},
					Detail: fmt.Sprintf("lock %q: %s's hold (fence %d, deadline %s) lost its majority at %s and was %s",
						h.acq.Lock, h.acq.Client, h.acq.Fence, ms(h.until), ms(g.At), what),
				})
				break
			}
		}
	}
	sortByTime(vs)
	return vs
}

// when is the time a violation is filed under: the last of its events.
func when(v Violation) time.Duration {
	var t time.Duration
	for _, e := range v.Events {
		t = max(t, e.At)
	}
	return t
}

func sortByTime(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool { return when(vs[i]) < when(vs[j]) })
}

// ms formats d in milliseconds, the unit of the timeline's axis.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// SummaryRow is one run in a [SummaryTable].
type SummaryRow struct {
	Name   string  // the run, such as the test name
	Report *Report // what Check found; nil prints dashes

	// ControlCaught is nil for an ordinary run. For a negative control (a
	// run built to break an invariant, proving the checker can fail) it
	// says whether the checker caught the breach.
	ControlCaught *bool
}

// SummaryTable writes a plain-text table, columns aligned, one row per run:
// faults injected, acquisitions, and the number of violations of each kind
// (overlaps, fence-order violations, stale writes accepted, lost increments,
// late losses), and, for negative controls, whether the control was caught
// ("caught" or "MISSED"; "-" for ordinary runs). It returns the first write
// error.
func SummaryTable(w io.Writer, rows []SummaryRow) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tFAULTS\tACQUISITIONS\tOVERLAPS\tFENCE-ORDER\tSTALE-WRITES\tLOST-INCREMENTS\tLATE-LOSSES\tCONTROL")
	for _, row := range rows {
		control := "-"
		if row.ControlCaught != nil {
			control = "MISSED"
			if *row.ControlCaught {
				control = "caught"
			}
		}
		if r := row.Report; r != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", row.Name, r.Faults, r.Acquisitions,
				len(r.Overlaps), len(r.FenceOrder), len(r.StaleWrites), len(r.LostIncrements), len(r.LateLoss), control)
		} else {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\n", row.Name, control)
		}
	}
	tw.Flush() // cannot fail: it writes to buf
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("redlocktest: writing summary table: %w", err)
	}
	return nil
}
