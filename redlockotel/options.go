package redlockotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxHeld is how many held locks an [Observer] times at once unless
// [WithMaxHeld] says otherwise.
const DefaultMaxHeld = 10000

// An Option configures [New].
type Option func(*config)

type config struct {
	meters   metric.MeterProvider
	tracers  trace.TracerProvider
	lockName bool
	ownerID  bool
	maxHeld  int
}

// WithMeterProvider sets where the metrics go. Default: the global
// provider, [otel.GetMeterProvider].
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithTracerProvider sets where the spans go. Default: the global provider,
// [otel.GetTracerProvider].
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// WithLockName adds the attribute redlock.lock.name to every metric. Off by
// default: each lock name then makes its own series, which a program that
// locks per user, per order or per file cannot afford. Spans always carry
// the name.
func WithLockName() Option {
	return func(c *config) { c.lockName = true }
}

// WithOwnerID adds the attribute redlock.owner_id,
// [github.com/redlock-go/redlock/guard.OwnerID] of the lock's token, to the
// spans of acquired locks, to tell holders apart. Off by default. The token
// itself is never recorded.
func WithOwnerID() Option {
	return func(c *config) { c.ownerID = true }
}

// WithMaxHeld bounds how many held locks the observer times at once (for
// redlock.hold.duration and the hold spans). A lock acquired while n are
// being timed is counted in redlock.holds.untracked instead; it has no hold
// span, so its failed watchdog rounds are redlock.extend spans of their own
// and its loss is only counted. Default [DefaultMaxHeld]; n <= 0 keeps the
// default.
func WithMaxHeld(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxHeld = n
		}
	}
}

func newConfig(opts []Option) config {
	c := config{maxHeld: DefaultMaxHeld}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	if c.tracers == nil {
		c.tracers = otel.GetTracerProvider()
	}
	return c
}
