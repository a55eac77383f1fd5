package redlocktest

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Layout of the timeline, in SVG pixels.
const (
	tlLabelW  = 150.0 // lane names
	tlPlotW   = 1430.0
	tlRightW  = 20.0
	tlAxisH   = 20.0
	tlClientH = 30.0
	tlNodeH   = 20.0
	tlRowGap  = 18.0
	tlBarY    = 5.0 // hold bar, from the top of a client lane
	tlBarH    = 13.0
	tlWriteY  = 24.0 // centre of write dots
	tlBucket  = 3.0  // writes closer than this many pixels are drawn as one dot

	tlMaxRowDur = 30 * time.Second // longer runs wrap onto several rows
	tlMaxRows   = 12
	tlMaxListed = 500 // violations listed under the chart
)

// WriteTimeline writes a picture of a history to w: a self-contained HTML
// page (inline SVG and CSS, no external assets, no JavaScript) for people
// debugging a chaos run by looking at it rather than reading logs.
//
// Each client has a lane with its holds: a bar from Acquire.At to the end of
// its belief (see [Report.Overlaps]) labelled with the fence, a grey line
// before it for the wait in Acquire, ticks for extends (orange if failed), a
// red triangle where it was told of a loss, and a tick at its local deadline
// (joined to the bar by a dashed line if the hold was lost before it). Below the bars, its writes are dots, green if the store accepted
// them and red if it rejected them; writes closer together than a few pixels
// are merged into one dot. Hovering over anything shows the details. Each
// node has a lane with its faults, shaded from Fault to Heal and labelled
// with Detail; a fault for one client is also shaded in that client's lane. A
// dashed dark red line marks each MajorityGone event. The events of every
// violation in rep are outlined in red (overlapping stretches shaded red),
// and the violations are listed under the chart. The time axis is in
// milliseconds on the Recorder's clock; runs longer than about 30s wrap onto
// several rows (at most 12), each 1600 pixels wide.
//
// If rep is nil, WriteTimeline calls Check(events, nil). Client names and
// details are escaped. It returns the first write error.
func WriteTimeline(w io.Writer, title string, events []Event, rep *Report) error {
	if rep == nil {
		rep = Check(events, nil)
	}
	p := layoutTimeline(title, events, rep)
	if err := timelineTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("redlocktest: writing timeline: %w", err)
	}
	return nil
}

// TimelineFile writes the timeline of WriteTimeline to the file path,
// creating its parent directories, and returns path, so a failing test can
// log where to look:
//
//	p, err := redlocktest.TimelineFile(filepath.Join(dir, t.Name()+".html"), t.Name(), events, rep)
func TimelineFile(path, title string, events []Event, rep *Report) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("redlocktest: timeline: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("redlocktest: timeline: %w", err)
	}
	bw := bufio.NewWriter(f)
	err = WriteTimeline(bw, title, events, rep)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("redlocktest: timeline %s: %w", path, err)
	}
	return path, nil
}

// shape is one SVG element of the chart.
type shape struct {
	Tag            string // "rect", "line", "circle", "polygon" or "text"
	Class          string
	X, Y, W, H     float64 // rect; text: X, Y
	X1, Y1, X2, Y2 float64 // line
	R              float64 // circle: centre X, Y
	Points         string  // polygon
	Text           string
	Title          string // tooltip
}

type legendItem struct {
	Shapes []shape
	Label  string
}

type listedViolation struct {
	N      int
	Kind   string
	At     string
	Detail string
}

// timelinePage is what the template draws.
type timelinePage struct {
	Title      string
	Summary    string
	Range      string
	Empty      bool
	Width      float64
	Height     float64
	Shapes     []shape
	Legend     []legendItem
	Violations []listedViolation
	More       int // violations not listed
}

type tlLane struct {
	name  string
	kind  string // "client", "node", "all"
	y, h  float64
	shade string
}

type tlRow struct {
	start, end time.Duration
	top        float64 // y of the axis
}

// timeline turns times into coordinates.
type timeline struct {
	t0, t1 time.Duration
	rowDur time.Duration
	rows   []tlRow
	lanes  []*tlLane
	client map[string]*tlLane
	node   map[int]*tlLane
	all    *tlLane
	rowH   float64

	bg, mid, fg []shape // drawn in this order
}

func (tl *timeline) rowOf(t time.Duration) int {
	i := int((t - tl.t0) / tl.rowDur)
	return min(max(i, 0), len(tl.rows)-1)
}

func (tl *timeline) x(row int, t time.Duration) float64 {
	r := tl.rows[row]
	t = min(max(t, r.start), r.end)
	return tlLabelW + float64(t-r.start)/float64(tl.rowDur)*tlPlotW
}

// segments calls f for each row the span [a, b] crosses, with its x range
// there.
func (tl *timeline) segments(a, b time.Duration, f func(row int, x0, x1 float64)) {
	for r := tl.rowOf(a); r <= tl.rowOf(b); r++ {
		f(r, tl.x(r, a), tl.x(r, b))
	}
}

func (tl *timeline) laneTop(row int, l *tlLane) float64 {
	return tl.rows[row].top + tlAxisH + l.y
}

func layoutTimeline(title string, events []Event, rep *Report) *timelinePage {
	p := &timelinePage{Title: title, Summary: rep.String()}
	if len(events) == 0 {
		p.Empty = true
		return p
	}

	// Time range.
	tl := &timeline{t0: time.Duration(math.MaxInt64), client: map[string]*tlLane{}, node: map[int]*tlLane{}}
	var horizon time.Duration
	for _, e := range events {
		tl.t0 = min(tl.t0, e.At)
		if e.Start > 0 {
			tl.t0 = min(tl.t0, e.Start)
		}
		horizon = max(horizon, e.At)
		tl.t1 = max(tl.t1, e.At, e.Until)
	}
	tl.t0 = max(tl.t0, 0)
	step := niceStep(tl.t1-tl.t0, 10)
	tl.t0 = tl.t0 / step * step
	if tl.t1 <= tl.t0 {
		tl.t1 = tl.t0 + time.Millisecond
	}
	total := tl.t1 - tl.t0
	// Rows of at most tlMaxRowDur, give or take 5% (a 2-minute soak and
	// the deadlines of its last holds fit in 4 rows).
	slack := tlMaxRowDur + tlMaxRowDur/20
	nrows := min(int((total+slack-1)/slack), tlMaxRows)
	tl.rowDur = (total + time.Duration(nrows) - 1) / time.Duration(nrows)
	if nrows > 1 { // round rows to whole seconds, so their axes read well
		tl.rowDur = (tl.rowDur + time.Second - 1) / time.Second * time.Second
	}
	p.Range = fmt.Sprintf("%d events from %s to %s", len(events), ms(tl.t0), ms(tl.t1))

	// Lanes: clients in natural order, then nodes, then faults of no node.
	var clients []string
	maxNode := -1
	for _, e := range events {
		if e.Client != "" && tl.client[e.Client] == nil {
			tl.client[e.Client] = &tlLane{name: e.Client, kind: "client", h: tlClientH}
			clients = append(clients, e.Client)
		}
		if e.Kind == Fault || e.Kind == Heal {
			if e.Node >= 0 {
				maxNode = max(maxNode, e.Node)
			} else if e.Client == "" && tl.all == nil {
				tl.all = &tlLane{name: "all nodes", kind: "all", h: tlNodeH}
			}
		}
	}
	sort.Slice(clients, func(i, j int) bool { return naturalLess(clients[i], clients[j]) })
	for _, c := range clients {
		tl.lanes = append(tl.lanes, tl.client[c])
	}
	for n := 0; n <= maxNode; n++ {
		l := &tlLane{name: fmt.Sprintf("node %d", n), kind: "node", h: tlNodeH}
		tl.node[n] = l
		tl.lanes = append(tl.lanes, l)
	}
	if tl.all != nil {
		tl.lanes = append(tl.lanes, tl.all)
	}
	y := 0.0
	for i, l := range tl.lanes {
		l.y = y
		y += l.h
		l.shade = "lane" + strconv.Itoa(i%2)
		if l.kind != "client" {
			l.shade = "nodelane"
		}
	}
	tl.rowH = tlAxisH + y
	for r := range nrows {
		start := tl.t0 + time.Duration(r)*tl.rowDur
		tl.rows = append(tl.rows, tlRow{start: start, end: start + tl.rowDur, top: 6 + float64(r)*(tl.rowH+tlRowGap)})
	}
	p.Width = tlLabelW + tlPlotW + tlRightW
	p.Height = 6 + float64(nrows)*(tl.rowH+tlRowGap)

	// Lock colours.
	lockClass := map[string]string{}
	var locks []string
	for _, e := range events {
		if e.Kind == Acquire {
			if _, ok := lockClass[e.Lock]; !ok {
				lockClass[e.Lock] = ""
				locks = append(locks, e.Lock)
			}
		}
	}
	sort.Strings(locks)
	for i, l := range locks {
		lockClass[l] = "c" + strconv.Itoa(i%8)
	}

	// What the violations point at.
	badToken := map[string]bool{}
	badEvent := map[Event]bool{}
	for _, v := range rep.Violations() {
		for _, e := range v.Events {
			badEvent[e] = true
			switch e.Kind {
			case Acquire, Extend, Release, Lost:
				if e.Token != "" {
					badToken[e.Token] = true
				}
			}
		}
	}

	tl.drawGrid()
	tl.drawFaults(events)
	holds := collectHolds(events, horizon)
	tl.drawHolds(events, holds, lockClass, badToken)
	tl.drawOverlaps(rep, holds)
	tl.drawWrites(events, badEvent)
	for _, e := range events {
		if e.Kind != MajorityGone {
			continue
		}
		r := tl.rowOf(e.At)
		x := tl.x(r, e.At)
		tl.fg = append(tl.fg, shape{Tag: "line", Class: "mg", X1: x, Y1: tl.rows[r].top + tlAxisH - 4, X2: x, Y2: tl.rows[r].top + tl.rowH,
			Title: fmt.Sprintf("majority of nodes gone for lock %s at %s", e.Lock, ms(e.At))})
	}

	p.Shapes = append(append(tl.bg, tl.mid...), tl.fg...)
	p.Legend = legend(locks, lockClass)
	for i, v := range rep.Violations() {
		if i == tlMaxListed {
			p.More = len(rep.Violations()) - tlMaxListed
			break
		}
		at := "-"
		if len(v.Events) > 0 {
			at = ms(when(v))
		}
		p.Violations = append(p.Violations, listedViolation{N: i + 1, Kind: v.Kind, At: at, Detail: v.Detail})
	}
	return p
}

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

// faultClass sorts faults into a few colours by their Detail.
func faultClass(detail string) string {
	d := strings.ToLower(detail)
	switch {
	case strings.Contains(d, "pause"):
		return "f-pause"
	case strings.Contains(d, "latency") || strings.Contains(d, "slow"):
		return "f-slow"
	case strings.Contains(d, "clock"):
		return "f-clock"
	case strings.Contains(d, "kill") || strings.Contains(d, "down") || strings.Contains(d, "stop") ||
		strings.Contains(d, "restart") || strings.Contains(d, "blackhole") || strings.Contains(d, "partition"):
		return "f-down"
	}
	return "f-other"
}

// drawFaults pairs each Fault with the next Heal of the same Node, Client
// and Detail (else of the same Node and Client); a fault never healed lasts
// to the end of the chart.
func (tl *timeline) drawFaults(events []Event) {
	type key struct {
		node   int
		client string
		detail string
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
			k := key{e.Node, e.Client, e.Detail}
			open[k] = append(open[k], e)
		case Heal:
			k := key{e.Node, e.Client, e.Detail}
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
		title := fmt.Sprintf("%s: %s from %s %s", where, f.Detail, ms(f.At), until)
		class := faultClass(f.Detail)
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
				if l.kind != "client" && w > 6*float64(len(f.Detail))+6 { // label every row's part
					tl.bg = append(tl.bg, shape{Tag: "text", Class: "flabel", X: x0 + 3, Y: y + l.h - 6, Text: f.Detail, Title: title})
					labelled = true
				}
			})
			if l.kind != "client" && !labelled { // too short for its name: put it after
				r := tl.rowOf(f.At)
				tl.fg = append(tl.fg, shape{Tag: "text", Class: "flabel-out", X: tl.x(r, s.end) + 3, Y: tl.laneTop(r, l) + l.h - 6, Text: f.Detail, Title: title})
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

func writeTitle(e Event) string {
	what := "rejected"
	if e.Accepted {
		what = "accepted"
	}
	s := fmt.Sprintf("%s wrote %s: %s, fence %d, seq %d, value %d\nsent %s, answered %s", e.Client, e.Lock, what, e.Fence, e.Seq, e.Value, ms(e.Start), ms(e.At))
	if e.Detail != "" {
		s += "\n" + e.Detail
	}
	return s
}

func legend(locks []string, lockClass map[string]string) []legendItem {
	bar := func(cls string) shape { return shape{Tag: "rect", Class: cls, X: 2, Y: 3, W: 26, H: 11} }
	var items []legendItem
	if len(locks) <= 1 {
		items = append(items, legendItem{[]shape{bar("hold c0"), {Tag: "text", Class: "fence", X: 5, Y: 12, Text: "7"}}, "hold: believed from Acquire's return to release, loss signal or deadline; the number is the fence"})
	} else {
		for _, l := range locks {
			items = append(items, legendItem{[]shape{bar("hold " + lockClass[l]), {Tag: "text", Class: "fence", X: 5, Y: 12, Text: "7"}}, "hold of " + l + " (number: fence)"})
		}
	}
	items = append(items,
		legendItem{[]shape{{Tag: "line", Class: "wait", X1: 2, Y1: 8, X2: 28, Y2: 8}, {Tag: "line", Class: "afail", X1: 28, Y1: 3, X2: 28, Y2: 13}}, "waiting in Acquire (a grey tick: it failed)"},
		legendItem{[]shape{{Tag: "rect", Class: "hold c0", X: 2, Y: 3, W: 26, H: 11}, {Tag: "line", Class: "ext", X1: 12, Y1: 1, X2: 12, Y2: 16}, {Tag: "line", Class: "ext-fail", X1: 22, Y1: 1, X2: 22, Y2: 16}}, "extend (orange: failed)"},
		legendItem{[]shape{{Tag: "polygon", Class: "lost", Points: "10,1 20,1 15,9"}}, "told the lock is lost (Done fired)"},
		legendItem{[]shape{{Tag: "line", Class: "deadline", X1: 2, Y1: 8, X2: 26, Y2: 8}, {Tag: "line", Class: "deadline-tick", X1: 26, Y1: 2, X2: 26, Y2: 15}}, "local deadline (dashed after a loss signal; light grey after a release)"},
		legendItem{[]shape{{Tag: "circle", Class: "w-ok", X: 9, Y: 8, R: 3}, {Tag: "circle", Class: "w-rej", X: 21, Y: 8, R: 3}}, "write accepted / rejected by the store"},
		legendItem{[]shape{{Tag: "rect", Class: "f-down", X: 2, Y: 2, W: 8, H: 13}, {Tag: "rect", Class: "f-pause", X: 11, Y: 2, W: 8, H: 13}, {Tag: "rect", Class: "f-slow", X: 20, Y: 2, W: 8, H: 13}}, "fault: down/kill, pause, latency (also clock: blue, other: grey)"},
		legendItem{[]shape{{Tag: "line", Class: "mg", X1: 15, Y1: 0, X2: 15, Y2: 17}}, "majority of nodes gone"},
		legendItem{[]shape{{Tag: "rect", Class: "hold c0 viol", X: 2, Y: 3, W: 26, H: 11}, {Tag: "rect", Class: "ovl", X: 14, Y: 1, W: 14, H: 15}}, "involved in a violation (red: overlap)"},
	)
	return items
}

// niceStep returns a step of 1, 2 or 5 times a power of ten milliseconds
// that cuts d into at most n pieces.
func niceStep(d time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	for step := time.Millisecond; ; step *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if d/(m*step) < time.Duration(n) {
				return m * step
			}
		}
	}
}

// naturalLess orders "c2" before "c10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

var timelineTemplate = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"n": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; margin: 14px; color: #222; }
h1 { font-size: 17px; margin: 0 0 6px; }
pre.summary { background: #f4f4f4; padding: 6px 8px; margin: 0 0 8px; white-space: pre-wrap; }
.range { color: #666; margin-bottom: 6px; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.lane0 { fill: #f6f7f9; } .lane1 { fill: #ffffff; } .nodelane { fill: #eceff3; }
.lane-name { font-size: 12px; fill: #222; } .axis-name { font-size: 10px; fill: #777; }
.axis { font-size: 10px; fill: #555; text-anchor: middle; }
.grid { stroke: #d5d8dc; stroke-width: 1; }
.hold { stroke: #1b2a3a; stroke-width: 0.5; }
.c0 { fill: #4e79a7; } .c1 { fill: #9c755f; } .c2 { fill: #b07aa1; } .c3 { fill: #76b7b2; }
.c4 { fill: #edc948; } .c5 { fill: #59a14f; } .c6 { fill: #ff9da7; } .c7 { fill: #bab0ac; }
.fence { font-size: 10px; fill: #fff; font-weight: 600; pointer-events: none; }
.viol { stroke: #e00000; stroke-width: 2.5; }
.ovl { fill: #ff0000; fill-opacity: 0.35; stroke: #e00000; stroke-width: 1; }
.wait { stroke: #a9a9a9; stroke-width: 1; }
.afail { stroke: #888; stroke-width: 1.5; }
.ext { stroke: #111; stroke-width: 1.5; }
.ext-fail { stroke: #f28e2b; stroke-width: 2.5; }
.lost { fill: #e00000; stroke: #700; stroke-width: 0.5; }
.lost.viol { stroke: #000; stroke-width: 1.5; }
.deadline { stroke: #555; stroke-width: 1; stroke-dasharray: 3 2; }
.deadline-tick { stroke: #555; stroke-width: 1; } .after-release { stroke: #b5b5b5; }
.w-ok { fill: #2ca02c; } .w-rej { fill: #d62728; }
circle.viol { stroke: #e00000; stroke-width: 2; fill-opacity: 1; }
.f-down { fill: #4d4d4d; fill-opacity: 0.75; } .f-pause { fill: #8e5ac8; fill-opacity: 0.7; }
.f-slow { fill: #f28e2b; fill-opacity: 0.7; } .f-clock { fill: #1f77b4; fill-opacity: 0.7; }
.f-other { fill: #8c8c8c; fill-opacity: 0.7; }
.cf { fill-opacity: 0.18; }
.flabel { font-size: 10px; fill: #fff; pointer-events: none; }
.flabel-out { font-size: 10px; fill: #333; }
.mg { stroke: #8b0000; stroke-width: 1.5; stroke-dasharray: 6 3; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 22px; margin: 8px 0 12px; max-width: 1600px; }
.legend div { display: flex; align-items: center; gap: 6px; }
table.violations { border-collapse: collapse; margin-top: 8px; }
table.violations td, table.violations th { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.violations td.kind { color: #c00; font-weight: 600; white-space: nowrap; }
table.violations td.at { white-space: nowrap; text-align: right; }
.ok { color: #2a7d2a; font-weight: 600; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<pre class="summary">{{.Summary}}</pre>
{{if .Empty}}<p>No events were recorded.</p>{{else -}}
<div class="range">{{.Range}}. Hover over a shape for details.</div>
<div class="legend">
{{- range .Legend}}<div><svg width="30" height="17">{{range .Shapes}}{{template "shape" .}}{{end}}</svg><span>{{.Label}}</span></div>{{end -}}
</div>
<svg xmlns="http://www.w3.org/2000/svg" width="{{n .Width}}" height="{{n .Height}}" viewBox="0 0 {{n .Width}} {{n .Height}}">
{{range .Shapes}}{{template "shape" .}}
{{end -}}
</svg>
{{end -}}
<h2 style="font-size:15px">Violations</h2>
{{if .Violations -}}
<table class="violations">
<tr><th>#</th><th>kind</th><th>at</th><th>what</th></tr>
{{range .Violations}}<tr><td>{{.N}}</td><td class="kind">{{.Kind}}</td><td class="at">{{.At}}</td><td>{{.Detail}}</td></tr>
{{end -}}
</table>
{{if .More}}<p>... and {{.More}} more.</p>{{end}}
{{- else}}<p class="ok">None.</p>{{end}}
</body>
</html>
{{define "shape" -}}
{{if eq .Tag "rect"}}<rect x="{{n .X}}" y="{{n .Y}}" width="{{n .W}}" height="{{n .H}}" class="{{.Class}}">{{with .Title}}<title>{{.}}</title>{{end}}</rect>
{{- else if eq .Tag "line"}}<line x1="{{n .X1}}" y1="{{n .Y1}}" x2="{{n .X2}}" y2="{{n .Y2}}" class="{{.Class}}">{{with .Title}}<title>{{.}}</title>{{end}}</line>
{{- else if eq .Tag "circle"}}<circle cx="{{n .X}}" cy="{{n .Y}}" r="{{n .R}}" class="{{.Class}}">{{with .Title}}<title>{{.}}</title>{{end}}</circle>
{{- else if eq .Tag "polygon"}}<polygon points="{{.Points}}" class="{{.Class}}">{{with .Title}}<title>{{.}}</title>{{end}}</polygon>
{{- else if eq .Tag "text"}}<text x="{{n .X}}" y="{{n .Y}}" class="{{.Class}}">{{.Text}}{{with .Title}}<title>{{.}}</title>{{end}}</text>
{{- end}}
{{- end}}`))
