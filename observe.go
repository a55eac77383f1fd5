package redlock

import (
	"context"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind int

// The kinds of [Event].
const (
	// EventAcquire: an Acquire call returned, with the lock or (Err set)
	// without it.
	EventAcquire EventKind = iota + 1
	// EventExtend: one extend round, by Extend or by the watchdog (Auto).
	// A failed watchdog round (Err set) does not end the lock by itself.
	EventExtend
	// EventRelease: Release returned; Err joins the nodes' failures known
	// then. Nodes still answering (stragglers) are not waited for: their
	// failures go to [Options].Logger.
	EventRelease
	// EventLost: the lock was lost, at its deadline or when a majority of
	// the nodes no longer held it; Err is the cause (matches ErrLost).
	EventLost
	// EventNode: one node answered one round trip of an acquire attempt,
	// an extend or a release (Op says which), in time for the round or
	// after it was decided. Node and Addr name the node; Start is when the
	// round sent its calls and End when this answer came, so End-Start is
	// the latency the round saw (a wait in the node's pipeline included);
	// Err is the node's failure (a refusal, such as another holder, is
	// none). A node that never answers gives no event: the round's own
	// event names it. Reported from the goroutine that received the
	// answer.
	EventNode
	// EventWait: an Acquire call started waiting for the lock (Waiting
	// true) or stopped waiting (Waiting false). A call waits when it must
	// let this Client's earlier call of the same name go first, or when an
	// attempt failed and it will try again; it stops when it returns,
	// with the lock or without it (Err is then the Acquire's error). Each
	// call reports at most one start and, after it, exactly one stop, so
	// that starts minus stops is the number of calls waiting now. Start is
	// when the wait began (in both events); End, in the stop, when it
	// ended. A call that won or failed on its first attempt, without
	// waiting for its turn, reports none; nor does a try-lock
	// ([Client.TryAcquire]), which never waits.
	EventWait
)

func (k EventKind) String() string {
	switch k {
	case EventAcquire:
		return "acquire"
	case EventExtend:
		return "extend"
	case EventRelease:
		return "release"
	case EventLost:
		return "lost"
	case EventNode:
		return "node"
	case EventWait:
		return "wait"
	}
	return "unknown"
}

// Event is one thing a lock did, reported to [Options].OnEvent: enough to
// record a history of who held which lock when, with which fence, and to
// count attempts, extends and losses.
type Event struct {
	Kind     EventKind
	Name     string    // lock name
	Token    string    // the lock's token (empty for a failed Acquire)
	Hold     string    // tells apart locks that share Token ([Lock.Reenter], [Client.Resume]): random for each such lock, "" for one made by Acquire
	Fence    uint64    // the lock's fence, 0 without fencing
	Start    time.Time // when the operation began (monotonic)
	End      time.Time // when it ended; for EventLost, when the loss was noticed
	Until    time.Time // the local deadline after the operation (EventLost: the one in force); zero if not held
	Attempts int       // EventAcquire: attempts made
	Auto     bool      // EventExtend: made by the watchdog
	Waiting  bool      // EventWait: the call started waiting (false: it stopped)
	Limit    int       // a permit's acquire and wait ([Client.AcquirePermit]): the semaphore's limit; 0 for a lock's
	Shared   bool      // a shared hold's events ([Client.AcquireShared]): a reader, which may overlap other readers
	Err      error     // nil on success

	// EventNode only: the operation (EventAcquire, EventExtend or
	// EventRelease), and the node's index in the Client's nodes and its
	// address.
	Op   EventKind
	Node int
	Addr string
}

// observe reports e, caused by a call with context ctx, if the client has
// an observer.
func (c *Client) observe(ctx context.Context, e Event) {
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(ctx, e)
	}
}

// observeOf reports e, an event of lease ls, unless its form keeps such
// events from the observer (form.reported).
func (c *Client) observeOf(ctx context.Context, ls *lease, e Event) {
	if ls.form.reported(e.Kind) {
		e.Shared = ls.form == formShared
		c.observe(ctx, e)
	}
}

// roundObserver reports each node's answer to one round as an EventNode.
// A round has one only when the Client has an observer: without one,
// rounds take no time stamps for it.
type roundObserver struct {
	c   *Client
	ctx context.Context // the context of the call that sent the round
	ev  Event           // Kind, Op, Name and Start
}

// newRoundObserver returns the observer of a round of op on lock name
// starting now, sent by a call with context ctx, or nil if nothing
// observes.
func (c *Client) newRoundObserver(ctx context.Context, op EventKind, name string) *roundObserver {
	if c.opts.OnEvent == nil || op == 0 {
		return nil
	}
	return &roundObserver{c: c, ctx: ctx, ev: Event{Kind: EventNode, Op: op, Name: name, Start: c.clock.Now()}}
}

// answered reports node i's answer, err its failure.
func (o *roundObserver) answered(i int, err error) {
	e := o.ev
	e.Node, e.Addr, e.End, e.Err = i, o.c.nodes[i].addr, o.c.clock.Now(), err
	o.c.opts.OnEvent(o.ctx, e)
}
