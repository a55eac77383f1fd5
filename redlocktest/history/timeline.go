package history

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
//	p, err := history.TimelineFile(filepath.Join(dir, t.Name()+".html"), t.Name(), events, rep)
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
	for _, h := range holds {
		if h.acq.Shared {
			p.Legend = append(p.Legend, legendItem{[]shape{{Tag: "rect", Class: "hold c0 shared", X: 2, Y: 3, W: 26, H: 11}},
				"shared hold (a reader): readers may overlap each other, never an exclusive hold"})
			break
		}
	}
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

// timelineHTML is the page: its HTML, CSS and script, around the SVG.
//
//go:embed timeline.html.tmpl
var timelineHTML string

var timelineTemplate = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"n": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
}).Parse(timelineHTML))
