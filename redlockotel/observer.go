package redlockotel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/redlock-go/redlock/redlockotel"

// Attribute keys.
const (
	keyName     = attribute.Key("redlock.lock.name")
	keyOutcome  = attribute.Key("redlock.outcome")
	keyAuto     = attribute.Key("redlock.auto")
	keyAttempts = attribute.Key("redlock.attempts")
	keyFence    = attribute.Key("redlock.fence")
	keyOwnerID  = attribute.Key("redlock.owner_id")
)

// Outcomes, the values of redlock.outcome.
const (
	outcomeAcquired    = "acquired"
	outcomeHeld        = "held"
	outcomeNotAcquired = "not_acquired"
	outcomeCanceled    = "canceled"
	outcomeError       = "error"
	outcomeExtended    = "extended"
	outcomeFailed      = "failed"
	outcomeLost        = "lost"
	outcomeReleased    = "released"
)

// Bucket boundaries in seconds: acquire waits from a millisecond round trip
// to a minute's queue, holds from milliseconds to an hour.
var (
	acquireBuckets  = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets     = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}
	attemptsBuckets = []float64{1, 2, 3, 5, 10, 20, 50, 100}
)

// Observer turns a client's [redlock.Event] values into metrics and spans.
// Make it with [New] and pass its Observe method as
// [redlock.Options].Observe. It is safe for concurrent use, and one Observer
// may serve several clients.
type Observer struct {
	cfg    config
	tracer trace.Tracer

	acquireDuration metric.Float64Histogram
	acquireAttempts metric.Int64Histogram
	holdDuration    metric.Float64Histogram
	extends         metric.Int64Counter
	losses          metric.Int64Counter
	releases        metric.Int64Counter
	untracked       metric.Int64Counter
	nodeDuration    metric.Float64Histogram
	nodeErrors      metric.Int64Counter
	heldNow         metric.Int64UpDownCounter
	waitingNow      metric.Int64UpDownCounter

	mu   sync.Mutex      // protects held
	held map[string]hold // the acquired locks being timed, by holdKey (kept in memory only, until release or loss)
}

// hold is an acquired lock being timed, until its release or loss.
type hold struct {
	start time.Time  // Acquire's return
	span  trace.Span // redlock.hold
}

// New returns an Observer that records to the providers the options name
// (default: the global ones). Its error is the meter's, if it refused an
// instrument.
func New(opts ...Option) (*Observer, error) {
	o := &Observer{cfg: newConfig(opts), held: make(map[string]hold)}
	o.tracer = o.cfg.tracers.Tracer(ScopeName)
	m := o.cfg.meters.Meter(ScopeName)
	var errs [11]error
	o.acquireDuration, errs[0] = m.Float64Histogram("redlock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of Acquire calls, from call to return."),
		metric.WithExplicitBucketBoundaries(acquireBuckets...))
	o.acquireAttempts, errs[1] = m.Int64Histogram("redlock.acquire.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made by an Acquire call."),
		metric.WithExplicitBucketBoundaries(attemptsBuckets...))
	o.holdDuration, errs[2] = m.Float64Histogram("redlock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a lock was held: from Acquire's return to its release or loss."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	o.extends, errs[3] = m.Int64Counter("redlock.extends", metric.WithUnit("{extend}"),
		metric.WithDescription("Extend rounds, by Extend or by the watchdog (redlock.auto)."))
	o.losses, errs[4] = m.Int64Counter("redlock.losses", metric.WithUnit("{loss}"),
		metric.WithDescription("Locks lost at their deadline or by a failed extend."))
	o.releases, errs[5] = m.Int64Counter("redlock.releases", metric.WithUnit("{release}"),
		metric.WithDescription("Release calls."))
	o.untracked, errs[6] = m.Int64Counter("redlock.holds.untracked", metric.WithUnit("{hold}"),
		metric.WithDescription("Acquired locks not timed because the observer's bound on timed locks was reached."))
	o.nodeDuration, errs[7] = m.Float64Histogram("redlock.node.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of one node's answer to one acquire, extend or release round trip, as the round saw it."),
		metric.WithExplicitBucketBoundaries(nodeBuckets...))
	o.nodeErrors, errs[8] = m.Int64Counter("redlock.node.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Round trips to a node that failed (an error, not a refusal)."))
	o.heldNow, errs[9] = m.Int64UpDownCounter("redlock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks held now: +1 when Acquire returns one, -1 at its release or loss."))
	o.waitingNow, errs[10] = m.Int64UpDownCounter("redlock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Acquire calls waiting now: +1 when a call starts waiting, -1 when it returns."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("redlock: redlockotel: creating instruments (check the meter provider): %w", err)
	}
	return o, nil
}

// Observe records e, caused by a call with context ctx: its spans are
// started from ctx, so they join the caller's trace. Pass it as
// [redlock.Options].Observe; see [Chain] to combine it with another
// observer. It does not block on I/O (the providers' exporters run on their
// own) and never keeps e.Token past the lock's release or loss.
func (o *Observer) Observe(ctx context.Context, e redlock.Event) {
	switch e.Kind {
	case redlock.EventAcquire:
		o.acquired(ctx, e)
	case redlock.EventExtend:
		o.extended(ctx, e)
	case redlock.EventRelease:
		o.released(ctx, e)
	case redlock.EventLost:
		o.lost(ctx, e)
	case redlock.EventNode:
		o.nodeAnswered(ctx, e)
	case redlock.EventWait:
		o.waited(ctx, e)
	}
}

// Chain returns an observe func that calls each non-nil fn in order, for
// [redlock.Options].Observe; nil if there is none.
func Chain(fns ...func(context.Context, redlock.Event)) func(context.Context, redlock.Event) {
	var live []func(context.Context, redlock.Event)
	for _, fn := range fns {
		if fn != nil {
			live = append(live, fn)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return func(ctx context.Context, e redlock.Event) {
		for _, fn := range live {
			fn(ctx, e)
		}
	}
}

// metricAttrs is outcome, plus the lock name if asked for.
func (o *Observer) metricAttrs(e redlock.Event, outcome string, more ...attribute.KeyValue) metric.MeasurementOption {
	kv := append([]attribute.KeyValue{keyOutcome.String(outcome)}, more...)
	if o.cfg.lockName {
		kv = append(kv, keyName.String(e.Name))
	}
	return metric.WithAttributes(kv...)
}

// spanAttrs are the attributes every span of e's lock carries.
func (o *Observer) spanAttrs(e redlock.Event) []attribute.KeyValue {
	kv := []attribute.KeyValue{keyName.String(e.Name)}
	if e.Fence != 0 {
		kv = append(kv, keyFence.Int64(int64(e.Fence)))
	}
	if o.cfg.ownerID && e.Token != "" {
		kv = append(kv, keyOwnerID.String(guard.OwnerID(e.Token)))
	}
	return kv
}

// span records one operation of e from e.Start to e.End. Its parent is the
// caller's span, the one in ctx; without one, hold (if not nil), the lock's
// hold span. A span under the caller's is linked to hold, so that the
// lock's life can still be followed from it.
func (o *Observer) span(ctx context.Context, hold trace.Span, name string, e redlock.Event, more ...attribute.KeyValue) trace.Span {
	opts := []trace.SpanStartOption{trace.WithTimestamp(e.Start), trace.WithAttributes(append(o.spanAttrs(e), more...)...)}
	if hold != nil {
		if caller := trace.SpanContextFromContext(ctx); !caller.IsValid() {
			ctx = trace.ContextWithSpan(ctx, hold)
		} else if hc := hold.SpanContext(); !hc.Equal(caller) {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: hc}))
		}
	}
	_, s := o.tracer.Start(ctx, name, opts...)
	setErr(s, e.Err)
	s.End(trace.WithTimestamp(e.End))
	return s
}

func setErr(s trace.Span, err error) {
	if err != nil {
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
}

// gaugeAttrs are the attributes of redlock.held and redlock.waiting: the
// lock name if asked for, and no outcome (a gauge counts what is, not how
// it ended).
func (o *Observer) gaugeAttrs(e redlock.Event) metric.MeasurementOption {
	if o.cfg.lockName {
		return metric.WithAttributes(keyName.String(e.Name))
	}
	return metric.WithAttributes()
}

// holdKey names the lock of e among those being timed: its token, and its
// hold, since the locks of one re-entrant lock (Reenter, Resume) share the
// token.
func holdKey(e redlock.Event) string { return e.Token + "/" + e.Hold }

// take removes and returns the timed hold of key, if any.
func (o *Observer) take(key string) (hold, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, ok := o.held[key]
	if ok {
		delete(o.held, key)
	}
	return h, ok
}

func (o *Observer) endHold(ctx context.Context, e redlock.Event, h hold, outcome string) {
	o.holdDuration.Record(ctx, e.End.Sub(h.start).Seconds(), o.metricAttrs(e, outcome))
	h.span.SetAttributes(keyOutcome.String(outcome))
	h.span.End(trace.WithTimestamp(e.End))
}
