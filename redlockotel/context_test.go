package redlockotel

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// caller starts a span of the caller's own, as an instrumented program
// would around its call to Acquire, Extend or Release.
func caller(t *testing.T, h *harness, name string) (context.Context, trace.Span) {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("app").Start(context.Background(), name)
}

// spanNamed returns the one ended span called name.
func (h *harness) spanNamed(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q; want 1", len(found), name)
	}
	return found[0]
}

// TestOTelSpansJoinCallersTrace: the spans of Acquire, Extend and Release
// are children of the caller's span, the one in the context the observer
// receives; the hold span stays the acquire span's child, and an Extend or
// Release under a caller's span links to it. Without a caller's span they
// are the hold's children, as before.
func TestOTelSpansJoinCallersTrace(t *testing.T) {
	h := newHarness(t)
	e := redlock.Event{Name: "jobs", Token: "tok", Fence: 3}
	ev := func(k redlock.EventKind, start, end time.Duration) redlock.Event {
		e := e
		e.Kind, e.Start, e.End, e.Attempts = k, at(start), at(end), 1
		return e
	}

	actx, acaller := caller(t, h, "handle-job")
	h.obs.Observe(actx, ev(redlock.EventAcquire, 0, 10*ms))
	ectx, ecaller := caller(t, h, "checkpoint")
	h.obs.Observe(ectx, ev(redlock.EventExtend, 100*ms, 110*ms))
	rctx, rcaller := caller(t, h, "finish-job")
	h.obs.Observe(rctx, ev(redlock.EventRelease, 200*ms, 210*ms))
	acaller.End()
	ecaller.End()
	rcaller.End()

	acquire, hold := h.spanNamed(t, "redlock.acquire"), h.spanNamed(t, "redlock.hold")
	extend, release := h.spanNamed(t, "redlock.extend"), h.spanNamed(t, "redlock.release")
	for _, c := range []struct {
		span   sdktrace.ReadOnlySpan
		parent trace.SpanContext
		what   string
	}{
		{acquire, acaller.SpanContext(), "the Acquire caller's span"},
		{hold, acquire.SpanContext(), "the acquire span"},
		{extend, ecaller.SpanContext(), "the Extend caller's span"},
		{release, rcaller.SpanContext(), "the Release caller's span"},
	} {
		if p := c.span.Parent(); p.SpanID() != c.parent.SpanID() || p.TraceID() != c.parent.TraceID() {
			t.Errorf("%s: parent %v/%v; want %s, %v/%v", c.span.Name(), p.TraceID(), p.SpanID(), c.what, c.parent.TraceID(), c.parent.SpanID())
		}
	}
	for _, s := range []sdktrace.ReadOnlySpan{extend, release} {
		if l := s.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != hold.SpanContext().SpanID() {
			t.Errorf("%s: links %v; want one, to the hold span", s.Name(), l)
		}
	}

	// No span in the context: the lock's own spans, as before.
	h2 := newHarness(t)
	h2.obs.Observe(context.Background(), ev(redlock.EventAcquire, 0, 10*ms))
	h2.obs.Observe(context.Background(), ev(redlock.EventRelease, 200*ms, 210*ms))
	acquire2, hold2, release2 := h2.spanNamed(t, "redlock.acquire"), h2.spanNamed(t, "redlock.hold"), h2.spanNamed(t, "redlock.release")
	if acquire2.Parent().IsValid() {
		t.Errorf("acquire without a caller's span has parent %v; want a root", acquire2.Parent())
	}
	if release2.Parent().SpanID() != hold2.SpanContext().SpanID() || len(release2.Links()) != 0 {
		t.Errorf("release without a caller's span: parent %v, links %v; want the hold span, no link", release2.Parent(), release2.Links())
	}
}

// TestOTelGauges: redlock.held and redlock.waiting count per lock name
// (WithLockName) what is held and waiting now, and come back to 0: a
// release or a loss ends a hold (a release after the loss does not count it
// twice), a wait ends with its call, won or not, and a failed Acquire never
// counts as held.
func TestOTelGauges(t *testing.T) {
	h := newHarness(t, WithLockName())
	ctx := context.Background()
	gauge := func(name, lock string) int64 {
		t.Helper()
		return int64(h.metrics(t)[name]["redlock.lock.name="+lock].Sum)
	}
	check := func(step string, held, waiting map[string]int64) {
		t.Helper()
		for lock, want := range held {
			if got := gauge("redlock.held", lock); got != want {
				t.Errorf("%s: redlock.held{%s} = %d; want %d", step, lock, got, want)
			}
		}
		for lock, want := range waiting {
			if got := gauge("redlock.waiting", lock); got != want {
				t.Errorf("%s: redlock.waiting{%s} = %d; want %d", step, lock, got, want)
			}
		}
	}
	a := redlock.Event{Name: "a", Token: "tok-a", Start: at(0), End: at(ms), Attempts: 1}
	b := redlock.Event{Name: "b", Token: "tok-b", Start: at(0), End: at(ms), Attempts: 1}
	with := func(e redlock.Event, k redlock.EventKind, f func(*redlock.Event)) redlock.Event {
		e.Kind = k
		if f != nil {
			f(&e)
		}
		return e
	}

	h.obs.Observe(ctx, with(a, redlock.EventAcquire, nil))
	h.obs.Observe(ctx, with(b, redlock.EventAcquire, nil))
	wait := redlock.Event{Kind: redlock.EventWait, Name: "a", Start: at(2 * ms), Waiting: true}
	h.obs.Observe(ctx, wait) // one waits for a, one gives up on b
	h.obs.Observe(ctx, redlock.Event{Kind: redlock.EventWait, Name: "b", Start: at(2 * ms), Waiting: true})
	check("held and waited for", map[string]int64{"a": 1, "b": 1}, map[string]int64{"a": 1, "b": 1})

	failed := errHeld
	h.obs.Observe(ctx, redlock.Event{Kind: redlock.EventWait, Name: "b", Start: at(2 * ms), End: at(9 * ms), Err: failed})
	h.obs.Observe(ctx, redlock.Event{Kind: redlock.EventAcquire, Name: "b", Start: at(2 * ms), End: at(9 * ms), Attempts: 3, Err: failed})
	h.obs.Observe(ctx, with(b, redlock.EventLost, func(e *redlock.Event) { e.Err = errLostExt }))
	h.obs.Observe(ctx, with(b, redlock.EventRelease, func(e *redlock.Event) { e.Err = errLostExt }))
	check("b lost, then released; its waiter gave up", map[string]int64{"a": 1, "b": 0}, map[string]int64{"a": 1, "b": 0})

	h.obs.Observe(ctx, with(a, redlock.EventRelease, nil))
	wait.Waiting, wait.End = false, at(20*ms)
	h.obs.Observe(ctx, wait)
	a2 := a
	a2.Token = "tok-a2"
	h.obs.Observe(ctx, with(a2, redlock.EventAcquire, nil))
	check("a released to its waiter", map[string]int64{"a": 1}, map[string]int64{"a": 0})
	h.obs.Observe(ctx, with(a2, redlock.EventRelease, nil))
	check("all released", map[string]int64{"a": 0, "b": 0}, map[string]int64{"a": 0, "b": 0})
}
