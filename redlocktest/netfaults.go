package redlocktest

import (
	"errors"
	"fmt"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Down cuts the path to node i: the proxy stops listening, so new
// connections are refused, and its open connections are closed. Heal
// restores it. Down on a node that is down does nothing. Down fails after
// Close.
func (n *Net) Down(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	if l := n.links[i]; !l.down {
		if err := l.stop(); err != nil {
			return fmt.Errorf("redlocktest: Down(%d): %w", i, n.server.explain(err))
		}
		n.log.began(i, history.FaultDown, "")
	}
	return nil
}

// Blackhole makes node i unreachable the way a partition does: new
// connections are still accepted and open ones stay open, but every byte
// in either direction is dropped, so commands get no answer and no error
// until the client's own timeout. (A toxiproxy "timeout" toxic with
// timeout 0 on the upstream and the downstream.) Heal restores the path;
// it closes the connections opened through the blackhole, whose lost bytes
// would leave them out of step. Blackhole on a blackholed node does
// nothing. Blackhole fails after Close.
func (n *Net) Blackhole(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	l := n.links[i]
	if l.hole {
		return nil
	}
	l.hole = true // even if only one direction gets it: Heal then replaces the proxy
	n.log.began(i, history.FaultBlackhole, "")
	// Downstream first: no reply gets through once the upstream drops.
	for _, stream := range []string{"downstream", "upstream"} {
		if _, err := l.proxy.AddToxic("blackhole_"+stream, "timeout", stream, 1,
			toxiclient.Attributes{"timeout": 0}); err != nil {
			return fmt.Errorf("redlocktest: Blackhole(%d): %w", i, n.server.explain(err))
		}
	}
	return nil
}

// Latency delays every reply from node i by d, rounded up to whole
// milliseconds (a toxiproxy "latency" toxic on the downstream only): each
// round trip, including the handshake of a new connection, takes d
// longer. Requests are not delayed, so the node executes a command as soon
// as it is sent; only the answer is late (DelayRequests delays the
// requests instead). Latency on a node that already has a latency sets the
// new one; d == 0 removes it (Heal does too). It works on open connections
// and keeps them open. Latency fails if d < 0 and after Close.
func (n *Net) Latency(i int, d time.Duration) error {
	if err := n.setLatency(i, d, downstreamLatency); err != nil {
		return fmt.Errorf("redlocktest: Latency(%d, %v): %w", i, d, err)
	}
	return nil
}

// DelayRequests delays every byte from the client to node i by d, rounded
// up to whole milliseconds (a toxiproxy "latency" toxic on the upstream
// only), so the node executes each command d after it was sent, while the
// replies travel at once. A request can thus reach the node after the
// client gave up on it (its per-node timeout or context ended): the
// command still runs, and nobody hears its answer, as with a retransmitted
// packet or a slow link. Latency delays the replies instead; both can be
// set at once. DelayRequests on a node that already has a delay sets the
// new one; d == 0 removes it (Heal does too). It works on open connections
// and keeps them open. DelayRequests fails if d < 0 and after Close.
func (n *Net) DelayRequests(i int, d time.Duration) error {
	if err := n.setLatency(i, d, upstreamLatency); err != nil {
		return fmt.Errorf("redlocktest: DelayRequests(%d, %v): %w", i, d, err)
	}
	return nil
}

// Heal removes every fault of this Net on node i (requests held by
// HoldRequests are still sent when their hold is over). After Down or
// Blackhole, the proxy is restarted on the same address, and the
// connections opened before Heal are closed (commands waiting on them fail
// at once), so clients reconnect. After Latency or DelayRequests only, the
// delays are removed and the connections stay open. Heal on a healthy path does
// nothing. It fails if another process took the proxy's port while it was
// down (create a new Net then) and after Close.
func (n *Net) Heal(i int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	if err := n.heal(i); err != nil {
		return fmt.Errorf("redlocktest: Heal(%d): %w", i, n.server.explain(err))
	}
	return nil
}

// HealAll is Heal on every node; it returns the errors joined.
func (n *Net) HealAll() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	var errs []error
	for i := range n.links {
		if err := n.heal(i); err != nil {
			errs = append(errs, fmt.Errorf("redlocktest: HealAll: node %d: %w", i, n.server.explain(err)))
		}
	}
	return errors.Join(errs...)
}

// heal does the work of Heal and records the end of each fault it
// removes; n.mu must be held.
func (n *Net) heal(i int) error {
	l := n.links[i]
	type ending struct {
		on     bool
		kind   history.FaultKind
		detail string
	}
	endings := []ending{
		{l.down, history.FaultDown, ""},
		{l.hole, history.FaultBlackhole, ""},
		{l.latency > 0, history.FaultLatency, ms(l.latency)},
		{l.delay > 0, history.FaultDelay, ms(l.delay)},
		{n.holds.d[i].Load() > 0, history.FaultHold, ms(time.Duration(n.holds.d[i].Load()))},
		{n.holds.by[i].Load() != nil, history.FaultHold, "by request"},
	}
	n.holds.d[i].Store(0)
	n.holds.by[i].Store(nil)
	if err := n.healLink(l); err != nil {
		return err
	}
	for _, e := range endings {
		if e.on {
			n.log.ended(i, e.kind, e.detail)
		}
	}
	return nil
}

// healLink removes the proxy faults of l.
func (n *Net) healLink(l *link) error {
	switch {
	case l.down || l.hole:
		// Removing a timeout toxic from live connections can strand
		// toxiproxy's goroutines, and the connections have lost bytes
		// anyway: delete the proxy, which closes them, and create a fresh
		// one, without toxics, on the same address: disabled first, so
		// that l keeps a proxy (down) if the address cannot be had again.
		if !l.down {
			if err := l.flush(); err != nil {
				return err
			}
		}
		if err := l.proxy.Delete(); err != nil {
			return err
		}
		l.down, l.hole, l.latency, l.delay = true, false, 0, 0
		p := n.server.api.NewProxy()
		p.Name, p.Listen, p.Upstream = l.name, l.addr, l.upstream
		if err := p.Save(); err != nil {
			return err
		}
		l.proxy = p
		if err := l.proxy.Enable(); err != nil {
			return fmt.Errorf("cannot listen on %s again (has another process taken the port? create a new Net): %w", l.addr, err)
		}
		l.down = false
	case l.latency > 0 || l.delay > 0:
		if err := l.flush(); err != nil {
			return err
		}
	}
	return nil
}
