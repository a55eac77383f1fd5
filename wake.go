package redlock

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// subscriber is what a node needs to deliver release notices.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// waker wakes waiting Acquire calls when the lock they wait for is released,
// so that handoff takes one round trip instead of a retry delay. It keeps
// one subscription connection per node for the whole client, subscribed to
// the channels of the names being waited for. A notice that names a waiter
// (the head of the name's queue, see queue.go) wakes that waiter if it is
// ours; any notice also wakes the local barging waiter that has waited
// longest, one per notice: waking them all would only have them split the
// vote among themselves. A notice is a hint, not a grant: the waiter still
// has to win the next attempt, and a lost notice costs one retry delay.
type waker struct {
	id      string // names this Client in queue entries: its release notices come on "<channel>:<id>"
	nodes   []node
	timeout time.Duration
	logger  *slog.Logger // nil: silent
	need    int          // notices naming a queued waiter that wake it: a quorum

	mu      sync.Mutex            // protects the fields below
	waiters map[string][]listener // channel -> waiters, longest waiting first
	idle    map[string]time.Time  // channel -> when its last waiter left, for a while
	live    map[string]int        // channel -> how many nodes' subscriptions to it are active
	kicks   []chan struct{}       // per node, buffered 1: the wanted set changed
	stop    chan struct{}         // closed by close
	closed  bool
	goes    *transport.Tracker // runs the per-node goroutines: the Client's, joined by Close
}

func newWaker(nodes []node, timeout time.Duration, logger *slog.Logger, goes *transport.Tracker) *waker {
	return &waker{id: newToken()[:11], nodes: nodes, timeout: timeout, logger: logger, need: quorumOf(len(nodes)), goes: goes,
		waiters: map[string][]listener{}, idle: map[string]time.Time{}, live: map[string]int{}}
}

// listener is one waiting Acquire call: id is its queue entry when it
// queues, "" when it barges.
type listener struct {
	id string
	ch chan struct{}
	st *waitState
}

// waitState is what the notices naming a queued waiter told it.
type waitState struct {
	seen   int      // notices naming it not yet acted on
	fences []uint64 // per node: the fence of the node's grant to it (release.lua), if granted
	grants []bool   // per node: the node granted it the key
}

// watch registers a waiter with id (see waiter) for releases on channel and
// returns the channel it is woken on, a func that returns the fences of the
// nodes whose releases granted it the key (see notify), a func that
// unregisters it, and whether notices on channel reached us from a quorum
// of the nodes already (see subscribed). The subscription is made in the
// background: watch never blocks on a node. When it becomes live on a
// quorum, every waiter on channel is woken once (see setLive).
func (w *waker) watch(channel, id string) (<-chan struct{}, func() []uint64, func(), bool) {
	return w.watchWith(channel, id, make(chan struct{}, 1))
}

// watchWith is watch with the channel the waiter is woken on: a set
// (multi.go) watches the channels of all its names with one.
func (w *waker) watchWith(channel, id string, ch chan struct{}) (<-chan struct{}, func() []uint64, func(), bool) {
	st := &waitState{fences: make([]uint64, len(w.nodes)), grants: make([]bool, len(w.nodes))}
	granted := func() []uint64 {
		w.mu.Lock()
		defer w.mu.Unlock()
		var fs []uint64
		for i, ok := range st.grants {
			if ok {
				fs = append(fs, st.fences[i])
			}
		}
		return fs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ch, granted, func() {}, false
	}
	w.startLocked()
	if len(w.waiters[channel]) == 0 {
		delete(w.idle, channel)
		w.kickLocked()
	}
	w.waiters[channel] = append(w.waiters[channel], listener{id: id, ch: ch, st: st})
	return ch, granted, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		q := w.waiters[channel]
		for i, c := range q {
			if c.ch == ch {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) > 0 {
			w.waiters[channel] = q
			return
		}
		delete(w.waiters, channel)
		w.idle[channel] = time.Now() // unsubscribed after subscriptionLinger (run)
	}, w.live[channel] >= w.need
}

// notify passes on node's notice on channel: the head's queue entry, or
// "<entry> <fence>" when the node's release granted the head the key. It
// wakes the waiter named, if it is ours, and the longest-waiting barging
// waiter on channel. Every node announces the same release, so one release
// brings up to N notices. A queued waiter is woken by the quorum-th notice
// naming it: only then can it take the lock from the grants, or its attempt
// win, where an earlier one would meet the old holder's key on too many
// nodes and fail. A barging waiter is woken by every notice (a wake-up is
// buffered once) and stays first in line until it gets the lock or gives up.
func (w *waker) notify(node int, channel, payload string) {
	head, fence, granted := strings.Cut(payload, " ")
	w.mu.Lock()
	defer w.mu.Unlock()
	barger := false
	for _, c := range w.waiters[channel] {
		if c.id != "" && c.id != head || c.id == "" && barger {
			continue
		}
		barger = barger || c.id == ""
		if c.id != "" {
			if f, err := strconv.ParseUint(fence, 10, 64); granted && err == nil && node < len(c.st.grants) {
				// A node grants a call again only after its earlier grant
				// expired; the key holds the latest, with the larger fence.
				c.st.grants[node], c.st.fences[node] = true, max(c.st.fences[node], f)
			}
			if c.st.seen++; c.st.seen < w.need {
				continue
			}
			c.st.seen = 0
		}
		poke(c.ch)
	}
}

// setLive counts one node's subscription to channel in (+1) or out (-1).
// When notices on channel start to reach us from a quorum, every waiter on
// it is woken: a release announced before then went unheard, and the
// waiter it named would otherwise sleep through its turn until its next
// poll.
func (w *waker) setLive(channel string, d int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.live[channel] += d; w.live[channel] <= 0 {
		delete(w.live, channel)
	}
	if d > 0 && w.live[channel] == w.need {
		for _, c := range w.waiters[channel] {
			poke(c.ch)
		}
	}
}

// subscribed reports whether notices on channel reach us from a quorum of
// the nodes: until then a waiter must not count on being woken.
func (w *waker) subscribed(channel string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live[channel] >= w.need
}

// close stops the subscriptions; their goroutines end soon after, and the
// Client's Close waits for them with the rest of its goroutines.
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
}

// notices is what one waiting Acquire call listens to: the release notices
// of its lock's name (see waker.watch). The zero value listens to nothing.
type notices struct {
	waker       *waker
	channel, id string          // what it listens on, and for (see Client.wakeOn)
	wake        <-chan struct{} // nil until it listens
	granted     func() []uint64
	unwatch     func()
	more        []string // a set's (multi.go): the channels of its other names, which wake it too
}

// listenEarly picks what a call of ls in the waiting order w listens for,
// and listens at once when notices on its channel reach us already (the
// subscription of an earlier call lingers): a release that came between
// the call's next refusal and its listening would go unheard, and the call,
// the head it named, would sleep through its turn until its poll.
func (n *notices) listenEarly(c *Client, ls *lease, w *waiter) {
	n.waker = c.waker
	n.channel, n.id = c.wakeOn(ls, w)
	n.more = c.wakeAlso(ls, w)
	if n.waker.subscribed(n.channel) {
		n.watch()
	}
}

// watch listens on the call's channel, and on a set's other channels with
// the same wake channel.
func (n *notices) watch() (missed bool) {
	ch := make(chan struct{}, 1)
	n.wake, n.granted, n.unwatch, missed = n.waker.watchWith(n.channel, n.id, ch)
	for _, more := range n.more {
		_, _, unwatch, _ := n.waker.watchWith(more, n.id, ch)
		first := n.unwatch
		n.unwatch = func() { first(); unwatch() }
	}
	return missed
}

// listen listens, if it does not yet, and reports whether a notice may
// have come before it did: notices reached us already, so one may have
// come since the attempt's refusal. Notices that reach us only later wake
// the call when they start to (waker.setLive).
func (n *notices) listen() (missed bool) {
	if n.wake != nil {
		return false
	}
	return n.watch()
}

// grants returns the fences of the nodes whose releases granted the call
// the key (see waker.notify).
func (n *notices) grants() []uint64 {
	if n.granted == nil {
		return nil
	}
	return n.granted()
}

// subscribed reports whether notices reach the call from a quorum.
func (n *notices) subscribed() bool { return n.waker.subscribed(n.channel) }

// stop ends the listening; n listens to nothing after it.
func (n *notices) stop() {
	if n.unwatch != nil {
		n.unwatch()
	}
	*n = notices{}
}
