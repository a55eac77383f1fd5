package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// reply is one node's answer to one round of a fan-out.
type reply[T any] struct {
	node int
	val  T
	err  error
}

// round is the outcome of one fan-out: what each node said by the time the
// round was decided. A node that had not answered yet is pending: its answer
// goes to the round's late handler instead.
type round[T any] struct {
	replies  []reply[T] // indexed by node
	answered []bool     // answered[i]: replies[i] holds node i's answer
	ok       int        // answers for which the round's accept func said yes
	timedOut bool       // the per-node timeout ran out before every node answered
	ctxEnded bool       // the caller's ctx ended before the round was decided
}

// decided reports whether a round over n nodes that needs need agreeing
// answers is decided after ok agreed and failed did not: either need
// agreed, or so many failed that need can no longer be reached. The
// answers still pending cannot change the outcome then, so the caller does
// not wait for them.
func decided(ok, failed, n, need int) bool {
	return ok >= need || failed > n-need
}

// fan is one round in flight: where the nodes' answers go. Whoever finishes
// a node's call hands its answer to deliver, exactly once per node: before
// the round is decided it goes to the waiting caller, after that to late.
type fan[T any] struct {
	g    *tracker
	ch   chan reply[T] // buffered to n: a deliver never blocks
	late func(reply[T])

	// ctx bounds every call of the round: its deadline is the per-node
	// timeout after the round started. It is not cancelled by the caller's
	// ctx (an abandoned call still has to finish so its late answer is
	// seen); cancel releases it once every node answered.
	ctx    context.Context
	cancel context.CancelFunc
	left   atomic.Int32 // nodes that have not answered yet

	mu      sync.Mutex // protects decided
	decided bool

	parse func(*redis.Cmd) (T, error) // reads a node's reply (scriptRound); nil for fanout
	obs   *roundObserver              // reports each answer; nil when nothing observes

	r round[T] // the outcome, filled in by wait (one allocation with the fan)
}

func newFan[T any](ctx context.Context, g *tracker, n int, perNode time.Duration, late func(reply[T])) *fan[T] {
	f := &fan[T]{g: g, ch: make(chan reply[T], n), late: late}
	parent := ctx
	if ctx.Done() != nil {
		parent = context.WithoutCancel(ctx)
	}
	f.ctx, f.cancel = context.WithTimeout(parent, perNode)
	f.left.Store(int32(n))
	return f
}

// deliver hands node rp.node's answer to the round, or to late once the
// round has been decided. With async set (the caller is a node's sender,
// which must not wait for late), late runs in a goroutine of its own.
func (f *fan[T]) deliver(rp reply[T], async bool) {
	if f.obs != nil {
		f.obs.answered(rp.node, rp.err)
	}
	f.mu.Lock()
	d := f.decided
	if !d {
		f.ch <- rp // never blocks: buffered to n, one send per node
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
		f.cancel()
	}
}

// wait collects the answers until the round is decided (see fanout) and
// returns them; answers that come later go to late.
func (f *fan[T]) wait(ctx context.Context, n, need int, accept func(T, error) bool) *round[T] {
	r := &f.r
	r.replies, r.answered = make([]reply[T], n), make([]bool, n)
	failed, answered := 0, 0
	for answered < n {
		if need > 0 && decided(r.ok, failed, n, need) {
			break
		}
		select {
		case rp := <-f.ch:
			r.replies[rp.node], r.answered[rp.node] = rp, true
			answered++
			if accept(rp.val, rp.err) {
				r.ok++
			} else {
				failed++
			}
			continue
		case <-f.ctx.Done():
			if f.ctx.Err() != context.DeadlineExceeded {
				continue // every node answered: the answers wait in f.ch
			}
			r.timedOut = true
		case <-ctx.Done():
			r.ctxEnded = true
		}
		break
	}

	f.mu.Lock()
	f.decided = true
	f.mu.Unlock()
	// Answers that were sent before the decision but not read yet belong to
	// the round as well: count them, so nothing is left between the two.
	for {
		select {
		case rp := <-f.ch:
			r.replies[rp.node], r.answered[rp.node] = rp, true
			if accept(rp.val, rp.err) {
				r.ok++
			}
			continue
		default:
		}
		break
	}
	return r
}

// fanout calls call(ctx, i) for every node i in [0, n) at once, each in a
// goroutine owned by g and bounded by perNode, and returns as soon as the
// outcome is known:
//
//   - need answers were accepted (accept returned true), or
//   - so many nodes failed that need can no longer be reached, or
//   - every node answered, or the per-node timeout ran out, or ctx ended.
//
// A slow or dead minority never delays the caller. Calls still running when
// fanout returns keep running in their goroutines, which g joins (go-redis
// does not always honour a context deadline on a socket read); when one
// finishes, its answer is passed to late, in that goroutine. late may be
// nil. Each call goroutine sends at most once on a channel buffered to n, so
// an early return never strands a sender.
//
// With need <= 0 the round waits for every node (or the timeout): that is how
// release reaches all nodes.
//
// The rounds of the lock's scripts go through [scriptRound] instead, which
// decides the same way but sends through the nodes' senders.
func fanout[T any](ctx context.Context, g *tracker, n, need int, perNode time.Duration,
	call func(ctx context.Context, i int) (T, error),
	accept func(T, error) bool,
	late func(reply[T]),
) *round[T] {
	f := newFan(ctx, g, n, perNode, late)
	for i := 0; i < n; i++ {
		g.Go(func() {
			v, err := call(f.ctx, i)
			f.deliver(reply[T]{node: i, val: v, err: err}, false)
		})
	}
	return f.wait(ctx, n, need, accept)
}
