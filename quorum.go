package redlock

import (
	"context"
	"sync"
	"time"
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
}

// decided reports whether a round over n nodes that needs need agreeing
// answers is decided after ok agreed and failed did not: either need
// agreed, or so many failed that need can no longer be reached. The
// answers still pending cannot change the outcome then, so the caller does
// not wait for them.
func decided(ok, failed, n, need int) bool {
	return ok >= need || failed > n-need
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
// finishes, its answer is passed to late, in that goroutine. late may be nil. Each call
// goroutine sends at most once on a channel buffered to n, so an early return
// never strands a sender.
//
// With need <= 0 the round waits for every node (or the timeout): that is how
// release reaches all nodes.
func fanout[T any](ctx context.Context, g *tracker, n, need int, perNode time.Duration,
	call func(ctx context.Context, i int) (T, error),
	accept func(T, error) bool,
	late func(reply[T]),
) *round[T] {
	r := &round[T]{replies: make([]reply[T], n), answered: make([]bool, n)}
	ch := make(chan reply[T], n)

	var mu sync.Mutex // protects decidedYet
	decidedYet := false

	// The calls run under a context that is not cancelled when fanout
	// returns: an abandoned call still has to finish so its late answer is
	// seen. Its own per-node deadline bounds it.
	callCtx := context.WithoutCancel(ctx)
	for i := 0; i < n; i++ {
		g.Go(func() {
			cctx, cancel := context.WithTimeout(callCtx, perNode)
			v, err := call(cctx, i)
			cancel()
			rp := reply[T]{node: i, val: v, err: err}
			mu.Lock()
			d := decidedYet
			if !d {
				ch <- rp // never blocks: buffered to n, one send per goroutine
			}
			mu.Unlock()
			if d && late != nil {
				late(rp)
			}
		})
	}

	timer := time.NewTimer(perNode)
	defer timer.Stop()
	failed, answered := 0, 0
	for answered < n {
		if need > 0 && decided(r.ok, failed, n, need) {
			break
		}
		select {
		case rp := <-ch:
			r.replies[rp.node], r.answered[rp.node] = rp, true
			answered++
			if accept(rp.val, rp.err) {
				r.ok++
			} else {
				failed++
			}
			continue
		case <-timer.C:
			r.timedOut = true
		case <-ctx.Done():
		}
		break
	}

	mu.Lock()
	decidedYet = true
	mu.Unlock()
	// Answers that were sent before the decision but not read yet belong to
	// the round as well: count them, so nothing is left between the two.
	for {
		select {
		case rp := <-ch:
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
