package transport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is one node as a round sends to it: something that runs scripts,
// and its sender when it can pipeline (every go-redis client can; nil
// otherwise: its calls then go through [redis.Script.Run] in goroutines of
// the round's Tracker).
type Node struct {
	Client redis.Scripter
	Sender *Sender
}

// Reply is one node's answer to one round.
type Reply[T any] struct {
	Node int
	Val  T
	Err  error
}

// Round is the outcome of one round: what each node said by the time the
// round was decided. A node that had not answered yet is pending: its
// answer goes to the round's late handler instead.
type Round[T any] struct {
	Replies  []Reply[T] // indexed by node
	Answered []bool     // Answered[i]: Replies[i] holds node i's answer
	OK       int        // answers that Accept took
	TimedOut bool       // the per-node timeout ran out before every node answered
	CtxEnded bool       // the caller's ctx ended before the round was decided
}

// Spec says how a round runs and when it is decided.
type Spec[T any] struct {
	// Need is how many accepted answers the round needs; with Need <= 0
	// it waits for every node (or the per-node timeout): that is how a
	// release reaches every node.
	Need int
	// Decided reports whether, with ok answers accepted and failed not,
	// out of n nodes, the outcome is known and the pending answers cannot
	// change it (the quorum rule, which the caller owns).
	Decided func(ok, failed, n, need int) bool
	// PerNode bounds each call: the round gives up on a node this long
	// after it started.
	PerNode time.Duration
	// Which, if set, selects the nodes to call; the others count as having
	// answered the zero value.
	Which []bool
	// Parse reads a node's reply; Accept says whether an answer counts
	// towards Need.
	Parse  func(*redis.Cmd) (T, error)
	Accept func(T, error) bool
	// Late, if set, gets every answer that comes after the round was
	// decided, in a goroutine of the Tracker.
	Late func(Reply[T])
	// Observe, if set, is told of every node's answer as it comes.
	Observe func(node int, err error)
	// Queued, if set, is set once the request is queued on every node.
	Queued *atomic.Bool
}

// Run sends req to every node (to those Spec.Which selects) and returns as
// soon as the outcome is known (see [Spec]), or every node answered, or the
// per-node timeout ran out, or ctx ended. A node with a sender gets the
// call through it, so that concurrent rounds share one pipelined write to
// the node; any other node gets it through [redis.Script.Run] in a
// goroutine of g. A slow or dead minority never delays the caller; calls
// still running when Run returns keep running (go-redis does not always
// honour a context deadline on a socket read), and their answers go to
// Spec.Late.
func Run[T any](ctx context.Context, g *Tracker, nodes []Node, req *Request, spec *Spec[T]) *Round[T] {
	n := len(nodes)
	f := newFan(ctx, g, n, spec.PerNode, spec.Late)
	f.parse, f.observe = spec.Parse, spec.Observe
	var ops []op
	for i := range nodes {
		nd := &nodes[i]
		switch {
		case spec.Which != nil && !spec.Which[i]:
			f.deliver(Reply[T]{Node: i}, false)
		case nd.Sender != nil:
			if ops == nil {
				ops = req.opsFor(n)
			}
			o := &ops[i]
			*o = op{to: f, node: i, req: req, cmd: req.cmd(&f.ctx)}
			nd.Sender.submit(o)
		default:
			parse := spec.Parse // (not spec: the goroutine would take it to the heap)
			g.Go(func() {
				v, err := parse(req.script.Run(&f.ctx, nd.Client, req.keys, plainArgv(req.argv)...))
				f.deliver(Reply[T]{Node: i, Val: v, Err: err}, false)
			})
		}
	}
	if spec.Queued != nil {
		spec.Queued.Store(true)
	}
	return f.wait(ctx, n, spec)
}

// Fanout calls call(ctx, i) for every node i in [0, n) at once, each in a
// goroutine owned by g and bounded by Spec.PerNode, and decides as [Run]
// does (Spec.Parse and Spec.Which are not used). Each call goroutine sends
// at most once on a channel buffered to n, so an early return never
// strands a sender.
func Fanout[T any](ctx context.Context, g *Tracker, n int, call func(ctx context.Context, i int) (T, error), spec *Spec[T]) *Round[T] {
	f := newFan(ctx, g, n, spec.PerNode, spec.Late)
	f.observe = spec.Observe
	for i := 0; i < n; i++ {
		g.Go(func() {
			v, err := call(&f.ctx, i)
			f.deliver(Reply[T]{Node: i, Val: v, Err: err}, false)
		})
	}
	return f.wait(ctx, n, spec)
}

// fan is one round in flight: where the nodes' answers go. Whoever finishes
// a node's call hands its answer to deliver, exactly once per node: before
// the round is decided it goes into the round's replies and its node
// number to the waiting caller, after that to late.
type fan[T any] struct {
	g    *Tracker
	ch   chan int // node numbers, buffered to n: a deliver never blocks
	late func(Reply[T])

	// ctx bounds every call of the round: it ends at the deadline, the
	// per-node timeout after the round started. It is not cancelled by the
	// caller's ctx (an abandoned call still has to finish so its late
	// answer is seen). It is the fan's own (see roundCtx): a timer and a
	// channel are made only for a call that waits on its Done.
	ctx     roundCtx
	perNode time.Duration
	left    atomic.Int32 // nodes that have not answered yet

	mu      sync.Mutex // protects decided, and r.Replies until decided is set
	decided bool

	parse   func(*redis.Cmd) (T, error) // reads a node's reply (Run); nil for Fanout
	observe func(node int, err error)   // told of each answer; nil when nothing observes

	// r is the outcome, filled in by deliver (a node's reply, before the
	// round is decided) and wait (the rest); with up to five nodes its
	// slices are the arrays below: one allocation with the fan for all of
	// it.
	r        Round[T]
	replies  [5]Reply[T]
	answered [5]bool
}

func newFan[T any](ctx context.Context, g *Tracker, n int, perNode time.Duration, late func(Reply[T])) *fan[T] {
	f := &fan[T]{g: g, ch: make(chan int, n), late: late, perNode: perNode}
	if n <= len(f.replies) {
		f.r.Replies, f.r.Answered = f.replies[:n], f.answered[:n]
	} else {
		f.r.Replies, f.r.Answered = make([]Reply[T], n), make([]bool, n)
	}
	parent := ctx
	if ctx.Done() != nil {
		parent = context.WithoutCancel(ctx)
	}
	f.ctx = roundCtx{Context: parent, deadline: time.Now().Add(perNode)}
	f.left.Store(int32(n))
	return f
}

// bounds returns the round's context and per-node timeout, for a node's
// sender.
func (f *fan[T]) bounds() (context.Context, time.Duration) { return &f.ctx, f.perNode }

// answer reads op's reply and delivers it; called by the node's sender.
func (f *fan[T]) answer(o *op) {
	v, err := f.parse(o.cmd)
	f.deliver(Reply[T]{Node: o.node, Val: v, Err: err}, true)
}

// deliver hands node rp.Node's answer to the round, or to late once the
// round has been decided. With async set (the caller is a node's sender,
// which must not wait for late), late runs in a goroutine of its own.
func (f *fan[T]) deliver(rp Reply[T], async bool) {
	if f.observe != nil {
		f.observe(rp.Node, rp.Err)
	}
	f.mu.Lock()
	d := f.decided
	if !d {
		f.r.Replies[rp.Node] = rp // read by wait once it has the node's number
		f.ch <- rp.Node           // never blocks: buffered to n, one send per node
	}
	f.mu.Unlock()
	if d && f.late != nil {
		if async {
			f.g.Go(func() { f.late(rp) })
		} else {
			f.late(rp)
		}
	}
	if f.left.Add(-1) == 0 {
		f.ctx.stop()
	}
}

// wait collects the answers until the round is decided and returns them;
// answers that come later go to late.
func (f *fan[T]) wait(ctx context.Context, n int, spec *Spec[T]) *Round[T] {
	r := &f.r
	failed, answered := 0, 0
	var timer *time.Timer // the deadline's, from the Tracker's timers: taken only if the round has to wait
	for answered < n {
		if spec.Need > 0 && spec.Decided(r.OK, failed, n, spec.Need) {
			break
		}
		var i int
		select {
		case i = <-f.ch: // an answer is in already: no timer needed
		default:
			if timer == nil {
				timer = f.g.timer(time.Until(f.ctx.deadline))
				defer f.g.putTimer(timer)
			}
			select {
			case i = <-f.ch:
			case <-timer.C:
				r.TimedOut = true
			case <-ctx.Done():
				r.CtxEnded = true
			}
		}
		if r.TimedOut || r.CtxEnded {
			break
		}
		rp := r.Replies[i]
		r.Answered[i] = true
		answered++
		if spec.Accept(rp.Val, rp.Err) {
			r.OK++
		} else {
			failed++
		}
	}

	f.mu.Lock()
	f.decided = true
	f.mu.Unlock()
	// Answers that were sent before the decision but not read yet belong to
	// the round as well: count them, so nothing is left between the two.
	for {
		select {
		case i := <-f.ch:
			rp := r.Replies[i]
			r.Answered[i] = true
			if spec.Accept(rp.Val, rp.Err) {
				r.OK++
			}
			continue
		default:
		}
		break
	}
	return r
}
