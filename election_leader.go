package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// LeaderInfo is the leader of an election as [Client.Leader] read it.
type LeaderInfo struct {
	Name string
	// Held: a quorum of the nodes hold the election's lock for one leader.
	// False: the name has no leader now (a quorum answered, and no leader
	// holds a quorum of them); the fields below are zero then.
	Held  bool
	Value string // the leader's value, as given to Campaign
	Term  uint64 // the leader's term: its fence (see Client.Leader)
	// Remaining is how long the leader is sure to lead without another
	// extend: the TTL that a quorum of its nodes still had, less the
	// Client's drift allowance and the time the read took. The watchdog
	// extends a live leader every third of its TTL.
	Remaining time.Duration
}

// ErrLeaderUnknown: fewer than a quorum of the nodes answered, so whether
// the election has a leader, and which, is unknown. The error that matches
// it joins the nodes' failures.
var ErrLeaderUnknown = errors.New("redlock: leader unknown: fewer than a quorum of the nodes answered")

// Leader reads the leader of the election name on every node at once, as
// [Client.Inspect] does, changing nothing. With a quorum of answers it
// returns the leader (Held true), or Held false when no leader holds a
// quorum: then nobody leads (the lock is free, or expiring, or being
// taken). With fewer answers it returns an error matching
// [ErrLeaderUnknown]; it also fails for a bad name or when ctx ends.
//
// The term is the largest fence counter among the nodes that hold the
// leader's key. That is the leader's fence: its acquisition set the
// counter of every node it won to at most its fence F (each INCR there
// gave at most F, and the write-back raises counters to F, no higher);
// and a node that holds the key refuses every other acquisition before it
// increments, so the counter of a held key does not move while it is
// held. Some node of the holding quorum has reached F: either the quorum
// whose INCR gave exactly F (the fast path) or the write-back's quorum
// meets every quorum. One exception: a node whose success came after the
// acquisition was decided, whose counter was ahead of every other node's
// (counters diverged after a node lost its data), can show more than F.
//
// Like Inspect, Leader tells what was true at some instant: decide who may
// write with the term and a guard, not with Leader.
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	start := c.clock.Now()
	st, err := c.Inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	info := &LeaderInfo{Name: name}
	if st.Answered < c.quorum {
		errs := []error{fmt.Errorf("%w: %d of %d nodes answered, %d needed", ErrLeaderUnknown, st.Answered, len(st.Nodes), c.quorum)}
		for _, ns := range st.Nodes {
			if ns.Err != nil {
				errs = append(errs, ns.Err)
			}
		}
		return info, errors.Join(errs...)
	}
	if !st.Held {
		return info, nil
	}
	var ttls []time.Duration
	for _, ns := range st.Nodes {
		if !ns.Held || ns.Token != st.Holder {
			continue
		}
		info.Term = max(info.Term, ns.Fence)
		if info.Value == "" {
			info.Value = ns.Metadata
		}
		ttls = append(ttls, ns.TTL)
	}
	// The quorum-th largest TTL: the leader's keys live that long on a
	// quorum of the nodes.
	slices.Sort(ttls)
	q := ttls[len(ttls)-c.quorum]
	info.Held = true
	info.Remaining = max(q-drift(q, c.opts.DriftFactor)-c.clock.Now().Sub(start), 0)
	return info, nil
}
