package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	d       []atomic.Int64                              // per node: how long requests are held; 0: not held
	by      []atomic.Pointer[func([]any) time.Duration] // per node: how long each request is held, when d is 0
	pending atomic.Int64                                // held requests not answered yet

	mu      sync.Mutex // protects closing; orders wg.Add before wg.Wait
	closing bool
	wg      sync.WaitGroup // the goroutines sending abandoned held requests
	stop    context.Context
	cancel  context.CancelFunc
}

func newHolds(n int) *holds {
	h := &holds{d: make([]atomic.Int64, n), by: make([]atomic.Pointer[func([]any) time.Duration], n)}
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

// HoldRequestsBy holds each request that this Net's clients send to node i
// for the time hold returns for its arguments (the command's, as
// redis.Cmder.Args gives them), as HoldRequests holds every request; a
// command that gets 0 is not held. The commands of one pipeline that get
// different times go as pipelines of their own, each after its time. It lets a test hold one request (an
// attempt's acquire, its cleanup) and not the next, however close they go.
// A nil hold stops it (so does Heal); HoldRequests with d > 0 takes
// precedence while it lasts. It fails after Close.
func (n *Net) HoldRequestsBy(i int, hold func(args []any) time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.errClosed()
	}
	var p *func([]any) time.Duration
	if hold != nil {
		p = &hold
	}
	if old := n.holds.by[i].Swap(p); (old == nil) != (p == nil) {
		if old != nil {
			n.log.ended(i, history.FaultHold, "by request")
		} else {
			n.log.began(i, history.FaultHold, "by request")
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
		held, err := k.hold(ctx, k.h.delay(k.node, cmd), func() error { return next(ctx, cmd) },
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
		groups := k.h.split(k.node, cmds)
		if len(groups) == 1 {
			return k.pipeline(ctx, next, groups[0].d, cmds)
		}
		// Requests of one pipeline held for different times each go as a
		// pipeline of their own, after their own hold: a request the
		// function does not pick is not held behind one it does.
		errs := make([]error, len(groups))
		var wg sync.WaitGroup
		for i, g := range groups {
			wg.Go(func() { errs[i] = k.pipeline(ctx, next, g.d, g.cmds) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

// pipeline sends cmds through next after holding them for d (not at all
// when d is 0).
func (k holdHook) pipeline(ctx context.Context, next redis.ProcessPipelineHook, d time.Duration, cmds []redis.Cmder) error {
	held, err := k.hold(ctx, d, func() error { return next(ctx, cmds) },
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

// heldGroup is the commands of a pipeline held for d.
type heldGroup struct {
	d    time.Duration
	cmds []redis.Cmder
}

// split groups cmds, one pipeline to node i, by how long each is held: one
// group for all of them under HoldRequests, or when HoldRequestsBy gives
// each the same time.
func (h *holds) split(i int, cmds []redis.Cmder) []heldGroup {
	if d := time.Duration(h.d[i].Load()); d > 0 || h.by[i].Load() == nil {
		return []heldGroup{{d: d, cmds: cmds}}
	}
	var groups []heldGroup
	for _, c := range cmds {
		d := h.delay(i, c)
		j := slices.IndexFunc(groups, func(g heldGroup) bool { return g.d == d })
		if j < 0 {
			groups, j = append(groups, heldGroup{d: d}), len(groups)
		}
		groups[j].cmds = append(groups[j].cmds, c)
	}
	return groups
}

// delay returns how long cmd, a request to node i, is held: the node's
// HoldRequests duration, or what HoldRequestsBy gives it.
func (h *holds) delay(i int, cmd redis.Cmder) time.Duration {
	if d := time.Duration(h.d[i].Load()); d > 0 {
		return d
	}
	if by := h.by[i].Load(); by != nil {
		return (*by)(cmd.Args())
	}
	return 0
}

// hold holds one request for d if d > 0 (held true): it waits the
// hold and then sends it with send, in the caller's goroutine, or, if ctx
// ends first, returns ctx's error and leaves the request to a goroutine of
// the Net that sends a copy of it with abandon when the hold is over.
func (k holdHook) hold(ctx context.Context, d time.Duration, send func() error, abandon func(context.Context)) (held bool, err error) {
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
