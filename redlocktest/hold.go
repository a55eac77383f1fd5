package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// holds is the HoldRequests fault of a Net: a go-redis hook on each of its
// clients that keeps requests in the client process for a while before
// they are written. Unlike a latency toxic, which keeps the order of the
// bytes and flushes what it holds when removed, a held request is sent on
// its own: requests sent after Heal go straight through and overtake it.
type holds struct {
	d       []atomic.Int64 // per node: how long requests are held; 0: not held
	pending atomic.Int64   // held requests not answered yet

	mu      sync.Mutex // protects closing; orders wg.Add before wg.Wait
	closing bool
	wg      sync.WaitGroup // the goroutines sending abandoned held requests
	stop    context.Context
	cancel  context.CancelFunc
}

func newHolds(n int) *holds {
	h := &holds{d: make([]atomic.Int64, n)}
	h.stop, h.cancel = context.WithCancel(context.Background())
	return h
}

// close ends the hold goroutines (those still waiting drop their request)
// and waits for them.
func (h *holds) close() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// HoldRequests holds each request that this Net's clients send to node i
// for d in the client process before writing it, as a retransmitted packet
// or a slow path would. A caller whose context ends first gets its context
// error at once (whatever ContextTimeoutEnabled says), and its request is
// still sent, on a copy of the command, once d has passed since it was
// issued; nobody reads that answer. Requests issued after Heal(i) are sent
// at once and can overtake the held ones, which a latency toxic
// (DelayRequests) cannot do: it keeps the order of the bytes and flushes
// them when removed. The connections stay open. HoldRequests on a node
// that already holds sets the new d for later requests; d == 0 stops
// holding (Heal does too). It fails if d < 0 and after Close. Held tells
// how many held requests are still to be answered.
func (n *Net) HoldRequests(i int, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("redlocktest: HoldRequests(%d, %v): negative duration", i, d)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	if old := time.Duration(n.holds.d[i].Swap(int64(d))); old != d {
		if old > 0 {
			n.log.ended(i, history.FaultHold, ms(old))
		}
		if d > 0 {
			n.log.began(i, history.FaultHold, ms(d))
		}
	}
	return nil
}

// Held returns how many requests held by HoldRequests have not been
// answered yet, whether or not their caller is still waiting: 0 once every
// held request has run on its node (or failed).
func (n *Net) Held() int { return int(n.holds.pending.Load()) }

// holdHook is the go-redis hook of the client of one node.
type holdHook struct {
	h    *holds
	node int
}

var _ redis.Hook = holdHook{}

func (holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (k holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		held, err := k.hold(ctx, func() error { return next(ctx, cmd) },
			func(bg context.Context) { _ = next(bg, redis.NewCmd(bg, cmd.Args()...)) })
		if !held {
			return next(ctx, cmd)
		}
		if err != nil {
			cmd.SetErr(err)
		}
		return err
	}
}

func (k holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		held, err := k.hold(ctx, func() error { return next(ctx, cmds) },
			func(bg context.Context) {
				clones := make([]redis.Cmder, len(cmds))
				for j, c := range cmds {
					clones[j] = redis.NewCmd(bg, c.Args()...)
				}
				_ = next(bg, clones)
			})
		if !held {
			return next(ctx, cmds)
		}
		if err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
		}
		return err
	}
}

// hold holds one request if its node is held (held true): it waits the
// hold and then sends it with send, in the caller's goroutine, or, if ctx
// ends first, returns ctx's error and leaves the request to a goroutine of
// the Net that sends a copy of it with abandon when the hold is over.
func (k holdHook) hold(ctx context.Context, send func() error, abandon func(context.Context)) (held bool, err error) {
	d := time.Duration(k.h.d[k.node].Load())
	if d == 0 {
		return false, nil
	}
	k.h.pending.Add(1)
	release := func() { k.h.pending.Add(-1) }
	t := time.NewTimer(d)
	select {
	case <-t.C:
		defer release()
		return true, send()
	case <-ctx.Done():
	}
	k.h.mu.Lock()
	if k.h.closing {
		k.h.mu.Unlock()
		t.Stop()
		release()
		return true, errors.Join(ctx.Err(), errors.New("redlocktest: the Net is closed"))
	}
	k.h.wg.Add(1)
	k.h.mu.Unlock()
	go func() {
		defer k.h.wg.Done()
		defer release()
		defer t.Stop()
		select {
		case <-t.C:
			abandon(k.h.stop)
		case <-k.h.stop.Done(): // closing: the request is dropped
		}
	}()
	return true, ctx.Err()
}
