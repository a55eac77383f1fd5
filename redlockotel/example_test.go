package redlockotel_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlockotel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// An Observer plugged into a client's Options. Here it is fed the events a
// client would report for one lock held for two seconds, and the metrics are
// read back by hand; a program would use an exporter instead.
func Example() {
	reader := sdkmetric.NewManualReader()
	obs, err := redlockotel.New(redlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		panic(err)
	}
	observe := redlockotel.Chain(obs.Observe, func(_ context.Context, e redlock.Event) { fmt.Println("event:", e.Kind) })
	// client, err := redlock.New(nodes, &redlock.Options{OnEvent: observe})

	t0 := time.Now()
	lock := redlock.Event{Name: "invoice:42", Token: "secret", Fence: 3}
	acquire, release := lock, lock
	acquire.Kind, acquire.Start, acquire.End, acquire.Attempts = redlock.EventAcquire, t0, t0.Add(5*time.Millisecond), 1
	release.Kind, release.Start, release.End = redlock.EventRelease, t0.Add(2*time.Second), t0.Add(2005*time.Millisecond)
	observe(context.Background(), acquire)
	observe(context.Background(), release)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			lines = append(lines, fmt.Sprintf("%s [%s]: %.3f", m.Name, m.Unit, d.DataPoints[0].Sum))
		case metricdata.Histogram[int64]:
			lines = append(lines, fmt.Sprintf("%s [%s]: %d", m.Name, m.Unit, d.DataPoints[0].Sum))
		case metricdata.Sum[int64]:
			lines = append(lines, fmt.Sprintf("%s [%s]: %d", m.Name, m.Unit, d.DataPoints[0].Value))
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// event: acquire
	// event: release
	// redlock.acquire.attempts [{attempt}]: 1
	// redlock.acquire.duration [s]: 0.005
	// redlock.held [{lock}]: 0
	// redlock.hold.duration [s]: 2.000
	// redlock.releases [{release}]: 1
}
