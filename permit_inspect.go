package redlock

import (
	"context"
	"strconv"
	"sync"

	"github.com/redlock-go/redlock/internal/transport"
)

// PermitsState is a semaphore as [Client.InspectPermits] found it on every
// node.
type PermitsState struct {
	Name   string
	Limit  int
	Quorum int
	// Slots are the semaphore's slots, each read as [Client.Inspect] reads
	// a lock: Slots[i].Held when a quorum holds slot i for one permit
	// (Holder, its token; the nodes' Metadata, its holder's).
	Slots []LockState
	// Held counts the slots a quorum holds, Free those a quorum answered
	// free; the rest are unknown (too few answers, or split).
	Held, Free int
	// Gate is the lock the semaphore's waiters queue for: its holder, when
	// Gate.Held, is the waiter that has waited longest (it takes the next
	// permit freed), and Gate.Waiters are the others, in order.
	Gate LockState
	// Waiting counts the calls waiting for a permit: the gate's holder and
	// its queue's depth.
	Waiting int
	// InUse is the limit in force on a quorum of the nodes: the limit that
	// permits live on each of them were taken with (0: none, or no limit
	// has a quorum). Another value than Limit means the semaphore is in
	// use with another limit, and Slots shows only part of it; an
	// AcquirePermit with Limit would fail with [ErrLimitMismatch].
	InUse int
}

// InspectPermits reads the semaphore name with limit slots on every node,
// changing nothing: each slot as [Client.Inspect] reads a lock, and the
// waiters. Like Inspect, it is for looking, never for deciding: what it
// saw may change the moment after. It returns an error only for bad
// arguments (matching [ErrInvalid]: a nil ctx, the name, a limit out of
// range) or when ctx has ended.
func (c *Client) InspectPermits(ctx context.Context, name string, limit int) (*PermitsState, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "InspectPermits"); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := checkLimit("InspectPermits", name, limit); err != nil {
		return nil, err
	}
	sk := semKeysOf(c.opts.KeyPrefix, name)
	st := &PermitsState{Name: name, Limit: limit, Quorum: c.quorum, Slots: make([]LockState, limit)}
	errs := make([]error, limit+1)
	var wg sync.WaitGroup
	wg.Go(func() { st.InUse = c.recordedLimit(ctx, sk) })
	for i := range limit + 1 {
		wg.Go(func() {
			var ls *LockState
			var err error
			if i == limit {
				ls, err = c.inspectKeys(ctx, name, sk.gate)
			} else {
				ls, err = c.inspectKeys(ctx, name, sk.slotKeys(i))
			}
			if err == nil {
				if i == limit {
					st.Gate = *ls
				} else {
					st.Slots[i] = *ls
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, s := range st.Slots {
		switch {
		case s.Held:
			st.Held++
		case s.Free:
			st.Free++
		}
	}
	st.Waiting = st.Gate.Depth
	if st.Gate.Held {
		st.Waiting++
	}
	return st, nil
}

// recordedLimit reads the limit in force on every node (permit_scan.lua:
// a node's limit record, when a live slot backs it) and returns the one a
// quorum of them agree on (0: none has a quorum).
func (c *Client) recordedLimit(ctx context.Context, s semKeys) int {
	r := sendRound(ctx, c, permitScanRequest(s, 0), &transport.Spec[[]any]{
		PerNode: c.opts.NodeTimeout, Parse: sliceReply, Accept: anyAnswer[[]any]})
	count := map[int]int{}
	for i, rp := range r.Replies {
		if !r.Answered[i] || rp.Err != nil || len(rp.Val) == 0 {
			continue
		}
		v, _ := rp.Val[0].(string)
		if n, err := strconv.Atoi(v); err == nil {
			if count[n]++; count[n] >= c.quorum {
				return n
			}
		}
	}
	return 0
}
