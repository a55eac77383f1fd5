package redlock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	extendScript  = redis.NewScript(extendSrc)
	releaseScript = redis.NewScript(releaseSrc)
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
	// so both keys live in one slot. Default "redlock:".
	KeyPrefix string
}

// AcquireOptions configures one [Client.Acquire]. A nil *AcquireOptions
// means: wait with [DefaultRetry] until ctx ends, fencing on, no
// auto-extend.
type AcquireOptions struct {
	// Retry decides whether and when to try again after a failed attempt.
	// Nil means [DefaultRetry]; [NoRetry] makes a try-lock.
	Retry RetryPolicy

	// NoFence turns fencing off: no counter key is kept and [Lock.Fence]
	// returns 0. Fencing costs nothing in round trips in the normal case,
	// but each lock name keeps one small counter key per node forever (it
	// must never be deleted, or fences could repeat). Turn it off for lock
	// names of unbounded cardinality (one per user or per request), where
	// those keys would pile up.
	NoFence bool

	// AutoExtend starts a watchdog that extends the lock by its TTL every
	// TTL/3 until it is released or lost. If an extend fails its quorum,
	// the lock is lost: [Lock.Done] fires and [Lock.Err] returns [ErrLost].
	AutoExtend bool
}

// Client acquires locks on a fixed set of independent Redis nodes. It is
// safe for concurrent use; create one per set of nodes and share it.
type Client struct {
	nodes  []node
	quorum int
	opts   Options
	clock  clock
	waker  *waker
	turns  turns // local queue per lock name
}

// node is one Redis node as the lock sees it: something that can run
// scripts, and maybe subscribe to release notices.
type node struct {
	addr   string
	client redis.Scripter
	sub    subscriber // nil when the node cannot subscribe
}

// New returns a Client over nodes, each an independent Redis master: a
// standalone client, a Sentinel failover client or a Cluster client each
// count as one node. A lock needs a majority of them (len(nodes)/2+1). One
// node gives the classic single-instance lock. The clients stay the
// caller's: Close does not close them.
//
// New reports a bad configuration at once, saying what to change.
func New(nodes []redis.UniversalClient, opts *Options) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("redlock: no nodes: pass at least one Redis client (three or five independent masters tolerate one or two failures)")
	}
	ns := make([]node, len(nodes))
	for i, n := range nodes {
		if n == nil {
			return nil, fmt.Errorf("redlock: node %d is nil: pass a connected Redis client for every node", i)
		}
		ns[i] = node{addr: nodeAddr(n), client: n, sub: n}
	}
	return newClient(ns, opts)
}

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
	c.waker = newWaker(nodes, o.NodeTimeout)
	return c, nil
}

// Close stops the client's background subscriptions to release notices and
// waits for them to end. Locks already acquired stay valid and can still be
// extended and released; waits in progress fall back to their retry delays.
// The node clients are not closed.
func (c *Client) Close() error {
	c.waker.close()
	return nil
}

// Quorum is the number of nodes a lock needs: len(nodes)/2 + 1.
func (c *Client) Quorum() int { return c.quorum }

// Keys returns the lock key and the fence counter key used for name.
func (c *Client) Keys(name string) (lockKey, fenceKey string) {
	lockKey = c.opts.KeyPrefix + "{" + name + "}"
	return lockKey, lockKey + ":fence"
}

func nodeAddr(n redis.UniversalClient) string {
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

// newToken returns 128 random bits as URL-safe text: the proof of
// ownership every extend and release checks.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Acquire takes the lock name for ttl on a quorum of the nodes, retrying as
// opts says until ctx ends. It returns as soon as a quorum has granted it,
// not waiting for a slow or dead minority.
//
// The returned lock is valid until [Lock.ValidUntil]: the TTL less the time
// the acquisition took and a clock-drift allowance. With fencing on (the
// default), [Lock.Fence] is larger than the fence of every acquisition of
// name that completed before this one started.
//
// A failed attempt is released on every node before the next one. When
// Acquire gives up, its error matches [ErrNotAcquired], and also ctx.Err()
// when the context ended the wait; a [*QuorumError] in it names each node's
// answer. Bad arguments give an error at once.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions) (*Lock, error) {
	if name == "" {
		return nil, errors.New("redlock: empty lock name: name the resource the lock protects, e.g. \"orders:42\"")
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	var o AcquireOptions
	if opts != nil {
		o = *opts
	}
	if o.Retry == nil {
		o.Retry = DefaultRetry()
	}
	key, fenceKey := c.Keys(name)
	token := newToken()

	// Wait for this client's earlier Acquire calls of the same name, unless
	// this is a try-lock (the policy allows no retry): a try-lock makes its
	// one attempt at once.
	leave := func() {}
	if _, retries := o.Retry(1); retries {
		var err error
		if leave, err = c.turns.enter(ctx, key); err != nil {
			return nil, &QuorumError{Op: "acquire", Name: name, Quorum: c.quorum, Err: err, sentinel: ErrNotAcquired}
		}
	}
	cl := &claim{leaveTurn: leave}
	l, err := c.acquire(ctx, cl, name, key, fenceKey, token, ttl, &o)
	if err != nil {
		c.releaseNodes(ctx, key, token, false, cl.abandon(), nil)
		leave()
		return nil, err
	}
	return l, nil
}

// acquire runs the attempts of one Acquire call.
func (c *Client) acquire(ctx context.Context, cl *claim, name, key, fenceKey, token string, ttl time.Duration, o *AcquireOptions) (*Lock, error) {
	var wake <-chan struct{}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, &QuorumError{Op: "acquire", Name: name, Quorum: c.quorum, Attempts: attempt - 1,
				Nodes: make([]error, len(c.nodes)), Err: err, sentinel: ErrNotAcquired}
		}
		l, qerr := c.try(ctx, cl, name, key, fenceKey, token, ttl, !o.NoFence)
		if l != nil {
			if o.AutoExtend {
				l.startWatchdog(ttl)
			}
			return l, nil
		}
		qerr.Attempts = attempt
		if qerr.Err = ctx.Err(); qerr.Err != nil || c.hopeless(qerr) {
			return nil, qerr
		}
		delay, ok := o.Retry(attempt)
		if !ok {
			return nil, qerr
		}
		if wake == nil {
			// Contended: from now on a release of this name wakes us.
			var cancel func()
			wake, cancel = c.waker.watch(c.releaseChannel(key))
			defer cancel()
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
			// Every waiter heard the same notice. A short random pause
			// spreads them out, so the first to reach the nodes takes
			// them all instead of splitting the vote with the others.
			time.Sleep(jitter(wakeSpread))
		case <-ctx.Done():
			t.Stop()
			qerr.Err = ctx.Err()
			return nil, qerr
		}
	}
}

// hopeless reports whether so many nodes failed for good (wrong key type,
// refused credentials) that no retry can reach a quorum.
func (c *Client) hopeless(e *QuorumError) bool {
	n := 0
	for _, err := range e.Nodes {
		if err != nil && permanent(errors.Unwrap(err)) {
			n++
		}
	}
	return n > len(c.nodes)-c.quorum
}

// claim tracks, for one Acquire call, grants that arrive after the attempt
// that asked for them was decided. All attempts of a call share one token,
// so that a retry after a lost reply is not locked out by our own key; a
// late grant is therefore our key on that node, whichever attempt set it.
// Who deletes it depends on where the call is:
//   - between attempts or during one: it is recorded, and released when the
//     current attempt fails (a later attempt may be using that very key, so
//     it must not be deleted while one runs);
//   - while the lock is held: it belongs to the lock, whose Release deletes
//     on every node;
//   - once the call gave up or its lock ended: it is released at once.
type claim struct {
	leaveTurn func() // hands this client's turn for the name to the next Acquire (see turns); idempotent

	mu   sync.Mutex // protects the fields below
	held bool       // an attempt succeeded and its lock has not ended
	done bool       // the call gave up, or its lock ended
	late []int      // late grants recorded, not released yet
}

// lateGrant records a late grant on node i and reports whether the caller
// must release it now.
func (cl *claim) lateGrant(i int) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case cl.done:
		return true
	case !cl.held:
		cl.late = append(cl.late, i)
	}
	return false
}

// drain returns the late grants recorded so far, which the caller must
// release before the next attempt starts.
func (cl *claim) drain() []int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	late := cl.late
	cl.late = nil
	return late
}

// hold marks the call's lock as held: late grants now belong to it.
func (cl *claim) hold() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.held, cl.late = true, nil
}

// abandon marks the call over and returns the late grants still recorded,
// which the caller must release. Grants arriving afterwards release
// themselves.
func (cl *claim) abandon() []int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.held, cl.done = false, true
	late := cl.late
	cl.late = nil
	return late
}

// grant is one node's answer to the acquire script.
type grant struct {
	ok    bool
	value int64 // fence counter when ok, the holder's PTTL in ms when not
}

// parseGrant reads the acquire script's reply: {1, fence} or {0, pttl}.
func parseGrant(v []any) (grant, error) {
	var g grant
	if len(v) < 2 {
		return g, fmt.Errorf("unexpected reply %v from the acquire script", v)
	}
	status, ok1 := v[0].(int64)
	value, ok2 := v[1].(int64)
	if !ok1 || !ok2 {
		return g, fmt.Errorf("unexpected reply %v from the acquire script", v)
	}
	g.ok, g.value = status == 1, value
	return g, nil
}

// try makes one acquisition attempt.
func (c *Client) try(ctx context.Context, cl *claim, name, key, fenceKey, token string, ttl time.Duration, fenced bool) (*Lock, *QuorumError) {
	start := c.clock.Now()
	timeout := c.nodeTimeout(ttl)
	ttlArg := strconv.FormatInt(ttl.Milliseconds(), 10)
	fenceArg := "0"
	if fenced {
		fenceArg = "1"
	}
	r := fanout(ctx, len(c.nodes), c.quorum, timeout,
		func(ctx context.Context, i int) (grant, error) {
			v, err := acquireScript.Run(ctx, c.nodes[i].client, []string{key, fenceKey}, token, ttlArg, fenceArg).Slice()
			if err != nil {
				return grant{}, err
			}
			return parseGrant(v)
		},
		func(g grant, err error) bool { return err == nil && g.ok },
		func(rp reply[grant]) {
			if rp.err == nil && rp.val.ok && cl.lateGrant(rp.node) {
				c.releaseNodes(ctx, key, token, false, []int{rp.node}, nil)
			}
		})

	v := validity(ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
	// The per-node detail is filled in only if the attempt fails.
	qerr := &QuorumError{Op: "acquire", Name: name, Quorum: c.quorum, Agreed: r.ok, Validity: v, sentinel: ErrNotAcquired}

	if r.ok >= c.quorum && v > 0 && ctx.Err() == nil {
		var fence uint64
		ok := true
		if fenced {
			var granted []uint64
			for i, rp := range r.replies {
				if r.answered[i] && rp.err == nil && rp.val.ok {
					granted = append(granted, uint64(rp.val.value))
				}
			}
			plan := planFence(granted, c.quorum)
			fence = plan.fence
			if plan.writeBack {
				wb := c.writeBackFence(ctx, fenceKey, plan.fence, min(timeout, v))
				if wb.ok < c.quorum {
					ok = false
					qerr.Op, qerr.Agreed = "fence write-back", wb.ok
					qerr.Nodes = nodeErrorsOf(c, wb, min(timeout, v), func(int64) error { return nil })
				} else {
					v = validity(ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
					qerr.Validity = v
					ok = v > 0
				}
			}
		}
		if ok {
			cl.hold()
			return newLock(c, name, key, token, fence, start.Add(v), cl), nil
		}
	}

	if qerr.Nodes == nil { // not a failed write-back, which named its own nodes
		qerr.Nodes = nodeErrorsOf(c, r, timeout, func(g grant) error {
			if g.ok {
				return nil
			}
			return heldError{ttl: time.Duration(g.value) * time.Millisecond}
		})
	}

	// Failed: release where we may hold the key. Nodes that said "held"
	// hold nothing of ours; nodes still pending are seen to by the claim
	// when they answer.
	var mine []int
	for i, rp := range r.replies {
		if r.answered[i] && (rp.err != nil || rp.val.ok) {
			mine = append(mine, i)
		}
	}
	mine = append(mine, cl.drain()...)
	c.releaseNodes(ctx, key, token, false, mine, nil)
	return nil, qerr
}

// nodeErrorsOf turns a round's answers into one error per node (nil where the
// node agreed), naming the node.
func nodeErrorsOf[T any](c *Client, r *round[T], timeout time.Duration, refused func(T) error) []error {
	errs := make([]error, len(r.replies))
	for i, rp := range r.replies {
		var err error
		switch {
		case !r.answered[i]:
			err = nodeTimeoutError{after: timeout}
		case rp.err != nil:
			err = rp.err
		default:
			err = refused(rp.val)
		}
		if err != nil {
			errs[i] = &NodeError{Node: i, Addr: c.nodes[i].addr, Err: err}
		}
	}
	return errs
}

// releaseNodes runs the compare-and-delete on the given nodes, bounded by
// the per-node timeout. Only the release of a lock that was held notifies
// the waiters: cleaning up a failed attempt frees nothing anyone waits for,
// and waking them all for it would start a storm of attempts.
//
// With handoff nil it waits for every node, or the timeout, under a context
// that outlives a cancelled caller: a dead context must not keep us from
// cleaning up. With handoff set (Release), handoff is called as soon as a
// quorum of nodes confirmed, so that a dead or slow minority does not delay
// the next local holder; the other answers are then awaited, until the
// per-node timeout or ctx ends, only to report them.
func (c *Client) releaseNodes(ctx context.Context, key, token string, notify bool, which []int, handoff func()) *round[int64] {
	if len(which) == 0 {
		if handoff != nil {
			handoff()
		}
		return nil
	}
	set := make([]bool, len(c.nodes))
	for _, i := range which {
		set[i] = true
	}
	ch := ""
	if notify {
		ch = c.releaseChannel(key)
	}
	call := func(ctx context.Context, i int) (int64, error) {
		if !set[i] {
			return 0, nil
		}
		return releaseScript.Run(ctx, c.nodes[i].client, []string{key}, token, ch).Int64()
	}
	accept := func(v int64, err error) bool { return err == nil }
	if handoff == nil {
		return fanout(context.WithoutCancel(ctx), len(c.nodes), 0, c.opts.NodeTimeout, call, accept, nil)
	}
	start := time.Now()
	late := make(chan reply[int64], len(c.nodes)) // one send per node at most
	r := fanout(ctx, len(c.nodes), c.quorum, c.opts.NodeTimeout, call, accept, func(rp reply[int64]) { late <- rp })
	handoff()
	pending := 0
	for _, a := range r.answered {
		if !a {
			pending++
		}
	}
	if pending == 0 {
		return r
	}
	t := time.NewTimer(c.opts.NodeTimeout - time.Since(start))
	defer t.Stop()
	for ; pending > 0; pending-- {
		select {
		case rp := <-late:
			r.replies[rp.node], r.answered[rp.node] = rp, true
		case <-t.C:
			return r
		case <-ctx.Done():
			return r
		}
	}
	return r
}

// Lock is one acquisition of a named lock: its token, fence and lease. Its
// identity never changes; a new Acquire makes a new Lock. All methods are
// safe for concurrent use.
//
// The lease ends at the local deadline [Lock.ValidUntil], measured on this
// process's monotonic clock. Done closes at that deadline unless an extend
// succeeded first, when the lock is released, or when an extend fails.
type Lock struct {
	c                    *Client
	name, key, token     string
	fence                uint64
	claim                *claim
	done                 chan struct{} // closed when the lock ends (released or lost)
	extendMu             sync.Mutex    // serialises extends, so deadlines move in order
	watchStop, watchDone chan struct{} // watchdog: closed by its stopper / by the watchdog itself; nil without one

	mu       sync.Mutex    // protects the fields below
	until    time.Time     // local deadline, monotonic
	gen      int           // bumped whenever the deadline timer is replaced
	timer    stopper       // fires lose at until
	err      error         // nil while held; ErrLost or ErrReleased after
	released bool          // Release has been called
	onEnd    []func(error) // called once when the lock ends, with Err
}

func newLock(c *Client, name, key, token string, fence uint64, until time.Time, cl *claim) *Lock {
	l := &Lock{c: c, name: name, key: key, token: token, fence: fence, claim: cl, done: make(chan struct{})}
	l.mu.Lock()
	l.setDeadlineLocked(until)
	l.mu.Unlock()
	return l
}

// Name returns the lock's name as given to Acquire.
func (l *Lock) Name() string { return l.name }

// Token returns the random token that proves ownership on the nodes.
func (l *Lock) Token() string { return l.token }

// Fence returns the fencing token of this acquisition: larger than that of
// every acquisition of the same name that completed before this one began.
// Send it with every write to a downstream store, and have the store reject
// a write whose fence is lower than one it has accepted. 0 when fencing is
// off. Extending the lock keeps the fence.
func (l *Lock) Fence() uint64 { return l.fence }

// ValidUntil returns the local deadline of the lease: after it, the lock
// may be held by someone else. The value carries a monotonic clock reading,
// so time.Until(l.ValidUntil()) is immune to wall-clock jumps.
func (l *Lock) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock ends: at the local
// deadline unless an extend succeeded first, when an extend fails, or on
// Release. Err then says which.
func (l *Lock) Done() <-chan struct{} { return l.done }

// Err returns nil while the lock is held, [ErrLost] once it was lost (even if
// released afterwards), and [ErrReleased] once it was released while held.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Context returns a context derived from parent that is cancelled when the
// lock ends; context.Cause then returns [ErrLost] or [ErrReleased]. Run the
// critical section under it so that work stops when the lease does.
func (l *Lock) Context(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		cancel(l.err)
		return ctx
	}
	l.onEnd = append(l.onEnd, func(err error) { cancel(err) })
	return ctx
}

// setDeadlineLocked moves the local deadline to until and re-arms the timer.
func (l *Lock) setDeadlineLocked(until time.Time) {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.gen++
	gen := l.gen
	l.until = until
	l.timer = l.c.clock.AfterFunc(until.Sub(l.c.clock.Now()), func() { l.end(ErrLost, gen) })
}

// end ends the lock with err (ErrLost or ErrReleased) unless it has ended
// already, or, for a deadline timer (gen > 0), unless the timer is stale.
// It reports whether this call ended the lock.
func (l *Lock) end(err error, gen int) bool {
	l.mu.Lock()
	if l.err != nil || (gen > 0 && gen != l.gen) {
		l.mu.Unlock()
		return false
	}
	l.err = err
	l.timer.Stop()
	fns := l.onEnd
	l.onEnd = nil
	l.mu.Unlock()
	l.claim.abandon() // nothing recorded while held; later grants release themselves
	if err != ErrReleased {
		l.claim.leaveTurn() // Release hands the turn on only once the keys are gone
	}
	for _, f := range fns {
		f(err)
	}
	close(l.done) // last, so that whoever sees Done sees everything else
	return true
}

// Extend resets the lease to ttl on a quorum of the nodes, on the nodes
// that still hold this lock's token. The new local deadline counts from the
// start of the extend: ttl less the time it took and the drift allowance.
//
// A failed extend ends the lock: without a quorum there is no telling
// whether anyone else holds it now, so the error matches [ErrLost], Done
// fires, and the keys left are released. An extend never re-creates an
// expired key. Extending a lock that has ended returns Err. If ctx has
// already ended, Extend returns its error and changes nothing.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.c.checkTTL(ttl); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.extendMu.Lock()
	defer l.extendMu.Unlock()
	if err := l.Err(); err != nil {
		return err
	}
	c := l.c
	start := c.clock.Now()
	timeout := c.nodeTimeout(ttl)
	ttlArg := strconv.FormatInt(ttl.Milliseconds(), 10)
	r := fanout(ctx, len(c.nodes), c.quorum, timeout,
		func(ctx context.Context, i int) (int64, error) {
			return extendScript.Run(ctx, c.nodes[i].client, []string{l.key}, l.token, ttlArg).Int64()
		},
		func(v int64, err error) bool { return err == nil && v == 1 },
		nil)
	v := validity(ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
	if r.ok >= c.quorum && v > 0 && ctx.Err() == nil {
		l.mu.Lock()
		if l.err == nil {
			l.setDeadlineLocked(start.Add(v))
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		// The deadline passed while the extend was on its way: the lease
		// had a gap, so it stays lost.
		c.releaseNodes(ctx, l.key, l.token, true, allNodes(len(c.nodes)), nil)
		return l.Err()
	}
	qerr := &QuorumError{Op: "extend", Name: l.name, Quorum: c.quorum, Agreed: r.ok, Validity: v,
		Nodes: nodeErrorsOf(c, r, timeout, func(v int64) error {
			if v == 1 {
				return nil
			}
			return notOursError{}
		}), Err: ctx.Err(), sentinel: ErrLost}
	if l.end(ErrLost, 0) {
		c.releaseNodes(ctx, l.key, l.token, true, allNodes(len(c.nodes)), nil)
	}
	return qerr
}

// Release deletes the lock's key on every node that still holds its token,
// in parallel, waiting no longer than the per-node timeout; ctx may cut
// the wait shorter, but the deletes are sent regardless. Locally the lock is
// released whatever the nodes answered, and waiters are woken.
//
// The error joins the nodes' failures. If the lock had been lost before,
// it also matches [ErrLost]: the critical section may have overlapped
// another holder. Releasing twice returns [ErrReleased].
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrReleased
	}
	l.released = true
	l.mu.Unlock()
	l.end(ErrReleased, 0)
	if l.watchStop != nil {
		close(l.watchStop)
		<-l.watchDone
	}
	c := l.c
	r := c.releaseNodes(ctx, l.key, l.token, true, allNodes(len(c.nodes)), l.claim.leaveTurn)
	var errs []error
	if err := l.Err(); errors.Is(err, ErrLost) {
		errs = append(errs, fmt.Errorf("redlock: %q was lost before Release: %w", l.name, ErrLost))
	}
	for _, err := range nodeErrorsOf(c, r, c.opts.NodeTimeout, func(int64) error { return nil }) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

func allNodes(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// startWatchdog extends the lock by ttl every ttl/3 until it ends. Release
// stops and joins it; after a failed extend it ends by itself.
func (l *Lock) startWatchdog(ttl time.Duration) {
	l.watchStop, l.watchDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.watchDone)
		for {
			tick := make(chan struct{})
			t := l.c.clock.AfterFunc(ttl/3, func() { close(tick) })
			select {
			case <-l.watchStop:
				t.Stop()
				return
			case <-l.done:
				t.Stop()
				return
			case <-tick:
			}
			if err := l.Extend(context.Background(), ttl); err != nil {
				return
			}
		}
	}()
}
