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
	// Held: a quorum of the nodes hold the election's lock for one holder,
	// the leader. False: the name has no leader now (a quorum answered,
	// and no holder holds a quorum of them); the fields below are zero
	// then.
	Held  bool
	Value string // the leader's value, as given to Campaign (a holder's Metadata)
	// Term is the leader's term: its fence, as its Campaign recorded it on
	// the nodes. 0 when the leader has recorded no term: see Client.Leader.
	Term uint64
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
// [ErrLeaderUnknown]; it fails at once for a bad name or a nil ctx
// ([ErrInvalid]), and when ctx ends.
//
// The term is the one the leader's Campaign recorded beside its value on
// the nodes, read from any node that holds the leader's lock: only
// Campaign's announce writes it, in a form no Metadata can take, so the
// term is always the leader's fence. Term is 0 when no answering node has
// it: in the round trip after the leader won, before its record lands;
// when the record was lost on every node that answered; and when the name
// is held by a plain Acquire (re-entrant or not), which records no term:
// its holder is the leader as far as the lock goes, with its Metadata as
// Value. A term is never guessed from the fence counters.
//
// Like Inspect, Leader tells what was true at some instant: decide who may
// write with the term and a guard, not with Leader.
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	info, _, err := c.leader(ctx, name)
	return info, err
}

// leader is Leader, also returning the token of the leader's lock ("" when
// nobody leads), which tells leaders apart whatever their terms say.
func (c *Client) leader(ctx context.Context, name string) (info *LeaderInfo, holder string, err error) {
	if err := c.made(); err != nil {
		return nil, "", err
	}
	if err := checkCtx(ctx, "Leader"); err != nil {
		return nil, "", err
	}
	start := c.clock.Now()
	st, err := c.Inspect(ctx, name)
	if err != nil {
		return nil, "", err
	}
	info = &LeaderInfo{Name: name}
	if st.Answered < c.quorum {
		errs := []error{fmt.Errorf("%w: %d of %d nodes answered, %d needed", ErrLeaderUnknown, st.Answered, len(st.Nodes), c.quorum)}
		for _, ns := range st.Nodes {
			if ns.Err != nil {
				errs = append(errs, ns.Err)
			}
		}
		return info, "", errors.Join(errs...)
	}
	if !st.Held {
		return info, "", nil
	}
	var ttls []time.Duration
	for _, ns := range st.Nodes {
		if !ns.Held || ns.Token != st.Holder {
			continue
		}
		ttls = append(ttls, ns.TTL)
		if info.Term == 0 { // a node with the record wins
			info.Value, info.Term = ns.Metadata, ns.Term
		}
	}
	// The quorum-th largest TTL: the leader's keys live that long on a
	// quorum of the nodes.
	slices.Sort(ttls)
	q := ttls[len(ttls)-c.quorum]
	info.Held = true
	info.Remaining = max(q-drift(q, c.opts.DriftFactor)-c.clock.Now().Sub(start), 0)
	return info, st.Holder, nil
}
