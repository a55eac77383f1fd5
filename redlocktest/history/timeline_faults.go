package history

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

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
