package history

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// drawGrid draws lane backgrounds, names, the time axis and grid lines.
func (tl *timeline) drawGrid() {
	tick := niceStep(tl.rowDur, int(tlPlotW)/90)
	for r, row := range tl.rows {
		for _, l := range tl.lanes {
			y := tl.laneTop(r, l)
			tl.bg = append(tl.bg,
				shape{Tag: "rect", Class: l.shade, X: 0, Y: y, W: tlLabelW + tlPlotW, H: l.h},
				shape{Tag: "text", Class: "lane-name", X: 6, Y: y + math.Min(l.h/2+4, 15), Text: shorten(l.name, 22), Title: l.name})
		}
		tl.bg = append(tl.bg, shape{Tag: "text", Class: "axis-name", X: 6, Y: row.top + 13, Text: "time (ms)"})
		first := (row.start + tick - 1) / tick * tick
		for t := first; t <= row.end; t += tick {
			x := tl.x(r, t)
			tl.bg = append(tl.bg,
				shape{Tag: "line", Class: "grid", X1: x, Y1: row.top + tlAxisH - 4, X2: x, Y2: row.top + tl.rowH},
				shape{Tag: "text", Class: "axis", X: x, Y: row.top + 12, Text: strconv.FormatInt(int64(t/time.Millisecond), 10)})
		}
	}
}

func (tl *timeline) drawHolds(events []Event, holds []*hold, lockClass map[string]string, badToken map[string]bool) {
	byToken := map[string]*hold{}
	for _, h := range holds {
		if h.acq.Token != "" {
			byToken[h.acq.Token] = h
		}
	}
	for _, h := range holds {
		l := tl.client[h.acq.Client]
		if l == nil {
			continue
		}
		a := h.acq
		if a.Start > 0 && a.Start < a.At {
			tl.segments(a.Start, a.At, func(r int, x0, x1 float64) {
				y := tl.laneTop(r, l) + tlBarY + tlBarH/2
				tl.mid = append(tl.mid, shape{Tag: "line", Class: "wait", X1: x0, Y1: y, X2: x1, Y2: y,
					Title: fmt.Sprintf("%s waited in Acquire(%s) from %s to %s", a.Client, a.Lock, ms(a.Start), ms(a.At))})
			})
		}
		how := "deadline"
		switch {
		case h.lost != nil && h.lost.At == h.end:
			how = "told it was lost"
		case h.release != nil && h.release.At == h.end:
			how = "released"
		case h.until <= 0:
			how = "end of history, no deadline recorded"
		}
		title := fmt.Sprintf("%s holds %s: fence %d, token %s\nacquire called %s, returned %s\nbelieved until %s (%s); local deadline %s",
			a.Client, a.Lock, a.Fence, a.Token, ms(a.Start), ms(a.At), ms(h.end), how, ms(h.until))
		cls := "hold " + lockClass[a.Lock]
		if a.Shared {
			cls += " shared"
			title = strings.Replace(title, " holds ", " reads (shared) ", 1)
		}
		if badToken[a.Token] {
			cls += " viol"
			title += "\nINVOLVED IN A VIOLATION"
		}
		label := ""
		if a.Fence > 0 {
			label = strconv.FormatUint(a.Fence, 10)
		}
		labelled := false
		end := max(h.end, a.At)
		tl.segments(a.At, end, func(r int, x0, x1 float64) {
			y := tl.laneTop(r, l) + tlBarY
			w := math.Max(x1-x0, 1.5)
			tl.mid = append(tl.mid, shape{Tag: "rect", Class: cls, X: x0, Y: y, W: w, H: tlBarH, Title: title})
			if label != "" && !labelled && w >= 6.5*float64(len(label))+4 {
				tl.fg = append(tl.fg, shape{Tag: "text", Class: "fence", X: x0 + 2.5, Y: y + tlBarH - 3, Text: label, Title: title})
				labelled = true
			}
		})
		released := h.release != nil && h.release.At == h.end
		if h.until > h.end && !released { // told of a loss before the deadline
			tl.segments(h.end, h.until, func(r int, x0, x1 float64) {
				y := tl.laneTop(r, l) + tlBarY + tlBarH/2
				tl.mid = append(tl.mid, shape{Tag: "line", Class: "deadline", X1: x0, Y1: y, X2: x1, Y2: y,
					Title: fmt.Sprintf("%s's local deadline for fence %d: %s", a.Client, a.Fence, ms(h.until))})
			})
		}
		if h.until > 0 {
			r := tl.rowOf(h.until)
			x, y := tl.x(r, h.until), tl.laneTop(r, l)+tlBarY
			cls := "deadline-tick"
			if released && h.until > h.end {
				cls += " after-release" // of less interest: drawn lighter
			}
			tl.mid = append(tl.mid, shape{Tag: "line", Class: cls, X1: x, Y1: y - 1, X2: x, Y2: y + tlBarH + 1,
				Title: fmt.Sprintf("%s's local deadline for fence %d: %s", a.Client, a.Fence, ms(h.until))})
		}
	}

	for _, e := range events {
		l := tl.client[e.Client]
		if l == nil {
			continue
		}
		r := tl.rowOf(e.At)
		x, y := tl.x(r, e.At), tl.laneTop(r, l)
		switch e.Kind {
		case Extend:
			if byToken[e.Token] == nil {
				continue
			}
			cls, title := "ext", fmt.Sprintf("%s extended %s (fence %d) at %s: new deadline %s", e.Client, e.Lock, byToken[e.Token].acq.Fence, ms(e.At), ms(e.Until))
			if e.Detail != "" {
				cls, title = "ext-fail", fmt.Sprintf("%s's extend of %s failed at %s: %s", e.Client, e.Lock, ms(e.At), e.Detail)
			}
			tl.fg = append(tl.fg, shape{Tag: "line", Class: cls, X1: x, Y1: y + tlBarY - 2, X2: x, Y2: y + tlBarY + tlBarH + 2, Title: title})
		case Lost:
			h := byToken[e.Token]
			if h == nil {
				continue
			}
			cls := "lost"
			if badToken[e.Token] {
				cls += " viol"
			}
			tl.fg = append(tl.fg, shape{Tag: "polygon", Class: cls,
				Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f", x-5, y+1, x+5, y+1, x, y+tlBarY+5),
				Title:  fmt.Sprintf("%s told at %s that its hold of %s (fence %d) is lost; deadline %s", e.Client, ms(e.At), e.Lock, h.acq.Fence, ms(h.until))})
		case AcquireFail:
			if e.Start > 0 && e.Start < e.At {
				tl.segments(e.Start, e.At, func(r int, x0, x1 float64) {
					yy := tl.laneTop(r, l) + tlBarY + tlBarH/2
					tl.mid = append(tl.mid, shape{Tag: "line", Class: "wait", X1: x0, Y1: yy, X2: x1, Y2: yy})
				})
			}
			tl.mid = append(tl.mid, shape{Tag: "line", Class: "afail", X1: x, Y1: y + tlBarY + 2, X2: x, Y2: y + tlBarY + tlBarH - 2,
				Title: fmt.Sprintf("%s's Acquire(%s) failed at %s: %s", e.Client, e.Lock, ms(e.At), e.Detail)})
		}
	}
}

// drawOverlaps shades in red the stretch during which the holds of an
// overlap (two holds of a lock) or of a permits violation (one more permit
// than the semaphore has) were all believed.
func (tl *timeline) drawOverlaps(rep *Report, holds []*hold) {
	byToken := map[string]*hold{}
	for _, h := range holds {
		if h.acq.Token != "" {
			byToken[h.acq.Token] = h
		}
	}
	for _, v := range slices.Concat(rep.Overlaps, rep.Permits) {
		together := make([]*hold, 0, len(v.Events))
		for _, e := range v.Events {
			if h := byToken[e.Token]; h != nil {
				together = append(together, h)
			}
		}
		if len(together) < 2 || len(together) != len(v.Events) {
			continue
		}
		from, to := together[0].acq.At, together[0].end
		for _, h := range together {
			from, to = max(from, h.acq.At), min(to, h.end)
		}
		for _, h := range together {
			l := tl.client[h.acq.Client]
			if l == nil || to <= from {
				continue
			}
			tl.segments(from, to, func(r int, x0, x1 float64) {
				tl.fg = append(tl.fg, shape{Tag: "rect", Class: "ovl", X: x0, Y: tl.laneTop(r, l) + tlBarY - 2, W: math.Max(x1-x0, 1.5), H: tlBarH + 4, Title: v.Detail})
			})
		}
	}
}

// drawWrites draws writes as dots, merging those closer than tlBucket pixels
// in the same lane; writes involved in a violation are drawn alone.
func (tl *timeline) drawWrites(events []Event, bad map[Event]bool) {
	type key struct {
		row      int
		lane     *tlLane
		bucket   int
		accepted bool
	}
	type agg struct {
		n                  int
		x                  float64
		minFence, maxFence uint64
		minSeq, maxSeq     int64
		first              Event
	}
	aggs := map[key]*agg{}
	var keys []key
	for _, e := range events {
		if e.Kind != Write {
			continue
		}
		l := tl.client[e.Client]
		if l == nil {
			continue
		}
		r := tl.rowOf(e.At)
		x, y := tl.x(r, e.At), tl.laneTop(r, l)+tlWriteY
		cls := "w-rej"
		if e.Accepted {
			cls = "w-ok"
		}
		if bad[e] {
			tl.fg = append(tl.fg, shape{Tag: "circle", Class: cls + " viol", X: x, Y: y, R: 3.5, Title: writeTitle(e) + "\nINVOLVED IN A VIOLATION"})
			continue
		}
		k := key{r, l, int(x / tlBucket), e.Accepted}
		a := aggs[k]
		if a == nil {
			a = &agg{x: x, minFence: e.Fence, maxFence: e.Fence, minSeq: e.Seq, maxSeq: e.Seq, first: e}
			aggs[k] = a
			keys = append(keys, k)
		}
		a.n++
		a.minFence, a.maxFence = min(a.minFence, e.Fence), max(a.maxFence, e.Fence)
		a.minSeq, a.maxSeq = min(a.minSeq, e.Seq), max(a.maxSeq, e.Seq)
	}
	for _, k := range keys {
		a := aggs[k]
		cls := "w-rej"
		if k.accepted {
			cls = "w-ok"
		}
		title := writeTitle(a.first)
		r := 2.5
		if a.n > 1 {
			what := "rejected"
			if k.accepted {
				what = "accepted"
			}
			title = fmt.Sprintf("%d writes by %s %s around %s: fences %d-%d, seq %d-%d", a.n, a.first.Client, what, ms(a.first.At), a.minFence, a.maxFence, a.minSeq, a.maxSeq)
			r = 3
		}
		tl.mid = append(tl.mid, shape{Tag: "circle", Class: cls, X: a.x, Y: tl.laneTop(k.row, k.lane) + tlWriteY, R: r, Title: title})
	}
}
