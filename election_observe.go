package redlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// ObserveOptions configures one [Client.Observe]. A nil *ObserveOptions
// means the defaults.
type ObserveOptions struct {
	// Interval is how often the leader is read when no notice comes: the
	// fallback that finds a leadership that expired (a leader that crashed
	// announces nothing) and changes whose notices were lost. Default
	// [DefaultObserveInterval]; negative is refused ([ErrInvalid]). It does
	// not depend on the election's TTL.
	Interval time.Duration
}

// DefaultObserveInterval is the default [ObserveOptions].Interval.
const DefaultObserveInterval = time.Second

// observeSettle is how soon after a notice the leader is read once more (a
// release is announced before the next candidate has taken the lock), and
// after a new leader without a term (its record may be on its way).
const observeSettle = 100 * time.Millisecond

// observeMark is how often an observer marks the election's name on each
// node it listens to (mark.lua): the mark lives queueTTL after each
// marking, and while it lives a release nobody queues for announces itself
// (release.lua), as it does for a barging waiter.
const observeMark = queueTTL / 2

// Observe follows the leader of the election name until ctx ends or the
// Client is closed, and sends each change on the returned channel, which
// is closed then. The first entry is the leader when Observe first reads
// it (or Held false: nobody leads). After it, an entry comes for every
// change of leader a read shows (another holder of the election's lock,
// told apart by its lock's token, not by its term: a leader whose term is
// lower than one sent before is still sent), when the election becomes
// leaderless, and when a leader sent with Term 0 is read with its term. A
// new leader that has recorded no term (see [Client.Leader]) is read again
// a moment later (100ms), since a Campaign records its term one round trip
// after it won, and sent with Term 0 if that read still finds it so. A
// read that finds fewer than a quorum of the nodes answering sends
// nothing.
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
// name, a nil ctx or a bad option ([ErrInvalid]), or a Client closed before
// the call ([ErrClosed]).
func (c *Client) Observe(ctx context.Context, name string, opts *ObserveOptions) (<-chan LeaderInfo, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "Observe"); err != nil {
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
		return nil, invalidf("redlock: ObserveOptions.Interval %v is negative: use a positive interval such as 1s (0 means the default)", o.Interval)
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
			c.goes.Go(func() { c.listen(ctx, n, channels, k.lock+":b", kick) })
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
		sent   bool       // out has had an entry
		last   LeaderInfo // the last entry sent
		holder string     // the token of last's leader ("" when none)
		// A new leader without a term, first read at since, is sent only
		// once a read observeSettle later still finds it so: its
		// Campaign's record may be on its way.
		termless string
		since    time.Time
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
		info, h, err := c.leader(ctx, name)
		if err != nil {
			continue // unknown: nothing to tell
		}
		if settle := min(observeSettle, interval); info.Held && info.Term == 0 && h != holder {
			if now := c.clock.Now(); h != termless {
				termless, since = h, now
				poll.Reset(settle) // read it again soon
				continue
			} else if now.Sub(since) < settle {
				continue
			}
		}
		if sent && info.Held == last.Held && h == holder && (info.Term == last.Term || info.Term == 0) {
			continue // the same leader (a term once read stays)
		}
		select {
		case out <- *info:
		case <-ctx.Done():
			return
		}
		sent, last, holder = true, *info, h
	}
}

// listen owns node n's subscription to channels for one Observe: it pokes
// kick on every notice, and once subscribed marks the name (mark) every
// observeMark, until ctx ends; then it closes the subscription and waits
// for its reader.
func (c *Client) listen(ctx context.Context, n node, channels []string, mark string, kick chan struct{}) {
	ps := n.sub.Subscribe(context.Background()) // no channels yet: no connection
	read := make(chan struct{})
	subscribed := make(chan struct{})
	c.goes.Go(func() {
		defer close(read)
		c.receive(ctx, ps, channels, subscribed, kick)
	})
	select {
	case <-subscribed:
	case <-ctx.Done():
	}
	every := time.NewTicker(observeMark)
	defer every.Stop()
	for ctx.Err() == nil {
		// A lost mark is a lost notice: the next poll finds the change.
		mctx, cancel := context.WithTimeout(ctx, c.opts.NodeTimeout)
		_ = markScript.Run(mctx, n.client, []string{mark}, queueTTLArg).Err()
		cancel()
		select {
		case <-every.C:
		case <-ctx.Done():
		}
	}
	_ = ps.Close() // ends receive
	<-read
}

// receive subscribes ps to channels, retrying while the node is down, then
// pokes kick on every notice until ps is closed. go-redis reconnects and
// subscribes again after a broken connection; a notice lost meanwhile is
// found by follow's polls.
func (c *Client) receive(ctx context.Context, ps *redis.PubSub, channels []string, subscribed chan<- struct{}, kick chan struct{}) {
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
	close(subscribed)
	receiveMessages(ctx, ps, nil, func(*redis.Message) { poke(kick) })
}
