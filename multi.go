package redlock

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Locks over several names (docs/design.md, "Locks over several names"):
// one lease over a set of names, taken all or nothing on each node by one
// script, with a fence per name from that name's own counter.

// MaxSetNames is the most names [Client.AcquireMulti] takes at once. Every
// name is a key (and its queue and counter) of one script, which runs
// atomically on the node: nothing else runs there meanwhile, so its length
// is bounded; 32 names keep a script's work near that of a few dozen plain
// acquisitions.
const MaxSetNames = 32

// MultiLock is one acquisition of a set of names ([Client.AcquireMulti]):
// every name is held, or none. Its lease is one for the whole set: it is
// extended, lost and released as a whole, and Done closes when it ends. Each
// name has its own fence, ordered with that name's plain locks' fences, so
// a guard per resource works unchanged. All methods are safe for
// concurrent use. A MultiLock has no [Handle]: a set cannot be resumed in
// another process. The observer's events of a set name it by its names
// joined by commas, with the first name's fence (on Redis Cluster nodes,
// each name's lock reports its own events).
type MultiLock struct {
	names  []string // sorted
	fences []uint64 // in names' order
	l      *Lock    // the one lease over every name; nil on Redis Cluster nodes
	token  string

	// On Redis Cluster nodes (multi_cluster.go): a plain lock per name, in
	// names' order, and a context that ends when the first of them does.
	each   []*Lock
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Names returns the set's names, sorted.
func (m *MultiLock) Names() []string { return slices.Clone(m.names) }

// Fence returns the fencing token of name in this acquisition (0: fencing
// off, or a name not in the set): larger than that of every acquisition of
// name — alone or in a set — that completed before this one began.
func (m *MultiLock) Fence(name string) uint64 {
	if i, ok := slices.BinarySearch(m.names, name); ok {
		return m.fences[i]
	}
	return 0
}

// Fences returns the fence of each name, in [MultiLock.Names]' order.
func (m *MultiLock) Fences() []uint64 { return slices.Clone(m.fences) }

// Token returns the set's token: the proof of ownership, which a guard
// records with each name's fence (see [Lock.Token]).
func (m *MultiLock) Token() string { return m.token }

// ValidUntil returns the local deadline of the set's lease (see
// [Lock.ValidUntil]).
func (m *MultiLock) ValidUntil() time.Time {
	if m.l == nil {
		return m.firstDeadline()
	}
	return m.l.ValidUntil()
}

// Done returns a channel closed when the set's lease ends: at its deadline
// unless an extend succeeded first, when it is lost, or on Release.
func (m *MultiLock) Done() <-chan struct{} {
	if m.l == nil {
		return m.ctx.Done()
	}
	return m.l.Done()
}

// Err returns nil while the set is held, and why it ended after (see
// [Lock.Err]).
func (m *MultiLock) Err() error {
	if m.l == nil {
		return m.eachErr()
	}
	return m.l.Err()
}

// Context returns a context derived from parent, cancelled when the set's
// lease ends (see [Lock.Context]).
func (m *MultiLock) Context(parent context.Context) context.Context {
	if m.l == nil {
		return m.eachContext(parent)
	}
	return m.l.Context(parent)
}

// Extend extends every name of the set to ttl from now. A node counts only
// if it still holds every name for this set; a quorum of them is needed, as
// for [Lock.Extend], whose errors it returns.
func (m *MultiLock) Extend(ctx context.Context, ttl time.Duration) error {
	if m.l == nil {
		return m.eachExtend(ctx, ttl)
	}
	return m.l.Extend(ctx, ttl)
}

// Release releases every name of the set on every node (see
// [Lock.Release]); each name's waiters are told, as a lock's release tells
// them.
func (m *MultiLock) Release(ctx context.Context) error {
	if m.l == nil {
		return m.eachRelease(ctx)
	}
	return m.l.Release(ctx)
}

// AcquireMulti takes every name of names for ttl on a quorum of the nodes,
// or none: each node takes the whole set in one script, or nothing of it.
// It waits as [Client.Acquire] does, in every name's queue, and takes the
// same options but Metadata and Reentrant, which a set refuses. A set of
// free names costs one round, as one lock does.
//
// The order of names does not matter (they are sorted): sets that overlap
// in any order, and the plain locks of the same names, exclude each other
// without deadlock. Names are checked as Acquire checks a name; besides,
// an empty set, a name given twice, more than [MaxSetNames] names, or a
// semaphore's name (one with ":permit:" or ending in ":permits", the
// names of a semaphore's keys) are refused with an error matching
// [ErrInvalid], before anything is sent.
//
// Errors are Acquire's, the names joined by commas in place of its name.
func (c *Client) AcquireMulti(ctx context.Context, names []string, ttl time.Duration, opts *AcquireOptions) (*MultiLock, error) {
	return c.acquireMulti(ctx, "AcquireMulti", names, ttl, opts)
}

// TryAcquireMulti is [Client.AcquireMulti] with one attempt: it returns at
// once with an error matching [ErrHeld] when any name is held or promised
// to a waiter, and never queues. opts.Retry must be nil (or not retry).
func (c *Client) TryAcquireMulti(ctx context.Context, names []string, ttl time.Duration, opts *AcquireOptions) (*MultiLock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "TryAcquireMulti"); err != nil {
		return nil, err
	}
	o, err := oneTry("TryAcquireMulti", "AcquireMulti", strings.Join(names, ","), opts)
	if err != nil {
		return nil, err
	}
	return c.acquireMulti(ctx, "TryAcquireMulti", names, ttl, o)
}

func (c *Client) acquireMulti(ctx context.Context, op string, names []string, ttl time.Duration, opts *AcquireOptions) (*MultiLock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	sorted, err := checkSet(op, names)
	if err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	var o AcquireOptions
	if opts != nil {
		o = *opts
	}
	set := strings.Join(sorted, ",")
	switch {
	case o.Metadata != "":
		return nil, invalidf("redlock: %s %q: a set keeps no Metadata: leave it empty, or take the names one by one", op, set)
	case o.Reentrant:
		return nil, invalidf("redlock: %s %q: a set is not re-entrant: leave Reentrant off", op, set)
	}
	if err := checkMaxHold(set, &o); err != nil {
		return nil, err
	}
	if o.Retry == nil {
		o.Retry = DefaultRetry()
	}
	start := c.clock.Now()
	if c.slotted(sorted) {
		return c.acquireEach(ctx, sorted, ttl, o)
	}
	ls := c.newMultiLease(sorted, ttl, !o.NoFence)
	l, err := c.acquireLease(ctx, ls, o, start)
	if err != nil {
		return nil, err
	}
	fences := l.call.fences
	if fences == nil { // fencing off
		fences = make([]uint64, len(sorted))
	}
	return &MultiLock{names: sorted, fences: fences, l: l, token: l.Token()}, nil
}

// checkSet says what is wrong with a set of names, if anything, and
// returns them sorted.
func checkSet(op string, names []string) ([]string, error) {
	switch {
	case len(names) == 0:
		return nil, invalidf("redlock: %s: empty set of names: give at least one name", op)
	case len(names) > MaxSetNames:
		return nil, invalidf("redlock: %s: %d names is more than %d: one script takes a set on each node, and runs alone there; split the set, or lock a coarser resource", op, len(names), MaxSetNames)
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for i, name := range sorted {
		if err := checkName(name); err != nil {
			return nil, err
		}
		switch {
		case i > 0 && sorted[i-1] == name:
			return nil, invalidf("redlock: %s: name %q is given twice: give each name once", op, name)
		case strings.Contains(name, ":permit:") || strings.HasSuffix(name, ":permits"):
			return nil, invalidf("redlock: %s: name %q is a semaphore's key, not a lock: take a permit with AcquirePermit", op, name)
		}
	}
	return sorted, nil
}

// multiSpec is what a set's lease adds: the lock keys of its names, sorted
// as the names are. The lease's own keys are its first name's: the set
// takes that name's local turn (and hears its releases, and the others': wakeAlso).
type multiSpec struct {
	locks []string
	fence []string // the fence counters, in the same order
}

// setSuffix is what ends a set's token: "~<k>". Tokens are URL-safe
// base64, without '~', so a set's values never equal a plain lock's, and
// Inspect tells a name held in a set by its holder's token.
func setSuffix(k int) string { return "~" + strconv.Itoa(k) }

// SetSize returns k when token is the token of a set of k names
// ([Client.AcquireMulti]), and 0 otherwise.
func SetSize(token string) int {
	i := strings.LastIndexByte(token, '~')
	if i < 0 {
		return 0
	}
	k, err := strconv.Atoi(token[i+1:])
	if err != nil || k < 1 {
		return 0
	}
	return k
}
