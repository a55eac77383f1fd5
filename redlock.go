package redlock

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// Defaults for [Options].
const (
	DefaultDriftFactor = 0.01
	DefaultNodeTimeout = 100 * time.Millisecond
	DefaultKeyPrefix   = "redlock:"
)

// Options configures a [Client]. A nil *Options means all defaults; a zero
// field means that field's default. New copies the struct, so changing it
// afterwards has no effect.
type Options struct {
	// DriftFactor is the share of the TTL given up for clock drift between
	// this process and the nodes: validity = TTL - elapsed - (TTL*DriftFactor
	// + 2ms). Default 0.01. Must be in [0, 1).
	DriftFactor float64

	// NodeTimeout bounds one round trip to one node. A node that has not
	// answered by then counts as failed for that round, so a slow or dead
	// node delays no call by more than this. Keep it small next to the TTL.
	// Default 100ms; for each call it is capped at the TTL minus the drift
	// allowance, since a later answer could not make a valid lease anyway.
	NodeTimeout time.Duration

	// KeyPrefix is put before every key the client touches. The lock key
	// for name is KeyPrefix+"{"+name+"}" and its fence counter
	// KeyPrefix+"{"+name+"}:fence": the braces are a Redis Cluster hash tag,
	// so both keys live in one slot; the prefix has none of its own.
	// Default "redlock:".
	KeyPrefix string

	// OnEvent, if set, is called with every acquisition, wait, extend,
	// release and loss of the client's locks (see [Event]), synchronously,
	// in the goroutine that made it: the watchdog's for automatic extends,
	// the deadline timer's for a loss at the deadline. It must return
	// quickly and must not call the lock's methods. Default nil: nothing
	// is reported.
	//
	// ctx is the context of the call that caused the event: Acquire's (or
	// TryAcquire's, Do's, Resume's, Reenter's) for its acquire, wait and
	// node events; Extend's and Release's for theirs. Events no call
	// causes — the watchdog's rounds, a loss, the node answers of either —
	// get the lock's own context: the one of the call that made the lock,
	// without its cancellation or deadline (its values, such as a trace
	// span, are kept for the lock's life). So an observer can put its spans
	// in the caller's trace. The context may have ended by the time a node
	// answers; an observer must not block on it.
	OnEvent func(ctx context.Context, e Event)

	// Logger, if set, receives what no call returns, at level Warn: a
	// node's failure to delete a released key after Release returned (a
	// straggler), a failed cleanup of a failed attempt, a failed
	// subscription to release notices, and a watchdog round that missed
	// its quorum and will be retried. Default nil: nothing is logged.
	Logger *slog.Logger
}

// Client acquires locks on a fixed set of independent Redis nodes. It is
// safe for concurrent use; create one per set of nodes with [New] and share
// it. A Client not made by New (a zero Client, or a nil *Client) has no
// nodes: every method that returns an error returns [ErrNotNew].
type Client struct {
	nodes  []node
	links  []transport.Node // the nodes as rounds send to them, in the same order
	quorum int
	opts   Options
	clock  clock
	waker  *waker
	turns  turns             // local queue per lock name
	hints  permitHints       // per semaphore, the slot to try first (permit_wait.go)
	goes   transport.Tracker // every goroutine that outlives its call: joined by Close

	// life is cancelled by Close: it stops the watchdogs.
	life     context.Context
	stopLife context.CancelFunc

	closed atomic.Bool // set by Close

	// sharedValue makes every attempt of a call write the bare token, as
	// before values were per attempt: the negative control of the chaos
	// row that shows why they are (set only by tests, export_test.go).
	sharedValue bool
}

// New returns a Client over nodes, each an independent Redis master: a
// standalone client, a Sentinel failover client or a Cluster client each
// count as one node. A lock needs a majority of them (len(nodes)/2+1). One
// node gives the classic single-instance lock. The clients stay the
// caller's: Close does not close them.
//
// New reports a bad configuration at once, saying what to change: no
// nodes, a nil node, or one node listed twice (the same client, or two
// clients with the same address, which would let one server cast two
// votes). Two different addresses of one server (a host name and its IP
// address, a DNS alias, a forwarded port) cannot be told apart without
// asking the server, and are not detected: list each server once.
func New(nodes []redis.UniversalClient, opts *Options) (*Client, error) {
	ns := make([]Node, len(nodes))
	for i, n := range nodes {
		if isNil(n) {
			return nil, invalidf("redlock: node %d is nil: pass a connected Redis client for every node", i)
		}
		ns[i] = n
	}
	return NewWithNodes(ns, opts)
}

// Node is what a lock needs of one Redis node: running its Lua scripts
// (EVALSHA, and EVAL after NOSCRIPT). Every go-redis client is one; so is a
// wrapper that adds tracing, metrics or fault injection around one. A node
// that can also subscribe (a Subscribe(ctx, channels...) *redis.PubSub
// method, as every go-redis client has) lets waiters be woken by release
// notices; without it they find a released lock by their retry delays.
type Node interface {
	redis.Scripter
}

// NewWithNodes is [New] for nodes given as the narrow [Node] interface.
func NewWithNodes(nodes []Node, opts *Options) (*Client, error) {
	if len(nodes) == 0 {
		return nil, invalidf("redlock: no nodes: pass at least one Redis client (three or five independent masters tolerate one or two failures)")
	}
	ns := make([]node, len(nodes))
	for i, n := range nodes {
		if isNil(n) {
			return nil, invalidf("redlock: node %d is nil: pass a connected Redis client for every node", i)
		}
		sub, _ := n.(subscriber)
		ns[i] = node{addr: nodeAddr(n), client: n, sub: sub}
	}
	if err := checkDistinct(nodes); err != nil {
		return nil, err
	}
	return newClient(ns, opts)
}

var _ Node = redis.UniversalClient(nil)

func newClient(nodes []node, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case math.IsNaN(o.DriftFactor) || o.DriftFactor < 0 || o.DriftFactor >= 1:
		return nil, invalidf("redlock: DriftFactor %v is out of range: use a value in [0, 1), typically 0.01 (0 means the default)", o.DriftFactor)
	case o.NodeTimeout < 0:
		return nil, invalidf("redlock: NodeTimeout %v is negative: use a small positive duration such as 50ms (0 means the default %v)", o.NodeTimeout, DefaultNodeTimeout)
	case strings.ContainsAny(o.KeyPrefix, "{}"):
		return nil, invalidf("redlock: KeyPrefix %q contains '{' or '}': the braces after it are each name's Redis Cluster hash tag; leave braces out", o.KeyPrefix)
	}
	if o.DriftFactor == 0 {
		o.DriftFactor = DefaultDriftFactor
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	c := &Client{nodes: nodes, quorum: quorumOf(len(nodes)), opts: o, clock: realClock{}}
	c.life, c.stopLife = context.WithCancel(context.Background())
	c.links = make([]transport.Node, len(nodes))
	for i, n := range nodes {
		c.links[i] = transport.Node{Client: n.client, Sender: transport.NewSender(n.client, &c.goes, c.life)}
	}
	c.waker = newWaker(nodes, o.NodeTimeout, o.Logger, &c.goes)
	return c, nil
}

// Close stops the client's background work and waits for it. Watchdogs
// stop at once: their locks stay valid until their deadlines, and can still
// be extended by hand and released. The subscriptions to release notices
// end. Node calls still running (the slow minority of a round already
// decided: straggler releases, late answers and the cleanups these start)
// are waited for, for at most twice the node timeout: a call started before
// Close ends within one node timeout, and a cleanup its late answer starts
// within another. What still runs then (a node that go-redis does not
// abandon at its deadline) is logged and left to finish on its own.
//
// Acquire calls in progress stop waiting at once, wherever they wait (see
// [Client.Acquire]): each takes its entries out of the nodes' queues,
// deletes what an attempt or a release's grant won for it after Close
// began, and returns an error matching [ErrClosed] and [ErrNotAcquired].
// Close does not wait for them; each returns within a few node timeouts,
// at worst. No lock won after Close began is returned.
//
// After Close, Acquire fails with [ErrClosed], and Release waits for every
// node (or the node timeout), since no straggler could be joined. Close
// does not close the node clients. Calling it again does nothing. On a
// Client not made by New it returns [ErrNotNew].
func (c *Client) Close() error {
	if err := c.made(); err != nil {
		return err
	}
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.stopLife()
	c.waker.close()
	t := time.NewTimer(2 * c.opts.NodeTimeout)
	defer t.Stop()
	select {
	case <-c.goes.Idle():
	case <-t.C:
		c.warn("redlock: Close: node calls still running after twice the node timeout; they end when their nodes answer",
			"running", c.goes.Running(), "node_timeout", c.opts.NodeTimeout)
	}
	return nil
}

// made returns ErrNotNew if c was not made by New: a nil *Client, or a zero
// Client (New always sets life). Every exported method that can fail calls
// it first.
func (c *Client) made() error {
	if c == nil || c.life == nil {
		return ErrNotNew
	}
	return nil
}

// isClosed reports whether Close has been called.
func (c *Client) isClosed() bool { return c.closed.Load() }

// warn logs msg if the client has a logger.
func (c *Client) warn(msg string, args ...any) {
	if c.opts.Logger != nil {
		c.opts.Logger.Warn(msg, args...)
	}
}

// Quorum is the number of nodes a lock needs: len(nodes)/2 + 1; 0 for a
// Client not made by New.
func (c *Client) Quorum() int {
	if c.made() != nil {
		return 0
	}
	return c.quorum
}

// Keys returns the lock key and the fence counter key used for name; two
// empty strings for a Client not made by New, which has no key prefix.
func (c *Client) Keys(name string) (lockKey, fenceKey string) {
	if c.made() != nil {
		return "", ""
	}
	k := c.keys(name)
	return k.lock, k.fence
}

// untilClosed returns ctx, ended also when Close begins, and the func that
// releases it: every wait of an Acquire call (its local turn, an attempt's
// round, the pause between attempts) ends at Close. The cleanups after it
// run regardless of ctx. See stopped for why it ended.
func (c *Client) untilClosed(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(c.life, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

// stopped returns why an Acquire call must stop: [ErrClosed] once Close has
// begun, else ctx's error; nil when neither.
func (c *Client) stopped(ctx context.Context) error {
	if c.isClosed() {
		return ErrClosed
	}
	return ctx.Err()
}
