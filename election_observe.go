package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ObserveOptions configures one [Client.Observe]. A nil *ObserveOptions
// means the defaults.
type ObserveOptions struct {
	// Interval is how often the leader is read when no notice comes: the
	// fallback that finds a leadership that expired (a leader that crashed
	// announces nothing) and changes whose notices were lost. Default
	// [DefaultObserveInterval]. It does not depend on the election's TTL.
	Interval time.Duration
}

// DefaultObserveInterval is the default [ObserveOptions].Interval.
const DefaultObserveInterval = time.Second

// observeSettle is how soon after a notice the leader is read once more: a
// release is announced before the next candidate has taken the lock.
const observeSettle = 100 * time.Millisecond

// Observe follows the leader of the election name until ctx ends or the
// Client is closed, and sends each change on the returned channel, which
// is closed then. The first entry is the leader when Observe first reads
// it (or Held false: nobody leads); after it, an entry comes when the term
// changes or the election becomes leaderless, and it never carries a term
// lower than one already sent (a stale read is skipped). A read that finds
// fewer than a quorum of the nodes answering sends nothing.
//
// It reads the leader with [Client.Leader] on every notice, from every
// node that can subscribe, on the election's channel (Campaign's
// announces) and the lock's release channel; again shortly after each
// notice; and every [ObserveOptions].Interval in any case. The channel is
// unbuffered: the observer waits for the receiver, and reads the leader
// anew once it is received, so a slow receiver misses intermediate
// leaders, never the latest. Receive until the channel is closed, or end
// ctx.
//
// The goroutines Observe starts are the Client's: they end when ctx ends or
// on [Client.Close], which waits for them. Observe fails at once for a bad
// name, a Client closed before the call ([ErrClosed]) or a bad option.
func (c *Client) Observe(ctx context.Context, name string, opts *ObserveOptions) (<-chan LeaderInfo, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	var o ObserveOptions
	if opts != nil {
		o = *opts
	}
	if o.Interval < 0 {
		return nil, errors.New("redlock: ObserveOptions.Interval is negative: use a positive interval such as 1s (0 means the default)")
	}
	if o.Interval == 0 {
		o.Interval = DefaultObserveInterval
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.life, cancel) // Close ends it
	out := make(chan LeaderInfo)
	kick := make(chan struct{}, 1)
	k := c.keys(name)
	channels := []string{electedChannel(k), k.channel}
	for _, n := range c.nodes {
		if n.sub != nil {
			c.goes.Go(func() { c.listen(ctx, n, channels, kick) })
		}
	}
	c.goes.Go(func() {
		defer close(out)
		defer stop()
		defer cancel()
		c.follow(ctx, name, o.Interval, kick, out)
	})
	return out, nil
}

// follow reads the leader of name on each kick, observeSettle after it,
// and every interval, and sends the changes on out, until ctx ends.
func (c *Client) follow(ctx context.Context, name string, interval time.Duration, kick <-chan struct{}, out chan<- LeaderInfo) {
	var (
		sent bool       // out has had an entry
		last LeaderInfo // the last entry sent
		term uint64     // the highest term sent
		// A leader whose term is not recorded yet (see Client.Leader) is
		// sent only once a read at least interval later still finds it
		// so: its recorded term comes one round trip after it won, and the
		// counters' term may be higher.
		unannounced      uint64
		unannouncedSince time.Time
	)
	poll := time.NewTimer(0) // the first read at once
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			poll.Reset(interval)
		case <-kick:
			poll.Reset(min(observeSettle, interval))
		}
		info, announced, err := c.leader(ctx, name)
		if err != nil {
			continue // unknown: nothing to tell
		}
		if info.Held && !announced {
			if now := c.clock.Now(); info.Term != unannounced {
				unannounced, unannouncedSince = info.Term, now
				continue
			} else if now.Sub(unannouncedSince) < interval {
				continue
			}
		}
		changed := !sent || info.Held != last.Held || info.Held && info.Term != last.Term
		if !changed || info.Held && info.Term < term {
			continue
		}
		select {
		case out <- *info:
		case <-ctx.Done():
			return
		}
		sent, last, term = true, *info, max(term, info.Term)
	}
}

// listen owns node n's subscription to channels for one Observe: it pokes
// kick on every notice until ctx ends, then closes the subscription and
// waits for its reader.
func (c *Client) listen(ctx context.Context, n node, channels []string, kick chan struct{}) {
	ps := n.sub.Subscribe(context.Background()) // no channels yet: no connection
	read := make(chan struct{})
	c.goes.Go(func() {
		defer close(read)
		c.receive(ctx, ps, channels, kick)
	})
	<-ctx.Done()
	_ = ps.Close() // ends receive
	<-read
}

// receive subscribes ps to channels, retrying while the node is down, then
// pokes kick on every notice until ps is closed. go-redis reconnects and
// subscribes again after a broken connection; a notice lost meanwhile is
// found by follow's polls.
func (c *Client) receive(ctx context.Context, ps *redis.PubSub, channels []string, kick chan struct{}) {
	for failures := 2; ; failures++ {
		sctx, cancel := context.WithTimeout(ctx, c.opts.NodeTimeout)
		err := ps.Subscribe(sctx, channels...)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(redialPause(failures)):
		}
	}
	receiveMessages(ctx, ps, nil, func(*redis.Message) { poke(kick) })
}
