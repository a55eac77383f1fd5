package history

import (
	"fmt"
	"math"
	"sort"
	"strconv"
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

// faultClass sorts faults into a few colours by their kind.
func faultClass(k FaultKind) string {
	switch k {
	case FaultPause, FaultClientPause, FaultProcessPause:
		return "f-pause"
	case FaultLatency, FaultDelay, FaultHold:
		return "f-slow"
	case FaultClockJump:
		return "f-clock"
	case FaultKill, FaultStop, FaultAmnesia, FaultDown, FaultBlackhole:
		return "f-down"
	}
	return "f-other"
}

// faultName is the label of a fault: its kind and Detail.
func faultName(e Event) string {
	switch {
	case e.Fault == "":
		return e.Detail
	case e.Detail == "":
		return string(e.Fault)
	}
	return string(e.Fault) + " " + e.Detail
}

// faultKey is what pairs a Heal with its Fault besides Node and Client:
// the kind, or, for a fault recorded without one, its Detail.
func faultKey(e Event) string {
	if e.Fault != "" {
		return string(e.Fault)
	}
	return "?" + e.Detail
}

// drawFaults pairs each Fault with the next Heal of the same Node, Client
// and kind (else of the same Node and Client); a fault never healed lasts
// to the end of the chart.
func (tl *timeline) drawFaults(events []Event) {
	type key struct {
		node   int
		client string
		fault  string
	}
	var sorted []Event
	for _, e := range events {
		if e.Kind == Fault || e.Kind == Heal {
			sorted = append(sorted, e)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].At < sorted[j].At })
	open := map[key][]Event{}
	type span struct {
		f    Event
		end  time.Duration
		open bool
	}
	var spans []span
	for _, e := range sorted {
		switch e.Kind {
		case Fault:
			k := key{e.Node, e.Client, faultKey(e)}
			open[k] = append(open[k], e)
		case Heal:
			k := key{e.Node, e.Client, faultKey(e)}
			if len(open[k]) == 0 { // a Heal that names the fault differently
				for ok, fs := range open {
					if ok.node == e.Node && ok.client == e.Client && len(fs) > 0 {
						k = ok
						break
					}
				}
			}
			if fs := open[k]; len(fs) > 0 {
				spans = append(spans, span{f: fs[0], end: e.At})
				open[k] = fs[1:]
			}
		}
	}
	for _, fs := range open {
		for _, f := range fs {
			spans = append(spans, span{f: f, end: tl.t1, open: true})
		}
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].f.At < spans[j].f.At })

	for _, s := range spans {
		f := s.f
		where := "node " + strconv.Itoa(f.Node)
		if f.Node < 0 {
			where = "all nodes"
		}
		if f.Client != "" {
			where += " for " + f.Client
		}
		until := "to " + ms(s.end)
		if s.open {
			until = "never healed"
		}
		name := faultName(f)
		title := fmt.Sprintf("%s: %s from %s %s", where, name, ms(f.At), until)
		class := faultClass(f.Fault)
		var lanes []*tlLane
		if l := tl.node[f.Node]; l != nil {
			lanes = append(lanes, l)
		} else if f.Node < 0 && f.Client == "" {
			lanes = append(lanes, tl.all)
		}
		if l := tl.client[f.Client]; l != nil {
			lanes = append(lanes, l)
		}
		for _, l := range lanes {
			cls := class
			if l.kind == "client" {
				cls += " cf"
			}
			labelled := false
			tl.segments(f.At, s.end, func(r int, x0, x1 float64) {
				y := tl.laneTop(r, l)
				w := math.Max(x1-x0, 2)
				tl.bg = append(tl.bg, shape{Tag: "rect", Class: cls, X: x0, Y: y + 1, W: w, H: l.h - 2, Title: title})
				if l.kind != "client" && w > 6*float64(len(name))+6 { // label every row's part
					tl.bg = append(tl.bg, shape{Tag: "text", Class: "flabel", X: x0 + 3, Y: y + l.h - 6, Text: name, Title: title})
					labelled = true
				}
			})
			if l.kind != "client" && !labelled { // too short for its name: put it after
				r := tl.rowOf(f.At)
				tl.fg = append(tl.fg, shape{Tag: "text", Class: "flabel-out", X: tl.x(r, s.end) + 3, Y: tl.laneTop(r, l) + l.h - 6, Text: name, Title: title})
			}
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

// drawOverlaps shades in red the stretch during which two holds overlapped.
func (tl *timeline) drawOverlaps(rep *Report, holds []*hold) {
	byToken := map[string]*hold{}
	for _, h := range holds {
		if h.acq.Token != "" {
			byToken[h.acq.Token] = h
		}
	}
	for _, v := range rep.Overlaps {
		if len(v.Events) != 2 {
			continue
		}
		a, b := byToken[v.Events[0].Token], byToken[v.Events[1].Token]
		if a == nil || b == nil {
			continue
		}
		from, to := max(a.acq.At, b.acq.At), min(a.end, b.end)
		for _, h := range []*hold{a, b} {
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
