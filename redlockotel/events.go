package redlockotel

import (
	"context"
	"errors"

	"github.com/redlock-go/redlock"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// One method per redlock.EventKind: the spans, histograms and gauges each event updates.

func (o *Observer) acquired(ctx context.Context, e redlock.Event) {
	outcome := acquireOutcome(e.Err)
	attrs := o.metricAttrs(e, outcome)
	o.acquireDuration.Record(ctx, e.End.Sub(e.Start).Seconds(), attrs)
	o.acquireAttempts.Record(ctx, int64(e.Attempts), attrs)
	s := o.span(ctx, nil, "redlock.acquire", e, keyAttempts.Int(e.Attempts), keyOutcome.String(outcome))
	if e.Err != nil || e.Token == "" {
		return
	}
	o.heldNow.Add(ctx, 1, o.gaugeAttrs(e))
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.held) >= o.cfg.maxHeld {
		o.untracked.Add(ctx, 1, attrs)
		return
	}
	_, hs := o.tracer.Start(trace.ContextWithSpan(ctx, s), "redlock.hold", trace.WithTimestamp(e.End),
		trace.WithAttributes(o.spanAttrs(e)...))
	o.held[holdKey(e)] = hold{start: e.End, span: hs}
}

// acquireOutcome classifies an Acquire's error. The caller's context comes
// first: a wait cut short on a busy lock is canceled, not held.
func acquireOutcome(err error) string {
	switch {
	case err == nil:
		return outcomeAcquired
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	case errors.Is(err, redlock.ErrHeld):
		return outcomeHeld
	case errors.Is(err, redlock.ErrNotAcquired):
		return outcomeNotAcquired
	}
	return outcomeError
}

func (o *Observer) extended(ctx context.Context, e redlock.Event) {
	outcome := extendOutcome(e)
	o.extends.Add(ctx, 1, o.metricAttrs(e, outcome, keyAuto.Bool(e.Auto)))
	if e.Auto && e.Err == nil {
		return // the watchdog's routine rounds: counted, not traced
	}
	o.mu.Lock()
	h, ok := o.held[holdKey(e)]
	o.mu.Unlock()
	if e.Auto && ok {
		h.span.AddEvent("redlock.extend.failed", trace.WithTimestamp(e.End), trace.WithAttributes(
			keyOutcome.String(outcome), attribute.String("exception.message", e.Err.Error())))
		return
	}
	o.span(ctx, h.span, "redlock.extend", e, keyAuto.Bool(e.Auto), keyOutcome.String(outcome))
}

// extendOutcome classifies an extend round. A failed Extend call always
// ends the lock (its loss follows); a failed watchdog round ends it only if
// the lock had already ended (Until is zero), otherwise the watchdog retries
// while the lease lasts.
func extendOutcome(e redlock.Event) string {
	switch {
	case e.Err == nil:
		return outcomeExtended
	case !e.Auto || e.Until.IsZero():
		return outcomeLost
	}
	return outcomeFailed
}

func (o *Observer) released(ctx context.Context, e redlock.Event) {
	outcome := outcomeReleased
	switch {
	case errors.Is(e.Err, redlock.ErrLost):
		outcome = outcomeLost
	case e.Err != nil:
		outcome = outcomeError
	}
	o.releases.Add(ctx, 1, o.metricAttrs(e, outcome))
	if outcome != outcomeLost {
		// A lost lock left the gauge at its loss (EventLost comes first).
		o.heldNow.Add(ctx, -1, o.gaugeAttrs(e))
	}
	h, ok := o.take(holdKey(e))
	o.span(ctx, h.span, "redlock.release", e, keyOutcome.String(outcome))
	if ok {
		o.endHold(ctx, e, h, outcomeReleased)
	}
}

func (o *Observer) lost(ctx context.Context, e redlock.Event) {
	o.losses.Add(ctx, 1, o.metricAttrs(e, outcomeLost))
	o.heldNow.Add(ctx, -1, o.gaugeAttrs(e))
	h, ok := o.take(holdKey(e))
	if !ok {
		return
	}
	var msg string
	if e.Err != nil {
		msg = e.Err.Error()
	} else {
		msg = redlock.ErrLost.Error()
	}
	h.span.AddEvent("redlock.lost", trace.WithTimestamp(e.End),
		trace.WithAttributes(attribute.String("exception.message", msg)))
	h.span.SetStatus(codes.Error, msg)
	o.endHold(ctx, e, h, outcomeLost)
}

// waited counts a call that started or stopped waiting in redlock.waiting.
func (o *Observer) waited(ctx context.Context, e redlock.Event) {
	d := int64(-1)
	if e.Waiting {
		d = 1
	}
	o.waitingNow.Add(ctx, d, o.gaugeAttrs(e))
}
