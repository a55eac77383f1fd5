package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	Metadata  string        // the holder's metadata (AcquireOptions.Metadata); a leader's value
	Term      uint64        // the term the holder recorded here as an election's leader (Client.Campaign); 0: none
	Holds     int           // holds the node keeps the key for: 1 for a plain lock
	TTL       time.Duration // the key's remaining TTL; -1: no expiry (never set by this library)
	Fence     uint64        // the node's fence counter; 0 when it has none

	// Shared: readers hold the key (Client.AcquireShared; Token is ""),
	// Readers of them live, the first MaxInspectReaders listed, soonest
	// expiry first.
	Shared     bool
	Readers    int
	ReaderList []Reader

	// Depth is how many Acquire calls wait in the node's queue (the
	// holder's own entry, kept until its release, left out), and Waiters
	// the first [MaxInspectWaiters] of them, in the order the lock will
	// go to them.
	Depth   int
	Waiters []Waiter
}

// MaxInspectWaiters is the most waiters [Client.Inspect] lists per node
// and in a [LockState]: a long queue is counted in full (Depth), listed in
// part, so that looking at it costs the node little.
const MaxInspectWaiters = 32

// maxInspectWaitersArg is MaxInspectWaiters as the inspect script takes it.
var maxInspectWaitersArg = strconv.Itoa(MaxInspectWaiters)

// Waiter is one Acquire call waiting for a lock, as [Client.Inspect] reads
// it from the nodes' queue (the fair order; barging and try-lock calls do
// not queue).
type Waiter struct {
	Token  string    // the waiting call's token (its lock's token, if it wins: show it to admins only)
	Client string    // the id of the waiting call's Client
	Since  time.Time // when the call began to wait, by its Client's clock: its place in the order
	// Age is how long it has waited: the node's clock less Since (0 when
	// the node's clock is behind the Client's); in a LockState the
	// largest of the nodes'.
	Age time.Duration
	// Nodes is, in a LockState, on how many nodes it queues; 1 in a
	// NodeState.
	Nodes int
	// Shared: the call waits for the shared side (Client.AcquireShared).
	Shared bool
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
	// Set is k when Holder holds the name as one of a set of k names
	// ([Client.AcquireMulti]; see [SetSize]), and 0 for a lock of its own.
	Set int
	// Held: a quorum of the nodes hold the key for Holder: the lock is
	// taken. Free: a quorum of the nodes answered without a key: an
	// Acquire could take it now. Neither: too few nodes answered, or the
	// answers are split; the lock's state is unknown.
	Held, Free bool
	// Shared: the holder is readers (Holder ""); Readers the most live
	// readers a node reported, ReaderList the nodes' first ones merged.
	Shared     bool
	Readers    int
	ReaderList []Reader
	// Answered is how many nodes gave a usable answer: with fewer than
	// Quorum, neither Held nor Free, nothing is known (not even "free").
	Answered int

	// Depth is the longest queue any node reported (NodeState.Depth), and
	// Waiters the nodes' waiters merged, in order, at most
	// [MaxInspectWaiters]; Head is the first of them (nil: nobody waits),
	// the call a released lock goes to next.
	Depth   int
	Waiters []Waiter
	Head    *Waiter
}

// Inspect reads the lock name on every node at once, changing nothing: who
// holds it there, with which metadata, for how long and how many holds,
// the node's fence counter and who waits in its queue, for how long; then
// whether a quorum holds it, and the queues merged. Each node
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
	if err := checkCtx(ctx, "Inspect"); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	return c.inspectKeys(ctx, name, c.keys(name))
}

// inspectKeys reads the lock with keys k on every node, as Inspect: a
// lock's, a semaphore's slot or gate (permit_inspect.go).
func (c *Client) inspectKeys(ctx context.Context, name string, k keys) (*LockState, error) {
	r := sendRound(ctx, c, inspectRequest(k), &transport.Spec[[]any]{
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
		st.Answered++
		st.Depth = max(st.Depth, ns.Depth)
		st.Readers = max(st.Readers, ns.Readers)
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
	st.Shared = st.HeldOn > 0 && st.Holder == ""
	if st.Shared {
		st.ReaderList = mergeReaders(st.Nodes)
	}
	st.Set = SetSize(st.Holder)
	st.Waiters = mergeWaiters(st.Nodes)
	if len(st.Waiters) > 0 {
		st.Head = &st.Waiters[0]
	}
	return st, nil
}

// mergeWaiters returns the waiters of every node, each once, in order (by
// Since, as the nodes order them), at most MaxInspectWaiters.
func mergeWaiters(nodes []NodeState) []Waiter {
	var all []Waiter
	at := map[string]int{}
	for _, ns := range nodes {
		for _, w := range ns.Waiters {
			i, ok := at[w.Token]
			if !ok {
				at[w.Token] = len(all)
				all = append(all, w)
				continue
			}
			all[i].Nodes++
			all[i].Age = max(all[i].Age, w.Age)
		}
	}
	slices.SortFunc(all, func(a, b Waiter) int {
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.Token, b.Token))
	})
	return all[:min(len(all), MaxInspectWaiters)]
}

// read fills ns from the inspect script's reply {kind, holder, meta, pttl,
// holds, counter, term, now, depth, entry, priority...}.
func (ns *NodeState) read(v []any) error {
	if len(v) < 9 || len(v)%2 != 1 {
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
		return ns.readQueue(v[7:])
	case "plain", "reentrant":
	case "shared":
		return ns.readReaders(pttl, holds, v[2], v[7:])
	default:
		return errors.New("WRONGTYPE lock key holds a " + kind + ", not a lock")
	}
	if term, _ := v[6].(string); term != "" {
		t, err := strconv.ParseUint(term, 10, 64)
		if err != nil {
			return fmt.Errorf("leader's term %q is not a decimal term", term)
		}
		ns.Term = t
	}
	ns.Held, ns.Token, ns.Reentrant, ns.Metadata, ns.Holds = true, holder, kind == "reentrant", meta, int(holds)
	ns.TTL = time.Duration(pttl) * time.Millisecond
	if pttl < 0 {
		ns.TTL = -1
	}
	return ns.readQueue(v[7:])
}

// readQueue fills ns's queue from the inspect script's {now, depth, entry,
// priority...}: entries "<token>:<client>[:<ttl>:<f>]" (queue.go),
// priorities the calls' start in Unix microseconds.
func (ns *NodeState) readQueue(v []any) error {
	now, _ := v[0].(int64)
	depth, _ := v[1].(int64)
	ns.Depth = int(depth)
	for i := 2; i+1 < len(v); i += 2 {
		entry, _ := v[i].(string)
		prio, _ := v[i+1].(string)
		us, err := strconv.ParseInt(prio, 10, 64)
		token, client, ok := strings.Cut(entry, ":")
		if err != nil || !ok {
			return fmt.Errorf("queue entry %q with priority %q is not a waiter's", entry, prio)
		}
		client, _, _ = strings.Cut(client, ":")
		since := time.UnixMicro(us)
		age := time.UnixMilli(now).Sub(since)
		ns.Waiters = append(ns.Waiters, Waiter{Token: token, Client: client, Since: since, Age: max(age, 0), Nodes: 1,
			Shared: strings.HasSuffix(entry, readerEntryMark)})
	}
	return nil
}
