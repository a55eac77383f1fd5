package redlocktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// The toxiproxy toxics behind the faults of a Net.

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
		err = addToxic(l.proxy, toxic{
			Name:       ls.toxic,
			Type:       "latency",
			Stream:     ls.stream,
			Toxicity:   1,
			Attributes: map[string]int64{"latency": ms},
		})
	case ms == 0:
		err = l.proxy.Toxics.RemoveToxic(context.Background(), ls.toxic)
	default:
		b, _ := json.Marshal(toxic{Toxicity: 1, Attributes: map[string]int64{"latency": ms}})
		_, err = l.proxy.Toxics.UpdateToxicJson(ls.toxic, bytes.NewReader(b))
	}
	if err != nil {
		return err
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

// toxic is the JSON form of a toxiproxy toxic.
type toxic struct {
	Name       string           `json:"name,omitempty"`
	Type       string           `json:"type,omitempty"`
	Stream     string           `json:"stream,omitempty"`
	Toxicity   float32          `json:"toxicity"`
	Attributes map[string]int64 `json:"attributes"`
}

func addToxic(p *toxiproxy.Proxy, t toxic) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = p.Toxics.AddToxicJson(bytes.NewReader(b))
	return err
}
