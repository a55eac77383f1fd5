package redlocktest

import (
	"errors"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// The toxiproxy toxics behind the faults of a Net, set through the API of
// its toxiproxy-server.

// latencyStream is one direction a latency toxic can delay.
type latencyStream struct {
	stream string // toxiproxy's name of the direction
	toxic  string // the toxic's name
}

var (
	downstreamLatency = latencyStream{"downstream", "latency_downstream"} // replies: Latency
	upstreamLatency   = latencyStream{"upstream", "latency_upstream"}     // requests: DelayRequests
)

// kind returns the fault a latency on ls is.
func (ls latencyStream) kind() history.FaultKind {
	if ls == upstreamLatency {
		return history.FaultDelay
	}
	return history.FaultLatency
}

// latencyOf returns the field of l holding the latency of stream.
func (l *link) latencyOf(ls latencyStream) *time.Duration {
	if ls == upstreamLatency {
		return &l.delay
	}
	return &l.latency
}

// setLatency installs, updates or removes the latency toxic of stream on
// node i.
func (n *Net) setLatency(i int, d time.Duration, ls latencyStream) error {
	if d < 0 {
		return errors.New("negative latency")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	l := n.links[i]
	cur := l.latencyOf(ls)
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	var err error
	switch {
	case *cur == 0 && ms == 0:
	case *cur == 0:
		_, err = l.proxy.AddToxic(ls.toxic, "latency", ls.stream, 1, toxiclient.Attributes{"latency": ms})
	case ms == 0:
		err = l.proxy.RemoveToxic(ls.toxic)
	default:
		_, err = l.proxy.UpdateToxic(ls.toxic, 1, toxiclient.Attributes{"latency": ms})
	}
	if err != nil {
		return n.server.explain(err)
	}
	old := *cur
	*cur = time.Duration(ms) * time.Millisecond
	if kind := ls.kind(); old != *cur {
		if old > 0 {
			n.log.ended(i, kind, old.String())
		}
		if *cur > 0 {
			n.log.began(i, kind, cur.String())
		}
	}
	return nil
}
