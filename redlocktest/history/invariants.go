package history

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// checkOverlaps sweeps the holds of each lock in order of their start,
// keeping the holds still believed. Semaphores (names in limits) are left
// to checkPermits.
func checkOverlaps(holds []*hold, limits map[string]int) []Violation {
	var vs []Violation
	m, names := byLock(holds)
	for _, name := range names {
		if limits[name] > 1 {
			continue
		}
		var active []*hold
		for _, h := range m[name] {
			if h.end <= h.acq.At {
				continue // never believed: deadline passed before Acquire returned
			}
			active = believedAt(active, h.acq.At)
			for _, a := range active {
				if a.acq.Shared && h.acq.Shared {
					continue // readers may overlap each other
				}
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

// checkFenceTies finds, for each lock, the holds that share a fence > 0
// with an earlier hold of another token. Holds are distinct tokens already
// (collectHolds keeps the first Acquire of a token).
func checkFenceTies(holds []*hold) []Violation {
	var vs []Violation
	m, names := byLock(holds)
	for _, name := range names {
		first := make(map[uint64]*hold) // fence -> its first hold, by Acquire.At
		for _, h := range m[name] {
			f := h.acq.Fence
			if f == 0 {
				continue
			}
			a := first[f]
			if a == nil {
				first[f] = h
				continue
			}
			if a.acq.Shared && h.acq.Shared {
				continue // two readers at one fence: a guard accepts both reads
			}
			vs = append(vs, Violation{
				Kind:   kindFenceTie,
				Events: []Event{a.acq, h.acq},
				Detail: fmt.Sprintf("lock %q: %s and %s both got fence %d: a guard must tell the two holders apart",
					name, describeHold(a), describeHold(h), f),
			})
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
