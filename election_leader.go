package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// The term is the one the leader's Campaign recorded beside its value on
// the nodes. Until that record lands (one round trip after the leader
// won), or where it failed everywhere, the term is the largest fence
// counter among the nodes that hold the leader's key: no counter of theirs
// moves while they hold it (a held key is refused to every other
// acquisition before its counter is touched), and one of them gave the
// leader its fence, but a node whose grant came after the acquisition was
// decided can show more, when contention or a lost node left the counters
// apart.
//
// Like Inspect, Leader tells what was true at some instant: decide who may
// write with the term and a guard, not with Leader.
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	info, _, err := c.leader(ctx, name)
	return info, err
}

// leader is Leader, also reporting whether the leader's term was read from
// its record (announced) rather than from the counters.
func (c *Client) leader(ctx context.Context, name string) (info *LeaderInfo, announced bool, err error) {
	if err := c.made(); err != nil {
		return nil, false, err
	}
	start := c.clock.Now()
	st, err := c.Inspect(ctx, name)
	if err != nil {
		return nil, false, err
	}
	info = &LeaderInfo{Name: name}
	if st.Answered < c.quorum {
		errs := []error{fmt.Errorf("%w: %d of %d nodes answered, %d needed", ErrLeaderUnknown, st.Answered, len(st.Nodes), c.quorum)}
		for _, ns := range st.Nodes {
			if ns.Err != nil {
				errs = append(errs, ns.Err)
			}
		}
		return info, false, errors.Join(errs...)
	}
	if !st.Held {
		return info, false, nil
	}
	var (
		ttls    []time.Duration
		counter uint64
	)
	for _, ns := range st.Nodes {
		if !ns.Held || ns.Token != st.Holder {
			continue
		}
		counter = max(counter, ns.Fence)
		ttls = append(ttls, ns.TTL)
		value, term, ok := strings.Cut(ns.Metadata, termSep)
		if t, err := strconv.ParseUint(term, 10, 64); ok && err == nil {
			info.Value, info.Term, announced = value, t, true
		} else if !announced {
			info.Value = ns.Metadata
		}
	}
	if !announced {
		info.Term = counter
	}
	// The quorum-th largest TTL: the leader's keys live that long on a
	// quorum of the nodes.
	slices.Sort(ttls)
	q := ttls[len(ttls)-c.quorum]
	info.Held = true
	info.Remaining = max(q-drift(q, c.opts.DriftFactor)-c.clock.Now().Sub(start), 0)
	return info, announced, nil
}
