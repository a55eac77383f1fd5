package redlock

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// The waker's subscriptions: one goroutine per node owns that node's
// subscription connection, brings the subscribed channels in line with the
// names being waited for, and passes the notices it reads on to notify
// (wake.go).

// startLocked starts one goroutine per node that can subscribe, once.
func (w *waker) startLocked() {
	if w.stop != nil {
		return
	}
	w.stop = make(chan struct{})
	w.kicks = make([]chan struct{}, len(w.nodes))
	for i, n := range w.nodes {
		w.kicks[i] = make(chan struct{}, 1)
		if n.sub != nil {
			kick := w.kicks[i]
			w.goes.Go(func() { w.run(i, n, kick) })
		}
	}
}

// open starts the per-node goroutines, once; each connects at once (read
// waits on its subscription from the start). The first Acquire call that
// may wait opens them, contended or not, so that the Client's first wait
// costs one SUBSCRIBE round per node, not a dial and a handshake on top. A
// Client that never waits (try-locks only) opens none.
func (w *waker) open() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.startLocked()
	}
}

func (w *waker) kickLocked() {
	for _, k := range w.kicks {
		poke(k) // (a kick pending already will see the new set)
	}
}

// run owns node's subscription: it brings the subscribed channels in line
// with the wanted set whenever kicked, and passes notices on.
func (w *waker) run(i int, n node, kick chan struct{}) {
	ctx := context.Background()
	ps := n.sub.Subscribe(ctx)
	read := make(chan struct{})
	w.goes.Go(func() {
		defer close(read)
		w.read(i, ps)
	})
	defer func() {
		_ = ps.Close() // ends read
		<-read
	}()
	linger := time.NewTicker(subscriptionLinger)
	defer linger.Stop()
	have := map[string]bool{}
	for {
		select {
		case <-w.stop:
			return
		case <-linger.C:
			w.mu.Lock()
			for c, t := range w.idle {
				if time.Since(t) >= subscriptionLinger {
					delete(w.idle, c)
				}
			}
			w.mu.Unlock()
			poke(kick) // drop what has been idle long enough
		case <-kick:
			w.mu.Lock()
			var add, drop []string
			for c := range w.waiters {
				if !have[c] {
					add = append(add, c)
				}
			}
			for c := range have {
				if _, recent := w.idle[c]; len(w.waiters[c]) == 0 && !recent {
					drop = append(drop, c)
				}
			}
			w.mu.Unlock()
			sctx, cancel := context.WithTimeout(ctx, w.timeout)
			if len(add) > 0 {
				if err := ps.Subscribe(sctx, add...); err == nil {
					for _, c := range add {
						have[c] = true
						w.setLive(c, 1)
					}
				} else {
					// The node is down or slow: try again later. Until
					// then its waiters rely on their retry delays.
					if w.logger != nil {
						w.logger.Warn("redlock: subscribing to release notices failed; waiters fall back to their retry delays until a retry succeeds",
							"addr", n.addr, "retry_in", 10*w.timeout, "err", err)
					}
					time.AfterFunc(10*w.timeout, func() { poke(kick) })
				}
			}
			if len(drop) > 0 && ps.Unsubscribe(sctx, drop...) == nil {
				for _, c := range drop {
					delete(have, c)
					w.setLive(c, -1)
				}
			}
			cancel()
		}
	}
}

// read passes node i's notices on as they come, until ps is closed. It
// reads the subscription itself rather than through ps.Channel, whose
// forwarding goroutine would add one more hand-over to the path of every
// handoff. As ps.Channel does, it pings a subscription that has been
// silent for pubsubPing (go-redis reconnects and subscribes again when the
// connection fails) and pauses between failures in a row.
func (w *waker) read(i int, ps *redis.PubSub) {
	receiveMessages(context.Background(), ps, w.stop, func(m *redis.Message) { w.notify(i, m.Channel, m.Payload) })
}

// receiveMessages passes every message of ps to on until ps is closed, ctx
// ends or stop is closed (nil: never): the waker's notices and Observe's
// announces. It pings a subscription silent for pubsubPing and pauses
// between failures in a row (redialPause).
func receiveMessages(ctx context.Context, ps *redis.PubSub, stop <-chan struct{}, on func(*redis.Message)) {
	failures := 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, pubsubPing)
		var nerr net.Error
		switch {
		case ctx.Err() != nil || errors.Is(err, redis.ErrClosed):
			return
		case errors.As(err, &nerr) && nerr.Timeout():
			_ = ps.Ping(ctx) // its answer, or the failure, comes to ReceiveTimeout
			continue
		case err != nil:
			if failures++; failures > 1 {
				select {
				case <-ctx.Done():
					return
				case <-stop:
					return
				case <-time.After(redialPause(failures)):
				}
			}
			continue
		}
		failures = 0
		if m, ok := msg.(*redis.Message); ok {
			on(m)
		}
	}
}

// redialPause is how long read pauses after the given number of failures
// in a row (the first is retried at once): 100 ms, doubling up to a second.
// A node that is down is then dialled about once a second by every Client
// that has waited, not ten times; notices from it resume within a second
// of its return (its waiters poll meanwhile).
func redialPause(failures int) time.Duration {
	return min(100*time.Millisecond<<min(failures-2, 4), time.Second)
}

// pubsubPing is how long a silent subscription goes before read pings it.
const pubsubPing = time.Minute

// subscriptionLinger is how long a channel stays subscribed after its last
// waiter left: a name contended in a loop (each Acquire call watching anew)
// then keeps its subscription instead of unsubscribing and subscribing
// again on every call, which costs two round trips per node and leaves a
// window in which a release notice is lost.
const subscriptionLinger = time.Second
