package redlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults for [Options].
const (
	DefaultDriftFactor = 0.01
	DefaultNodeTimeout = 100 * time.Millisecond
	DefaultKeyPrefix   = "redlock:"
)

// MaxNameLen is the longest lock name Acquire accepts, in bytes.
const MaxNameLen = 512

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
	// so both keys live in one slot. Default "redlock:".
	KeyPrefix string

	// Observe, if set, is called with every acquisition, extend, release
	// and loss of the client's locks (see [Event]), synchronously, in the
	// goroutine that made it: the watchdog's for automatic extends, the
	// deadline timer's for a loss at the deadline. It must return quickly
	// and must not call the lock's methods. Default nil: nothing is
	// reported.
	Observe func(Event)

	// Logger, if set, receives what no call returns, at level Warn: a
	// node's failure to delete a released key after Release returned (a
	// straggler), a failed cleanup of a failed attempt, a failed
	// subscription to release notices, and a watchdog round that missed
	// its quorum and will be retried. Default nil: nothing is logged.
	Logger *slog.Logger
}

// Client acquires locks on a fixed set of independent Redis nodes. It is
// safe for concurrent use; create one per set of nodes and share it.
type Client struct {
	nodes  []node
	quorum int
	opts   Options
	clock  clock
	waker  *waker
	turns  turns   // local queue per lock name
	goes   tracker // every goroutine that outlives its call: joined by Close

	// life is cancelled by Close: it stops the watchdogs.
	life     context.Context
	stopLife context.CancelFunc

	closed atomic.Bool // set by Close

	// sharedValue makes every attempt of a call write the bare token, as
	// before values were per attempt: the negative control of the chaos
	// row that shows why they are (set only by tests, export_test.go).
	sharedValue bool
}

// node is one Redis node as the lock sees it: something that can run
// scripts, and maybe subscribe to release notices.
type node struct {
	addr   string
	client redis.Scripter
	sub    subscriber // nil when the node cannot subscribe
	send   *sender    // nil when the node cannot pipeline: each call then runs on its own
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
			return nil, fmt.Errorf("redlock: node %d is nil: pass a connected Redis client for every node", i)
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
		return nil, errors.New("redlock: no nodes: pass at least one Redis client (three or five independent masters tolerate one or two failures)")
	}
	ns := make([]node, len(nodes))
	for i, n := range nodes {
		if isNil(n) {
			return nil, fmt.Errorf("redlock: node %d is nil: pass a connected Redis client for every node", i)
		}
		sub, _ := n.(subscriber)
		ns[i] = node{addr: nodeAddr(n), client: n, sub: sub}
	}
	if err := checkDistinct(nodes); err != nil {
		return nil, err
	}
	return newClient(ns, opts)
}

// isNil reports whether n is nil, or an interface holding a nil pointer
// (a *redis.Client never set).
func isNil(n any) bool {
	if n == nil {
		return true
	}
	switch v := reflect.ValueOf(n); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// checkDistinct says which nodes are listed twice: the same client, or
// clients that share an address as far as their options tell (see
// endpoints).
func checkDistinct(nodes []Node) error {
	seen := map[string]int{}
	for i, n := range nodes {
		var ids []string
		if v := reflect.ValueOf(n); v.Kind() == reflect.Pointer {
			ids = append(ids, fmt.Sprintf("the same %T", n)+"\x00"+strconv.FormatUint(uint64(v.Pointer()), 16))
		}
		ids = append(ids, endpoints(n)...)
		for _, id := range ids {
			if j, dup := seen[id]; dup && j != i {
				what, _, _ := strings.Cut(id, "\x00")
				return fmt.Errorf("redlock: nodes %d and %d are one Redis node (%s): list each node once, or one server would cast two votes", j, i, what)
			}
			seen[id] = i
		}
	}
	return nil
}

// endpoints returns the network addresses n's options name ("address
// <network>/<address>"): one for a standalone client, every seed of a
// Cluster client, every shard of a Ring. A Sentinel failover client names
// none (its master is found through the sentinels), nor does a node that
// is not a go-redis client.
func endpoints(n Node) []string {
	id := func(network, addr string) string {
		if network == "" {
			network = "tcp"
		}
		return "address " + network + "/" + addr
	}
	var ids []string
	switch v := n.(type) {
	case *redis.Client:
		if o := v.Options(); o.Addr != "FailoverClient" {
			ids = append(ids, id(o.Network, o.Addr))
		}
	case *redis.ClusterClient:
		for _, a := range v.Options().Addrs {
			ids = append(ids, id("tcp", a))
		}
	case *redis.Ring:
		for _, a := range v.Options().Addrs {
			ids = append(ids, id("tcp", a))
		}
	}
	return ids
}

var _ Node = redis.UniversalClient(nil)

func newClient(nodes []node, opts *Options) (*Client, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case math.IsNaN(o.DriftFactor) || o.DriftFactor < 0 || o.DriftFactor >= 1:
		return nil, fmt.Errorf("redlock: DriftFactor %v is out of range: use a value in [0, 1), typically 0.01 (0 means the default)", o.DriftFactor)
	case o.NodeTimeout < 0:
		return nil, fmt.Errorf("redlock: NodeTimeout %v is negative: use a small positive duration such as 50ms (0 means the default %v)", o.NodeTimeout, DefaultNodeTimeout)
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
	c := &Client{nodes: nodes, quorum: len(nodes)/2 + 1, opts: o, clock: realClock{}}
	c.life, c.stopLife = context.WithCancel(context.Background())
	for i := range c.nodes {
		c.nodes[i].send = newSender(c.nodes[i].client, &c.goes, c.life)
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
// does not close the node clients. Calling it again does nothing.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.stopLife()
	c.waker.close()
	t := time.NewTimer(2 * c.opts.NodeTimeout)
	defer t.Stop()
	select {
	case <-c.goes.idleCh():
	case <-t.C:
		c.warn("redlock: Close: node calls still running after twice the node timeout; they end when their nodes answer",
			"running", c.goes.running(), "node_timeout", c.opts.NodeTimeout)
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

// Quorum is the number of nodes a lock needs: len(nodes)/2 + 1.
func (c *Client) Quorum() int { return c.quorum }

// Keys returns the lock key and the fence counter key used for name.
func (c *Client) Keys(name string) (lockKey, fenceKey string) {
	lockKey = c.opts.KeyPrefix + "{" + name + "}"
	return lockKey, lockKey + ":fence"
}

func nodeAddr(n Node) string {
	switch v := n.(type) {
	case *redis.Client:
		return v.Options().Addr
	case *redis.ClusterClient:
		return fmt.Sprint(v.Options().Addrs)
	case *redis.Ring:
		return "ring"
	}
	return fmt.Sprintf("%T", n)
}

// checkName says what is wrong with a lock name, if anything. Braces would
// change the Redis Cluster hash tag of the keys ({name}), so that the lock
// key and its fence counter could land in different slots.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("redlock: empty lock name: name the resource the lock protects, e.g. \"orders:42\"")
	case len(name) > MaxNameLen:
		return fmt.Errorf("redlock: lock name of %d bytes is longer than %d: use a shorter name, e.g. a hash of the resource", len(name), MaxNameLen)
	case strings.ContainsAny(name, "{}"):
		return fmt.Errorf("redlock: lock name %q contains '{' or '}': the name is the Redis Cluster hash tag of the lock's keys; leave braces out", name)
	}
	return nil
}

// checkTTL says what is wrong with ttl, if anything.
func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("redlock: TTL %v is too short: Redis expires keys in whole milliseconds; use at least a few hundred milliseconds", ttl)
	}
	if d := drift(ttl, c.opts.DriftFactor); ttl <= d {
		return fmt.Errorf("redlock: TTL %v is not longer than its drift allowance %v: no lease could ever be valid; raise the TTL", ttl, d)
	}
	return nil
}

// nodeTimeout is the per-node timeout for a round under a lease of ttl.
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	return min(c.opts.NodeTimeout, ttl-drift(ttl, c.opts.DriftFactor))
}

// newToken returns 128 random bits as URL-safe text (no '.', which
// separates the token from the attempt number in the value on the nodes):
// the proof of ownership every extend and release checks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}
