package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// NodeState is what one node says about a lock, as [Client.Inspect] reads it.
type NodeState struct {
	Node int    // index of the node in the slice given to New
	Addr string // its address, as its client reports it
	// Err is why the node gave no usable answer: it was unreachable or
	// slow (Reachable false), or its lock key holds something that is not
	// a lock (Reachable true). The fields below are zero then, but Fence.
	Err       error
	Reachable bool

	Held      bool          // the node holds the lock key
	Token     string        // the holder's token, in full (it proves ownership: show it to admins only)
	Reentrant bool          // the lock is in its re-entrant form
	Metadata  string        // the holder's metadata (AcquireOptions.Metadata)
	Holds     int           // holds the node keeps the key for: 1 for a plain lock
	TTL       time.Duration // the key's remaining TTL; -1: no expiry (never set by this library)
	Fence     uint64        // the node's fence counter; 0 when it has none
}

// LockState is a lock as [Client.Inspect] found it on every node.
type LockState struct {
	Name   string
	Quorum int
	Nodes  []NodeState // in node order

	// Holder is the token that holds the key on the most nodes ("" when
	// no node holds it), on HeldOn nodes.
	Holder string
	HeldOn int
	// Held: a quorum of the nodes hold the key for Holder: the lock is
	// taken. Free: a quorum of the nodes answered without a key: an
	// Acquire could take it now. Neither: too few nodes answered, or the
	// answers are split; the lock's state is unknown.
	Held, Free bool
}

// Inspect reads the lock name on every node at once, changing nothing: who
// holds it there, with which metadata, for how long and how many holds,
// and the node's fence counter; then whether a quorum holds it. Each node
// is asked with one read-only script, bounded by the node timeout. An
// unreachable node is reported in its NodeState, not as an error; Inspect
// returns an error only for a bad name or when ctx has ended.
//
// What Inspect sees was true at some instant on each node: a lock can be
// taken or released the moment after. Use it to look, never to decide who
// may write (that is what Acquire and fences are for).
func (c *Client) Inspect(ctx context.Context, name string) (*LockState, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	r := sendRound(ctx, c, inspectRequest(c.keys(name)), &transport.Spec[[]any]{
		PerNode: c.opts.NodeTimeout, Parse: sliceReply, Accept: anyAnswer[[]any]})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := &LockState{Name: name, Quorum: c.quorum, Nodes: make([]NodeState, len(c.nodes))}
	errs := nodeErrorsOf(c, r, c.opts.NodeTimeout, noRefusal[[]any])
	count := map[string]int{}
	free := 0
	for i := range c.nodes {
		ns := &st.Nodes[i]
		ns.Node, ns.Addr = i, c.nodes[i].addr
		if errs[i] != nil {
			ns.Err = errs[i]
			continue
		}
		ns.Reachable = true
		if err := ns.read(r.Replies[i].Val); err != nil {
			ns.Err = &NodeError{Node: i, Addr: ns.Addr, Err: err}
			continue
		}
		if ns.Held {
			count[ns.Token]++
		} else {
			free++
		}
	}
	for tok, n := range count {
		if n > st.HeldOn || n == st.HeldOn && tok < st.Holder {
			st.Holder, st.HeldOn = tok, n
		}
	}
	st.Held, st.Free = st.HeldOn >= c.quorum, free >= c.quorum
	return st, nil
}

// read fills ns from the inspect script's reply {kind, holder, meta, pttl,
// holds, counter}.
func (ns *NodeState) read(v []any) error {
	if len(v) != 6 {
		return fmt.Errorf("unexpected reply %v from the inspect script", v)
	}
	kind, _ := v[0].(string)
	holder, _ := v[1].(string)
	meta, _ := v[2].(string)
	pttl, _ := v[3].(int64)
	holds, _ := v[4].(int64)
	if counter, _ := v[5].(string); counter != "" {
		f, err := strconv.ParseUint(counter, 10, 64)
		if err != nil {
			return fmt.Errorf("fence counter %q is not a decimal counter", counter)
		}
		ns.Fence = f
	}
	switch kind {
	case "none":
		return nil
	case "plain", "reentrant":
	default:
		return errors.New("WRONGTYPE lock key holds a " + kind + ", not a lock")
	}
	ns.Held, ns.Token, ns.Reentrant, ns.Metadata, ns.Holds = true, holder, kind == "reentrant", meta, int(holds)
	ns.TTL = time.Duration(pttl) * time.Millisecond
	if pttl < 0 {
		ns.TTL = -1
	}
	return nil
}
