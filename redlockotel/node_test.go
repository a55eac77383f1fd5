package redlockotel

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// TestOTelNodeMetrics: each node's answer is one observation of
// redlock.node.duration, by node, address, operation and outcome; a failed
// one also counts in redlock.node.errors. Node answers make no spans.
func TestOTelNodeMetrics(t *testing.T) {
	h := newHarness(t)
	node := func(op redlock.EventKind, i int, addr string, latency int, err error) redlock.Event {
		return redlock.Event{Kind: redlock.EventNode, Op: op, Name: "jobs", Node: i, Addr: addr,
			Start: at(0), End: at(time.Duration(latency) * ms), Err: err}
	}
	refused := errors.New("dial tcp 10.0.0.2:6379: connection refused")
	for _, e := range []redlock.Event{
		node(redlock.EventAcquire, 0, "10.0.0.1:6379", 1, nil),
		node(redlock.EventAcquire, 0, "10.0.0.1:6379", 3, nil),
		node(redlock.EventAcquire, 1, "10.0.0.2:6379", 2, refused),
		node(redlock.EventRelease, 1, "10.0.0.2:6379", 150, nil), // a late answer
		node(redlock.EventExtend, 0, "10.0.0.1:6379", 1, nil),
	} {
		h.obs.Observe(context.Background(), e)
	}
	got := h.metrics(t)
	series := func(node, addr, op, outcome string) string {
		return "redlock.node=" + node + ",redlock.node.address=" + addr + ",redlock.operation=" + op + ",redlock.outcome=" + outcome
	}
	want := map[string]point{
		series("0", "10.0.0.1:6379", "acquire", "ok"):    {2, 0.004},
		series("1", "10.0.0.2:6379", "acquire", "error"): {1, 0.002},
		series("1", "10.0.0.2:6379", "release", "ok"):    {1, 0.150},
		series("0", "10.0.0.1:6379", "extend", "ok"):     {1, 0.001},
	}
	dur := got["redlock.node.duration"]
	if len(dur) != len(want) {
		t.Errorf("redlock.node.duration has %d series; want %d: %v", len(dur), len(want), dur)
	}
	for attrs, w := range want {
		if p := dur[attrs]; p.Count != w.Count || math.Abs(p.Sum-w.Sum) > 1e-9 {
			t.Errorf("redlock.node.duration{%s} = %+v; want %+v", attrs, p, w)
		}
	}
	errs := got["redlock.node.errors"]
	if p := errs[series("1", "10.0.0.2:6379", "acquire", "error")]; len(errs) != 1 || p.Count != 1 {
		t.Errorf("redlock.node.errors = %v; want 1 for node 1's failed acquire", errs)
	}
	if spans := h.spans.Ended(); len(spans) != 0 {
		t.Errorf("node answers made %d spans; want none", len(spans))
	}
}
