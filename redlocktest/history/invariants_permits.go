package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// semaphores returns the limit of each name whose holds were acquired as
// permits: the largest Event.Limit among its Acquire events, when above 1.
// Names not in the map are locks.
func semaphores(holds []*hold) map[string]int {
	limits := make(map[string]int)
	for _, h := range holds {
		if l := h.acq.Limit; l > 1 && l > limits[h.acq.Lock] {
			limits[h.acq.Lock] = l
		}
	}
	return limits
}

// believedAt keeps, in order and in place, the holds of active still
// believed at t: a hold that ends at t is over.
func believedAt(active []*hold, t time.Duration) []*hold {
	kept := active[:0]
	for _, a := range active {
		if a.end > t {
			kept = append(kept, a)
		}
	}
	return kept
}

// checkPermits sweeps the permits of each semaphore in order of their
// start, as checkOverlaps sweeps the holds of a lock, and reports each hold
// that begins while limit others are believed.
func checkPermits(holds []*hold, limits map[string]int) []Violation {
	var vs []Violation
	m, names := byLock(holds)
	for _, name := range names {
		limit := limits[name]
		if limit <= 1 {
			continue
		}
		var active []*hold
		for _, h := range m[name] {
			if h.end <= h.acq.At {
				continue // never believed
			}
			active = believedAt(active, h.acq.At)
			if len(active) >= limit {
				vs = append(vs, tooManyPermits(name, limit, active, h))
			}
			active = append(active, h)
		}
	}
	sortByTime(vs)
	return vs
}

// tooManyPermits is the violation of h, begun while the holds of active
// (in order of Acquire.At, at least limit of them) were believed. It names
// the limit of them believed longest, so that its interval is the longest
// one during which limit+1 permits were believed together.
func tooManyPermits(name string, limit int, active []*hold, h *hold) Violation {
	longest := slices.Clone(active)
	slices.SortStableFunc(longest, func(a, b *hold) int { return cmp.Compare(b.end, a.end) })
	chosen := make(map[*hold]bool, limit)
	for _, a := range longest[:limit] {
		chosen[a] = true
	}
	events := make([]Event, 0, limit+1)
	who := make([]string, 0, limit+1)
	end := h.end
	for _, a := range active {
		if chosen[a] {
			events = append(events, a.acq)
			who = append(who, describeHold(a))
			end = min(end, a.end)
		}
	}
	events = append(events, h.acq)
	who = append(who, describeHold(h))
	return Violation{
		Kind:   kindPermits,
		Events: events,
		Detail: fmt.Sprintf("semaphore %q (limit %d): %d permits believed at once for %s [%s, %s]: %s",
			name, limit, limit+1, ms(end-h.acq.At), ms(h.acq.At), ms(end), strings.Join(who, ", ")),
	}
}
