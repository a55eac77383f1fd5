package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscriber is what a node needs to deliver release notices.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// releaseChannel is the pub/sub channel on which releases of key are
// announced (see release.lua).
func (c *Client) releaseChannel(key string) string {
	return c.opts.KeyPrefix + "released:" + key
}

// waker wakes waiting Acquire calls when the lock they wait for is released,
// so that handoff takes one round trip instead of a retry delay. It keeps
// one subscription connection per node for the whole client, subscribed to
// the channels of the names being waited for. A notice wakes the local
// waiter that has waited longest, one per notice: waking them all would only
// have them split the vote among themselves. A notice is a hint, not a
// grant: the waiter still has to win the next attempt, and a lost notice
// costs one retry delay.
type waker struct {
	nodes   []node
	timeout time.Duration

	mu      sync.Mutex                 // protects the fields below
	waiters map[string][]chan struct{} // channel -> waiters, longest waiting first
	kicks   []chan struct{}            // per node, buffered 1: the wanted set changed
	stop    chan struct{}              // closed by close
	closed  bool
	wg      sync.WaitGroup // joins the per-node goroutines
}

func newWaker(nodes []node, timeout time.Duration) *waker {
	return &waker{nodes: nodes, timeout: timeout, waiters: map[string][]chan struct{}{}}
}

// watch registers a waiter for releases on channel and returns the channel
// it is woken on and a func that unregisters it. The subscription is made in
// the background: watch never blocks on a node.
func (w *waker) watch(channel string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ch, func() {}
	}
	w.startLocked()
	if len(w.waiters[channel]) == 0 {
		w.kickLocked()
	}
	w.waiters[channel] = append(w.waiters[channel], ch)
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		q := w.waiters[channel]
		for i, c := range q {
			if c == ch {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) > 0 {
			w.waiters[channel] = q
			return
		}
		delete(w.waiters, channel)
		w.kickLocked()
	}
}

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
			w.wg.Add(1)
			go w.run(n.sub, w.kicks[i])
		}
	}
}

func (w *waker) kickLocked() {
	for _, k := range w.kicks {
		select {
		case k <- struct{}{}:
		default: // a kick is pending already; it will see the new set
		}
	}
}

// run owns node's subscription: it brings the subscribed channels in line
// with the wanted set whenever kicked, and passes notices on.
func (w *waker) run(sub subscriber, kick chan struct{}) {
	defer w.wg.Done()
	ctx := context.Background()
	ps := sub.Subscribe(ctx)
	defer ps.Close()
	msgs := ps.Channel()
	have := map[string]bool{}
	for {
		select {
		case <-w.stop:
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			w.notify(m.Channel)
		case <-kick:
			w.mu.Lock()
			var add, drop []string
			for c := range w.waiters {
				if !have[c] {
					add = append(add, c)
				}
			}
			for c := range have {
				if len(w.waiters[c]) == 0 {
					drop = append(drop, c)
				}
			}
			w.mu.Unlock()
			sctx, cancel := context.WithTimeout(ctx, w.timeout)
			if len(add) > 0 {
				if ps.Subscribe(sctx, add...) == nil {
					for _, c := range add {
						have[c] = true
					}
				} else {
					// The node is down or slow: try again later. Until
					// then its waiters rely on their retry delays.
					time.AfterFunc(10*w.timeout, func() {
						select {
						case kick <- struct{}{}:
						default:
						}
					})
				}
			}
			if len(drop) > 0 && ps.Unsubscribe(sctx, drop...) == nil {
				for _, c := range drop {
					delete(have, c)
				}
			}
			cancel()
		}
	}
}

// notify wakes the longest-waiting waiter on channel. Every node announces
// the same release, so one release brings up to N notices: they all go to
// the same waiter (its wake-up is buffered once), who stays first in line
// until it gets the lock or gives up.
func (w *waker) notify(channel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.waiters[channel]
	if len(q) == 0 {
		return
	}
	select {
	case q[0] <- struct{}{}:
	default: // woken already and not yet back
	}
}

// close stops the subscriptions and joins their goroutines.
func (w *waker) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	if w.stop != nil {
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
}
