package history

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
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
// Extend with a non-empty Detail failed and does not move the deadline. A
// name whose Acquire events carry [Event.Limit] > 1 is a semaphore: its
// permits are holds judged by [Report.Permits] instead of
// [Report.Overlaps], and by every other invariant as holds of a lock. Check
// runs in O(n log n) time for n events, plus the number of violations found.
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
	limits := semaphores(holds)
	r.Overlaps = checkOverlaps(holds, limits)
	r.Permits = checkPermits(holds, limits)
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
