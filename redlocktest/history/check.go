package history

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
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

	// FenceTies: two holds of the same lock with different tokens got the
	// same fence (> 0), whether or not they overlapped. A guard that
	// accepts a fence equal to the highest it has seen would then accept
	// both holders: fences must also tell holders apart. For each fence
	// shared by several holds, each later hold (by Acquire.At) is one
	// violation holding the first hold's Acquire event and its own.
	FenceTies []Violation

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
	Kind   string  // "overlap", "fence-order", "fence-tie", "stale-write", "lost-increment" or "late-loss"
	Events []Event // the events involved, as recorded
	Detail string  // one line a person can read
}

// The values of Violation.Kind.
const (
	kindOverlap       = "overlap"
	kindFenceOrder    = "fence-order"
	kindFenceTie      = "fence-tie"
	kindStaleWrite    = "stale-write"
	kindLostIncrement = "lost-increment"
	kindLateLoss      = "late-loss"
)

// String formats v as "kind: detail".
func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// OK reports whether r contains no violation of any kind.
func (r *Report) OK() bool {
	return len(r.Violations()) == 0
}

// Violations returns all violations in one new slice: overlaps, then fence
// order, fence ties, stale writes, lost increments and late losses.
func (r *Report) Violations() []Violation {
	var all []Violation
	for _, vs := range [][]Violation{r.Overlaps, r.FenceOrder, r.FenceTies, r.StaleWrites, r.LostIncrements, r.LateLoss} {
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
	fmt.Fprintf(&b, "\n%d violations: %d overlap, %d fence-order, %d fence-tie, %d stale-write, %d lost-increment, %d late-loss",
		len(all), len(r.Overlaps), len(r.FenceOrder), len(r.FenceTies), len(r.StaleWrites), len(r.LostIncrements), len(r.LateLoss))
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
	r.FenceTies = checkFenceTies(holds)
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
