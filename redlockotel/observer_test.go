package redlockotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// harness is an Observer over an SDK meter provider read by hand and a
// tracer provider that records every ended span.
type harness struct {
	obs    *Observer
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newHarness(t testing.TB, opts ...Option) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := New(append([]Option{WithMeterProvider(mp), WithTracerProvider(tp)}, opts...)...)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	h.obs = obs
	return h
}

// point is one series of an instrument: a histogram's count and sum, or a
// counter's value (as both).
type point struct {
	Count uint64
	Sum   float64
}

// metrics collects every instrument's series, by instrument name and then by
// the series' attributes encoded as "k=v,k=v" (sorted by key; "" for none).
func (h *harness) metrics(t testing.TB) map[string]map[string]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	out := map[string]map[string]point{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q; want %q", sm.Scope.Name, ScopeName)
		}
		for _, m := range sm.Metrics {
			series := map[string]point{}
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					series[enc(dp.Attributes)] = point{dp.Count, dp.Sum}
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					series[enc(dp.Attributes)] = point{dp.Count, float64(dp.Sum)}
				}
			case metricdata.Sum[int64]:
				if gauge := gauges[m.Name]; d.IsMonotonic == gauge {
					t.Errorf("%s: monotonic %v; want %v", m.Name, d.IsMonotonic, !gauge)
				}
				for _, dp := range d.DataPoints {
					series[enc(dp.Attributes)] = point{uint64(dp.Value), float64(dp.Value)}
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			out[m.Name] = series
		}
	}
	return out
}

// gauges are the instruments that go up and down (UpDownCounters); every
// other sum is a counter.
var gauges = map[string]bool{"redlock.held": true, "redlock.waiting": true}

func enc(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

var (
	errHeld     = fmt.Errorf("%w: node 0: %w", redlock.ErrNotAcquired, &redlock.HeldError{TTL: time.Second})
	errNoQuorum = fmt.Errorf("%w: node 0: connection refused", redlock.ErrNotAcquired)
	errCanceled = fmt.Errorf("%w: %w", errHeld, context.DeadlineExceeded)
	errLostExt  = fmt.Errorf("%w: extend \"jobs\": no quorum", redlock.ErrLost)
)

// lifecycle is the events of one lock's life that the metrics and span tests
// both read: lock "jobs" (token tok-a, fence 7) acquired on the second
// attempt, extended by the watchdog once and by hand once, one failed
// watchdog round, released; lock "jobs" (tok-b, fence 8) lost after a failed
// round and released afterwards; and four failed Acquire calls.
func lifecycle() []redlock.Event {
	a := redlock.Event{Name: "jobs", Token: "tok-a", Fence: 7}
	b := redlock.Event{Name: "jobs", Token: "tok-b", Fence: 8}
	ev := func(base redlock.Event, k redlock.EventKind, start, end time.Duration, f func(*redlock.Event)) redlock.Event {
		base.Kind, base.Start, base.End, base.Until = k, at(start), at(end), at(end+10*time.Second)
		if f != nil {
			f(&base)
		}
		return base
	}
	return []redlock.Event{
		ev(a, redlock.EventAcquire, 0, 30*ms, func(e *redlock.Event) { e.Attempts = 2 }),
		ev(a, redlock.EventExtend, 1000*ms, 1002*ms, func(e *redlock.Event) { e.Auto = true }),
		ev(a, redlock.EventExtend, 1100*ms, 1110*ms, func(e *redlock.Event) { e.Auto, e.Err = true, errNoQuorum }),
		ev(a, redlock.EventExtend, 1200*ms, 1203*ms, nil),
		ev(a, redlock.EventRelease, 2000*ms, 2030*ms, nil),

		ev(b, redlock.EventAcquire, 3000*ms, 3010*ms, func(e *redlock.Event) { e.Attempts = 1 }),
		ev(b, redlock.EventExtend, 4000*ms, 4020*ms, func(e *redlock.Event) { e.Auto, e.Err, e.Until = true, errLostExt, time.Time{} }),
		ev(b, redlock.EventLost, 4020*ms, 4020*ms, func(e *redlock.Event) { e.Err = errLostExt }),
		ev(b, redlock.EventRelease, 5000*ms, 5001*ms, func(e *redlock.Event) {
			e.Err, e.Until = fmt.Errorf("redlock: %q was lost before Release: %w", "jobs", errLostExt), time.Time{}
		}),

		ev(redlock.Event{Name: "jobs"}, redlock.EventAcquire, 6000*ms, 6500*ms, func(e *redlock.Event) { e.Attempts, e.Err, e.Until = 5, errHeld, time.Time{} }),
		ev(redlock.Event{Name: "jobs"}, redlock.EventAcquire, 7000*ms, 7100*ms, func(e *redlock.Event) { e.Attempts, e.Err, e.Until = 3, errNoQuorum, time.Time{} }),
		ev(redlock.Event{Name: "jobs"}, redlock.EventAcquire, 8000*ms, 9000*ms, func(e *redlock.Event) { e.Attempts, e.Err, e.Until = 4, errCanceled, time.Time{} }),
		ev(redlock.Event{Name: "jobs"}, redlock.EventAcquire, 9500*ms, 9501*ms, func(e *redlock.Event) {
			e.Attempts, e.Err, e.Until = 1, errors.New("redlock: bad counter"), time.Time{}
		}),
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestOTelMetrics(t *testing.T) {
	h := newHarness(t)
	for _, e := range lifecycle() {
		h.obs.Observe(context.Background(), e)
	}
	got := h.metrics(t)
	want := map[string]map[string]point{
		"redlock.acquire.duration": {
			"redlock.outcome=acquired":     {2, 0.040},
			"redlock.outcome=held":         {1, 0.5},
			"redlock.outcome=not_acquired": {1, 0.1},
			"redlock.outcome=canceled":     {1, 1},
			"redlock.outcome=error":        {1, 0.001},
		},
		"redlock.acquire.attempts": {
			"redlock.outcome=acquired":     {2, 3},
			"redlock.outcome=held":         {1, 5},
			"redlock.outcome=not_acquired": {1, 3},
			"redlock.outcome=canceled":     {1, 4},
			"redlock.outcome=error":        {1, 1},
		},
		"redlock.hold.duration": {
			"redlock.outcome=released": {1, 2.030 - 0.030}, // Acquire's return to Release's
			"redlock.outcome=lost":     {1, 4.020 - 3.010}, // Acquire's return to the loss
		},
		"redlock.extends": {
			"redlock.auto=true,redlock.outcome=extended":  {1, 1},
			"redlock.auto=true,redlock.outcome=failed":    {1, 1},
			"redlock.auto=false,redlock.outcome=extended": {1, 1},
			"redlock.auto=true,redlock.outcome=lost":      {1, 1},
		},
		"redlock.losses":   {"redlock.outcome=lost": {1, 1}},
		"redlock.releases": {"redlock.outcome=released": {1, 1}, "redlock.outcome=lost": {1, 1}},
		// Both locks ended: the lost one counted down once, at its loss.
		"redlock.held": {"": {0, 0}},
	}
	for name, series := range want {
		if len(got[name]) != len(series) {
			t.Errorf("%s has series %v; want %v", name, got[name], series)
		}
		for attrs, w := range series {
			g, ok := got[name][attrs]
			if !ok || g.Count != w.Count || !near(g.Sum, w.Sum) {
				t.Errorf("%s{%s} = %+v (present %v); want %+v", name, attrs, g, ok, w)
			}
		}
	}
	if s := got["redlock.holds.untracked"]; len(s) != 0 {
		t.Errorf("redlock.holds.untracked = %v; want no series", s)
	}
}

func TestOTelMetricsLockNameOptIn(t *testing.T) {
	for _, opt := range []bool{false, true} {
		var opts []Option
		if opt {
			opts = append(opts, WithLockName())
		}
		h := newHarness(t, opts...)
		for _, e := range lifecycle() {
			h.obs.Observe(context.Background(), e)
		}
		for name, series := range h.metrics(t) {
			for attrs := range series {
				if has := strings.Contains(attrs, "redlock.lock.name=jobs"); has != opt {
					t.Errorf("WithLockName %v: %s{%s} has the lock name: %v; want %v", opt, name, attrs, has, opt)
				}
			}
		}
	}
}

func TestOTelSpans(t *testing.T) {
	h := newHarness(t)
	events := lifecycle()
	for _, e := range events {
		h.obs.Observe(context.Background(), e)
	}
	spans := h.spans.Ended()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	// In the order they ended: a's acquire, its manual extend, its release
	// and hold; b's acquire, release (after the loss, so a root of its own)
	// is after its hold; the four failed acquires; the failed watchdog
	// rounds are events, not spans.
	wantNames := "redlock.acquire redlock.extend redlock.release redlock.hold " +
		"redlock.acquire redlock.hold redlock.release " +
		"redlock.acquire redlock.acquire redlock.acquire redlock.acquire"
	if got := strings.Join(names, " "); got != wantNames {
		t.Fatalf("spans ended:\n%s\nwant\n%s", got, wantNames)
	}
	acqA, extA, relA, holdA := spans[0], spans[1], spans[2], spans[3]
	acqB, holdB, relB := spans[4], spans[5], spans[6]
	held := spans[7]

	// Times are the events' own.
	times := []struct {
		s          sdktrace.ReadOnlySpan
		start, end time.Time
	}{
		{acqA, events[0].Start, events[0].End},
		{extA, events[3].Start, events[3].End},
		{relA, events[4].Start, events[4].End},
		{holdA, events[0].End, events[4].End},
		{holdB, events[5].End, events[7].End},
	}
	for _, c := range times {
		if !c.s.StartTime().Equal(c.start) || !c.s.EndTime().Equal(c.end) {
			t.Errorf("%s: %v..%v; want %v..%v", c.s.Name(), c.s.StartTime(), c.s.EndTime(), c.start, c.end)
		}
	}

	// One trace per lock: hold under acquire, extend and release under hold.
	parent := []struct{ child, parent sdktrace.ReadOnlySpan }{
		{holdA, acqA}, {extA, holdA}, {relA, holdA}, {holdB, acqB},
	}
	for _, c := range parent {
		if c.child.Parent().SpanID() != c.parent.SpanContext().SpanID() || c.child.SpanContext().TraceID() != c.parent.SpanContext().TraceID() {
			t.Errorf("%s's parent is %v; want %s %v", c.child.Name(), c.child.Parent().SpanID(), c.parent.Name(), c.parent.SpanContext().SpanID())
		}
	}
	for _, s := range []sdktrace.ReadOnlySpan{acqA, acqB, relB, held} {
		if s.Parent().IsValid() {
			t.Errorf("%s has a parent; want a root", s.Name())
		}
	}

	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	if a := attrs(acqA); a[keyAttempts].AsInt64() != 2 || a[keyFence].AsInt64() != 7 || a[keyName].AsString() != "jobs" || a[keyOutcome].AsString() != "acquired" {
		t.Errorf("acquire span attributes %v; want attempts 2, fence 7, name jobs, outcome acquired", a)
	}
	if acqA.Status().Code != codes.Unset || holdA.Status().Code != codes.Unset || relA.Status().Code != codes.Unset {
		t.Errorf("statuses of a's spans %v %v %v; want unset", acqA.Status(), holdA.Status(), relA.Status())
	}
	if a := attrs(holdA); a[keyOutcome].AsString() != "released" {
		t.Errorf("a's hold outcome %v; want released", a[keyOutcome])
	}

	// The failed watchdog round is an event on a's hold span.
	if ev := holdA.Events(); len(ev) != 1 || ev[0].Name != "redlock.extend.failed" || !ev[0].Time.Equal(events[2].End) {
		t.Errorf("a's hold events %+v; want one redlock.extend.failed at %v", ev, events[2].End)
	}

	// b's loss: the failed round and the loss on its hold span, status Error.
	if ev := holdB.Events(); len(ev) != 2 || ev[0].Name != "redlock.extend.failed" || ev[1].Name != "redlock.lost" || !ev[1].Time.Equal(events[7].End) {
		t.Errorf("b's hold events %+v; want redlock.extend.failed then redlock.lost at %v", ev, events[7].End)
	}
	if st := holdB.Status(); st.Code != codes.Error || !strings.Contains(st.Description, "lock lost") {
		t.Errorf("b's hold status %+v; want Error mentioning the loss", st)
	}
	if a := attrs(holdB); a[keyOutcome].AsString() != "lost" {
		t.Errorf("b's hold outcome %v; want lost", a[keyOutcome])
	}
	if st := relB.Status(); st.Code != codes.Error {
		t.Errorf("release after loss: status %+v; want Error", st)
	}

	// A failed acquire: status Error, the error recorded, no hold.
	if st := held.Status(); st.Code != codes.Error || st.Description != errHeld.Error() {
		t.Errorf("failed acquire status %+v; want Error %q", st, errHeld)
	}
	if a := attrs(held); a[keyOutcome].AsString() != "held" || a[keyAttempts].AsInt64() != 5 {
		t.Errorf("failed acquire attributes %v; want outcome held, attempts 5", a)
	}
	if ev := held.Events(); len(ev) != 1 || ev[0].Name != "exception" {
		t.Errorf("failed acquire events %+v; want the exception", ev)
	}
}

// everything is every string the observer exported: metric attributes,
// span names, attributes, event attributes and statuses.
func (h *harness) everything(t testing.TB) string {
	var b strings.Builder
	for name, series := range h.metrics(t) {
		for attrs := range series {
			fmt.Fprintf(&b, "%s{%s}\n", name, attrs)
		}
	}
	for _, s := range h.spans.Ended() {
		fmt.Fprintf(&b, "%s %s\n", s.Name(), s.Status().Description)
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, "%s=%s\n", kv.Key, kv.Value.String())
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				fmt.Fprintf(&b, "%s %s=%s\n", ev.Name, kv.Key, kv.Value.String())
			}
		}
	}
	return b.String()
}

func TestOTelTokenNeverRecorded(t *testing.T) {
	for _, opt := range []bool{false, true} {
		opts := []Option{WithLockName()}
		if opt {
			opts = append(opts, WithOwnerID())
		}
		h := newHarness(t, opts...)
		for _, e := range lifecycle() {
			h.obs.Observe(context.Background(), e)
		}
		all := h.everything(t)
		for _, tok := range []string{"tok-a", "tok-b"} {
			if strings.Contains(all, tok) {
				t.Errorf("WithOwnerID %v: token %q exported:\n%s", opt, tok, all)
			}
			// Control: the scan sees attributes; the owner id is there
			// exactly when asked for.
			if has := strings.Contains(all, "redlock.owner_id="+guard.OwnerID(tok)); has != opt {
				t.Errorf("WithOwnerID %v: owner id of %q exported: %v", opt, tok, has)
			}
		}
	}
}

// cycle is one acquired lock's acquire and, if lose, its loss and a late
// release, else its release.
func cycle(obs *Observer, token string, lose bool) {
	e := redlock.Event{Name: "n", Token: token, Fence: 1, Start: t0, End: t0.Add(ms), Until: t0.Add(time.Second), Attempts: 1}
	e.Kind = redlock.EventAcquire
	obs.Observe(context.Background(), e)
	if lose {
		e.Kind, e.Err = redlock.EventLost, redlock.ErrLost
		obs.Observe(context.Background(), e)
	}
	e.Kind = redlock.EventRelease
	obs.Observe(context.Background(), e)
}

func (o *Observer) tracked() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}

func TestOTelHoldMapBounded(t *testing.T) {
	h := newHarness(t, WithMaxHeld(3))
	acq := func(tok string) redlock.Event {
		return redlock.Event{Kind: redlock.EventAcquire, Name: "n", Token: tok, Start: t0, End: t0.Add(ms), Attempts: 1}
	}
	for i := range 5 {
		h.obs.Observe(context.Background(), acq(fmt.Sprint("held-", i)))
	}
	// Control: held locks are tracked, up to the bound.
	if n := h.obs.tracked(); n != 3 {
		t.Fatalf("tracking %d locks with 5 held and WithMaxHeld(3); want 3", n)
	}
	if p := h.metrics(t)["redlock.holds.untracked"]["redlock.outcome=acquired"]; p.Count != 2 {
		t.Errorf("redlock.holds.untracked = %d; want 2", p.Count)
	}
	for i := range 5 { // the untracked ones' releases are harmless
		e := acq(fmt.Sprint("held-", i))
		e.Kind = redlock.EventRelease
		h.obs.Observe(context.Background(), e)
	}
	for i := range 100 {
		cycle(h.obs, fmt.Sprint("tok-", i), i%2 == 0)
	}
	if n := h.obs.tracked(); n != 0 {
		t.Errorf("tracking %d locks after every lock was released or lost; want 0", n)
	}
	got := h.metrics(t)["redlock.hold.duration"]
	if r, l := got["redlock.outcome=released"].Count, got["redlock.outcome=lost"].Count; r != 3+50 || l != 50 {
		t.Errorf("hold durations: %d released, %d lost; want 53, 50 (a late release after a loss is not a second hold)", r, l)
	}
}

func TestOTelUntrackedSpans(t *testing.T) {
	h := newHarness(t, WithMaxHeld(1))
	tracked := redlock.Event{Kind: redlock.EventAcquire, Name: "n", Token: "tok-1", Start: t0, End: t0.Add(ms), Until: t0.Add(time.Second), Attempts: 1}
	untracked := tracked
	untracked.Token = "tok-2"
	h.obs.Observe(context.Background(), tracked)
	h.obs.Observe(context.Background(), untracked)
	for _, e := range []redlock.Event{tracked, untracked} {
		e.Kind, e.Auto, e.Err, e.Start, e.End = redlock.EventExtend, true, errNoQuorum, t0.Add(300*ms), t0.Add(400*ms)
		h.obs.Observe(context.Background(), e)
		e.Kind, e.Auto, e.Err, e.Until = redlock.EventLost, false, redlock.ErrLost, time.Time{}
		h.obs.Observe(context.Background(), e)
	}
	var got []string
	for _, s := range h.spans.Ended() {
		got = append(got, fmt.Sprintf("%s/%v/%d", s.Name(), s.Status().Code, len(s.Events())))
	}
	// The tracked lock's failed round and loss are events on its hold span;
	// the untracked one's round is a span of its own, with its error.
	want := "redlock.acquire/Unset/0 redlock.acquire/Unset/0 redlock.hold/Error/2 redlock.extend/Error/1"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("spans (name/status/events):\n%s\nwant\n%s", s, want)
	}
	if p := h.metrics(t)["redlock.losses"]["redlock.outcome=lost"]; p.Count != 2 {
		t.Errorf("losses %d; want 2 (the untracked lock's too)", p.Count)
	}
}

func TestOTelConcurrentObserve(t *testing.T) {
	h := newHarness(t)
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				cycle(h.obs, fmt.Sprintf("tok-%d-%d", w, i), i%4 == 0)
			}
		}()
	}
	wg.Wait()
	if n := h.obs.tracked(); n != 0 {
		t.Errorf("tracking %d locks after every lock ended; want 0", n)
	}
	m := h.metrics(t)
	total := uint64(workers * each)
	lost := total / 4
	if p := m["redlock.acquire.duration"]["redlock.outcome=acquired"]; p.Count != total {
		t.Errorf("acquires recorded %d; want %d", p.Count, total)
	}
	if p := m["redlock.losses"]["redlock.outcome=lost"]; p.Count != lost {
		t.Errorf("losses %d; want %d", p.Count, lost)
	}
	hd := m["redlock.hold.duration"]
	if r, l := hd["redlock.outcome=released"].Count, hd["redlock.outcome=lost"].Count; r != total-lost || l != lost {
		t.Errorf("hold durations %d released, %d lost; want %d, %d", r, l, total-lost, lost)
	}
	if n := len(h.spans.Ended()); n != int(total)*3 { // acquire, hold, release each
		t.Errorf("%d spans; want %d", n, total*3)
	}
}

func TestOTelAcquireOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "acquired"},
		{errHeld, "held"},
		{errNoQuorum, "not_acquired"},
		{errCanceled, "canceled"},
		{fmt.Errorf("%w: %w", errNoQuorum, context.Canceled), "canceled"},
		{redlock.ErrBadCounter, "error"},
	} {
		if got := acquireOutcome(c.err); got != c.want {
			t.Errorf("acquireOutcome(%v) = %q; want %q", c.err, got, c.want)
		}
	}
}

func TestOTelExtendOutcome(t *testing.T) {
	until := at(time.Second)
	for _, c := range []struct {
		auto  bool
		err   error
		until time.Time
		want  string
	}{
		{true, nil, until, "extended"},
		{false, nil, until, "extended"},
		{true, errNoQuorum, until, "failed"},    // the watchdog retries
		{true, errLostExt, time.Time{}, "lost"}, // the lock had ended
		{false, errNoQuorum, until, "lost"},     // a failed Extend call ends the lock
	} {
		e := redlock.Event{Kind: redlock.EventExtend, Auto: c.auto, Err: c.err, Until: c.until}
		if got := extendOutcome(e); got != c.want {
			t.Errorf("extendOutcome(auto %v, err %v, until %v) = %q; want %q", c.auto, c.err, c.until, got, c.want)
		}
	}
}

func TestOTelChain(t *testing.T) {
	if Chain() != nil || Chain(nil, nil) != nil {
		t.Errorf("Chain of no funcs is not nil")
	}
	var got []string
	rec := func(tag string) func(context.Context, redlock.Event) {
		return func(_ context.Context, e redlock.Event) { got = append(got, tag+":"+e.Kind.String()) }
	}
	fn := Chain(rec("a"), nil, rec("b"))
	fn(context.Background(), redlock.Event{Kind: redlock.EventRelease})
	if s := strings.Join(got, " "); s != "a:release b:release" {
		t.Errorf("Chain called %q; want %q", s, "a:release b:release")
	}
}

func TestOTelDefaultsToGlobalProviders(t *testing.T) {
	// The global providers are no-ops until set: New works and Observe
	// records nowhere without failing.
	obs, err := New()
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	cycle(obs, "tok", true)
	if n := obs.tracked(); n != 0 {
		t.Errorf("tracking %d locks; want 0", n)
	}
}
