package redlockotel

import (
	"context"

	"github.com/redlock-go/redlock"
	"go.opentelemetry.io/otel/attribute"
)

// Attributes of the per-node instruments.
const (
	keyNode      = attribute.Key("redlock.node")         // the node's index in the client's nodes
	keyNodeAddr  = attribute.Key("redlock.node.address") // the node's address
	keyOperation = attribute.Key("redlock.operation")    // acquire, extend or release
)

// outcomeOK is a node's round trip that did not fail; one that did is
// outcomeError.
const outcomeOK = "ok"

// nodeBuckets are round-trip latencies in seconds: from a local node's tens
// of microseconds to the default node timeout and past it (late answers).
var nodeBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// nodeAnswered records one node's answer to one round trip
// ([redlock.EventNode]): its latency, and a failure in the error counter.
// Node events make no spans: there are several per operation.
func (o *Observer) nodeAnswered(ctx context.Context, e redlock.Event) {
	outcome := outcomeOK
	if e.Err != nil {
		outcome = outcomeError
	}
	attrs := o.metricAttrs(e, outcome, keyNode.Int(e.Node), keyNodeAddr.String(e.Addr), keyOperation.String(e.Op.String()))
	o.nodeDuration.Record(ctx, e.End.Sub(e.Start).Seconds(), attrs)
	if e.Err != nil {
		o.nodeErrors.Add(ctx, 1, attrs)
	}
}
