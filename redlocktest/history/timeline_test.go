package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	rt "github.com/redlock-go/redlock/redlocktest/history"
)

// keepTimeline writes the page to $REDLOCK_TIMELINE/name.html when that
// variable names a directory, so a person can look at it.
func keepTimeline(tb testing.TB, name string, events []rt.Event, rep *rt.Report) {
	tb.Helper()
	dir := os.Getenv("REDLOCK_TIMELINE")
	if dir == "" {
		return
	}
	path, err := rt.TimelineFile(filepath.Join(dir, name+".html"), name, events, rep)
	if err != nil {
		tb.Fatalf("TimelineFile(%s) = %v", name, err)
	}
	tb.Logf("timeline: %s", path)
}

func renderTimeline(tb testing.TB, title string, events []rt.Event, rep *rt.Report) string {
	tb.Helper()
	var b bytes.Buffer
	if err := rt.WriteTimeline(&b, title, events, rep); err != nil {
		tb.Fatalf("WriteTimeline(%s) = %v; want nil", title, err)
	}
	page := b.String()
	// Self-contained, and every template value escaped in its context
	// (html/template writes ZgotmplZ where it refused a value).
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url(", "ZgotmplZ"} {
		if strings.Contains(page, bad) {
			tb.Errorf("WriteTimeline(%s) contains %q; want a self-contained page without it", title, bad)
		}
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		tb.Errorf("WriteTimeline(%s) is not a whole HTML page:\n%.300s", title, page)
	}
	return page
}

// chart returns the main SVG of a timeline page, without the legend.
func chart(tb testing.TB, page string) string {
	tb.Helper()
	_, svg, ok := strings.Cut(page, `<svg xmlns="http://www.w3.org/2000/svg"`)
	if !ok {
		tb.Fatalf("WriteTimeline wrote no chart:\n%.300s", page)
	}
	svg, _, _ = strings.Cut(svg, "</svg>")
	return svg
}

func TestTimelineDraws(t *testing.T) {
	c5 := evAcquire("c5", "t5", 5, 300, 320, 420)
	events := cleanWith(nil, c5, evFault(rt.Fault, 1, "c3", "down", 220), evFault(rt.Heal, 1, "c3", "down", 260))
	rep := rt.Check(events, &rt.CheckOptions{Counters: cleanCounters()})
	page := renderTimeline(t, "overlap", events, rep)
	svg := chart(t, page)
	keepTimeline(t, "TestTimelineDraws", events, rep)

	tests := []struct {
		what string
		re   string
		want int
	}{
		{"client lanes", `class="lane-name">c\d<`, 5},
		{"node lanes", `class="lane-name">node \d<`, 2},
		{"hold bars", `<rect [^>]*class="hold c0[ "]`, 5},
		{"bars outlined for the overlap", `<rect [^>]*class="hold c0 viol"`, 2},
		{"overlap shading, one per lane", `class="ovl"`, 2},
		{"fence labels", `class="fence">[1-5]<`, 5},
		{"extend ticks", `class="ext"`, 1},
		{"failed extend ticks", `class="ext-fail"`, 1},
		{"loss marks", `<polygon [^>]*class="lost"`, 1},
		{"accepted writes", `<circle [^>]*class="w-ok"`, 4},
		{"rejected writes", `<circle [^>]*class="w-rej"`, 1},
		{"node fault spans", `<rect [^>]*class="f-down"`, 2},
		{"client fault spans", `<rect [^>]*class="f-down cf"`, 1},
		{"majority-gone lines", `<line [^>]*class="mg"`, 1},
		{"write tooltips", `<title>c2 wrote ctr: accepted, fence 2, seq 3, value 3`, 1},
	}
	for _, tt := range tests {
		if got := len(regexp.MustCompile(tt.re).FindAllString(svg, -1)); got != tt.want {
			t.Errorf("WriteTimeline(overlap) has %d %s (%s); want %d", got, tt.what, tt.re, tt.want)
		}
	}
	if !strings.Contains(svg, "axis\">0<") || !strings.Contains(svg, "time (ms)") {
		t.Errorf("WriteTimeline(overlap) has no time axis in ms starting at 0")
	}
	if got := strings.Count(page, `<td class="kind">overlap</td>`); got != 1 {
		t.Errorf("WriteTimeline(overlap) lists %d overlaps under the chart; want 1", got)
	}

	// The clean history draws no violation.
	page = renderTimeline(t, "clean", cleanHistory(), nil)
	clean := chart(t, page) + page[strings.Index(page, "</svg>\n<h2"):]
	for _, bad := range []string{" viol", `class="ovl"`, `class="kind"`} {
		if strings.Contains(clean, bad) {
			t.Errorf("WriteTimeline(clean history) contains %q; want no violation drawn", bad)
		}
	}
}

func TestTimelineEscapes(t *testing.T) {
	evil := `<script>alert("x")</script>`
	events := []rt.Event{
		{Kind: rt.Acquire, Client: evil, Lock: "L&<", Token: `t"1`, Fence: 1, Start: tms(1), At: tms(2), Until: tms(50)},
		{Kind: rt.Fault, Node: 0, Fault: `</title><b>"kill"`, Detail: `</title><b>"kill"`, At: tms(3)},
		{Kind: rt.Heal, Node: 0, Fault: `</title><b>"kill"`, Detail: `</title><b>"kill"`, At: tms(9)},
		{Kind: rt.Write, Client: evil, Lock: "L&<", Fence: 1, At: tms(4), Accepted: true, Seq: 1, Detail: `]]><x>`},
	}
	page := renderTimeline(t, evil, events, nil)
	for _, raw := range []string{evil, `</title><b>`, `L&<`, `]]><x>`} {
		if strings.Contains(page, raw) {
			t.Errorf("WriteTimeline(user text %q) wrote it unescaped", raw)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Errorf("WriteTimeline(client %q) does not show the name escaped", evil)
	}
}

func TestTimelineEmpty(t *testing.T) {
	page := renderTimeline(t, "nothing", nil, nil)
	if !strings.Contains(page, "No events") {
		t.Errorf("WriteTimeline(no events) = %.200q; want it to say there are no events", page)
	}
}

// soakHistory makes a history like a 10-client, 2-minute soak: handoffs of
// one lock, increments of a fenced counter, extends, faults on 5 nodes, and
// a few violations.
func soakHistory(seed uint64) ([]rt.Event, map[string]int64) {
	rnd := rand.New(rand.NewPCG(seed, 1))
	const clients, nodes = 10, 5
	end := 2 * time.Minute
	ttl := 500 * time.Millisecond
	var events []rt.Event
	var fence uint64
	var seq int64
	t := 10 * time.Millisecond
	for i := 0; t < end; i++ {
		c := fmt.Sprintf("client-%d", rnd.IntN(clients)+1)
		tok := fmt.Sprintf("tok%d", i)
		fence++
		start := t - time.Duration(rnd.IntN(200))*time.Millisecond
		at := t + time.Duration(rnd.IntN(5))*time.Millisecond
		until := at + ttl - 20*time.Millisecond
		events = append(events, rt.Event{Kind: rt.Acquire, Client: c, Lock: "orders", Token: tok, Fence: fence, Start: max(start, 0), At: at, Until: until})
		if rnd.IntN(3) == 0 { // another client gave up waiting
			o := fmt.Sprintf("client-%d", rnd.IntN(clients)+1)
			events = append(events, rt.Event{Kind: rt.AcquireFail, Client: o, Lock: "orders", Start: max(start-100*time.Millisecond, 0), At: at, Detail: "redlock: lock not acquired: context deadline exceeded"})
		}
		w := at + time.Duration(rnd.IntN(20)+2)*time.Millisecond
		for range rnd.IntN(4) + 2 {
			seq++
			events = append(events, rt.Event{Kind: rt.Write, Client: c, Lock: "counter", Token: tok, Fence: fence, Start: w - 2*time.Millisecond, At: w, Accepted: true, Seq: seq, Value: seq})
			w += time.Duration(rnd.IntN(20)+3) * time.Millisecond
		}
		hold := w - at + time.Duration(rnd.IntN(30))*time.Millisecond
		if rnd.IntN(4) == 0 {
			ext := at + 300*time.Millisecond
			events = append(events, rt.Event{Kind: rt.Extend, Client: c, Lock: "orders", Token: tok, Start: ext - 3*time.Millisecond, At: ext, Until: ext + ttl - 20*time.Millisecond})
			hold = 400 * time.Millisecond
		}
		switch {
		case i == 300: // lost its majority: told in time
			events = append(events, rt.Event{Kind: rt.MajorityGone, Lock: "orders", At: at + 50*time.Millisecond},
				rt.Event{Kind: rt.Lost, Client: c, Lock: "orders", Token: tok, At: until + 3*time.Millisecond})
			t = until + 10*time.Millisecond
			continue
		case i == 500: // a pause: a second holder overlaps, its write is stale
			events = append(events, rt.Event{Kind: rt.Fault, Node: -1, Client: c, Fault: rt.FaultProcessPause, At: at + 30*time.Millisecond},
				rt.Event{Kind: rt.Heal, Node: -1, Client: c, Fault: rt.FaultProcessPause, At: until + 200*time.Millisecond},
				rt.Event{Kind: rt.Release, Client: c, Lock: "orders", Token: tok, At: until + 210*time.Millisecond})
			seq++
			events = append(events, rt.Event{Kind: rt.Write, Client: c, Lock: "counter", Token: tok, Fence: fence, Start: until + 200*time.Millisecond, At: until + 205*time.Millisecond, Accepted: true, Seq: seq + 1, Value: seq + 1})
			t = at + 100*time.Millisecond
			continue
		case i == 501: // the write the stale one overtakes in store order
			events = append(events, rt.Event{Kind: rt.Release, Client: c, Lock: "orders", Token: tok, At: at + hold})
			t = at + hold + time.Duration(rnd.IntN(10))*time.Millisecond
			seq++
			continue
		}
		events = append(events, rt.Event{Kind: rt.Release, Client: c, Lock: "orders", Token: tok, At: at + hold})
		t = at + hold + time.Duration(rnd.IntN(10))*time.Millisecond
	}
	faults := []struct {
		node     int
		kind     rt.FaultKind
		detail   string
		from, to time.Duration
	}{
		{0, rt.FaultKill, "", 5 * time.Second, 9 * time.Second},
		{1, rt.FaultPause, "", 20 * time.Second, 21500 * time.Millisecond},
		{2, rt.FaultLatency, "300ms", 31 * time.Second, 40 * time.Second},
		{3, rt.FaultAmnesia, "", 45 * time.Second, 45200 * time.Millisecond},
		{4, rt.FaultClockJump, "", 60 * time.Second, 60 * time.Second},
		{0, rt.FaultBlackhole, "", 70 * time.Second, 95 * time.Second},
		{1, rt.FaultDown, "", 72 * time.Second, 80 * time.Second},
		{2, rt.FaultPause, "", 110 * time.Second, 130 * time.Second}, // healed after the end
	}
	for _, f := range faults {
		events = append(events, rt.Event{Kind: rt.Fault, Node: f.node, Fault: f.kind, Detail: f.detail, At: f.from})
		if f.to < end {
			events = append(events, rt.Event{Kind: rt.Heal, Node: f.node, Fault: f.kind, Detail: f.detail, At: f.to})
		}
	}
	var accepted int64
	for _, e := range events {
		if e.Kind == rt.Write && e.Accepted {
			accepted++
		}
	}
	return events, map[string]int64{"counter": accepted}
}

func TestTimelineSoak(t *testing.T) {
	events, counters := soakHistory(1)
	rep := rt.Check(events, &rt.CheckOptions{Counters: counters})
	if len(events) < 4000 || len(rep.Overlaps) == 0 || len(rep.StaleWrites) != 1 {
		t.Fatalf("soakHistory(1): %d events, %s; want about 5000 with overlaps and one stale write", len(events), rep)
	}

	start := time.Now()
	page := renderTimeline(t, "soak", events, rep)
	svg := chart(t, page)
	t.Logf("WriteTimeline(%d events) took %v, %d bytes", len(events), time.Since(start), len(page))
	keepTimeline(t, "TestTimelineSoak", events, rep)

	if max := 3 << 20; len(page) > max {
		t.Errorf("WriteTimeline(soak) wrote %d bytes; want at most %d", len(page), max)
	}
	m := regexp.MustCompile(`<svg xmlns="http://www.w3.org/2000/svg" width="([0-9.]+)" height="([0-9.]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("WriteTimeline(soak) has no chart")
	}
	if m[1] != "1600.0" {
		t.Errorf("WriteTimeline(soak) chart width = %s; want 1600.0", m[1])
	}
	// A 2-minute run wraps onto 4 rows of 30s, each with its own axis.
	if n := strings.Count(svg, "time (ms)"); n != 4 {
		t.Errorf("WriteTimeline(2-minute soak) has %d rows; want 4", n)
	}
	// Every shape inside the chart.
	for _, a := range regexp.MustCompile(` (?:x|x1|x2|cx)="(-?[0-9.]+)"`).FindAllStringSubmatch(svg, -1) {
		if a[1][0] == '-' || len(a[1]) > 6 {
			t.Fatalf("WriteTimeline(soak) draws at x=%s; want 0..1600", a[1])
		}
	}
}

func TestTimelineFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "run.html")
	got, err := rt.TimelineFile(path, "run", cleanHistory(), nil)
	if err != nil || got != path {
		t.Fatalf("TimelineFile(%s) = %q, %v; want %q, nil", path, got, err, path)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("</html>")) {
		t.Errorf("TimelineFile(%s) wrote %d bytes (%v); want a whole page", path, len(data), err)
	}

	// A parent that is a file cannot be created.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = rt.TimelineFile(filepath.Join(blocker, "run.html"), "run", cleanHistory(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "redlocktest:") {
		t.Errorf("TimelineFile(under a file) = %v; want a redlocktest: error", err)
	}

	errBroken := errors.New("pipe closed")
	if err := rt.WriteTimeline(failingWriter{errBroken}, "run", cleanHistory(), nil); !errors.Is(err, errBroken) {
		t.Errorf("WriteTimeline(failing writer) = %v; want an error wrapping %v", err, errBroken)
	}
}
