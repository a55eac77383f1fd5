package redlock

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redlock-go/redlock/internal/transport"
)

// Leader election is the lock with a value: leadership of name is the lock
// name, held with the leader's value as its metadata and kept by the
// watchdog; the term is the lock's fence, which only the leader's Campaign
// records on the nodes (announce). Everyone reads the leader with Leader
// (the lock as Inspect sees it) and follows it with Observe.

// Leadership is this Client's leadership of an election, won by
// [Client.Campaign]: a lock that the watchdog extends until it is resigned
// or lost. Its identity never changes; a new Campaign makes a new
// Leadership. All methods are safe for concurrent use.
//
// Leadership is a [github.com/redlock-go/redlock/guard.Holder] (Fence and
// Token): pass it to a guard so that a store refuses the writes of a leader
// that has been succeeded.
type Leadership struct {
	l     *Lock
	value string
}

// Campaign blocks until this Client leads the election name, and returns
// its leadership: [Client.Acquire] of the lock name for ttl with
// AutoExtend and value as its Metadata, waiting in the nodes' order
// with the other candidates. The leadership lasts until [Leadership.Resign]
// or until it is lost: then [Leadership.Done] closes, no later than the
// local deadline.
//
// value says who leads (an address, "host pid"): every observer reads it.
// It must be non-empty, at most [MaxMetadataLen] bytes of UTF-8 with no
// control character.
//
// Once it leads, Campaign records the term beside the value on the nodes
// (the only writer of that record: [Client.Leader] reads the term from it)
// and announces "<term> <value>" on the election's channel on every node
// ([Options].KeyPrefix + "elected:" + the lock key), waiting for a quorum
// at most (a slow minority is not waited for). A failed announce is not an
// error: observers also poll, and read the leader with Term 0 where the
// record never landed. Campaign fails as Acquire does (errors matching
// [ErrNotAcquired], and ctx's error or [ErrClosed] when the wait ended),
// and at once for a bad name, ttl or value or a nil ctx ([ErrInvalid]).
func (c *Client) Campaign(ctx context.Context, name string, ttl time.Duration, value string) (*Leadership, error) {
	return c.campaign(ctx, name, ttl, value, nil)
}

// campaign is Campaign, retrying as retry says (nil: [DefaultRetry]).
func (c *Client) campaign(ctx context.Context, name string, ttl time.Duration, value string, retry RetryPolicy) (*Leadership, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "Campaign"); err != nil {
		return nil, err
	}
	if err := checkLeaderValue(value); err != nil {
		return nil, err
	}
	l, err := c.Acquire(ctx, name, ttl, &AcquireOptions{AutoExtend: true, Metadata: value, Retry: retry})
	if err != nil {
		return nil, err
	}
	c.announce(l)
	return &Leadership{l: l, value: value}, nil
}

// checkLeaderValue says what is wrong with a leader's value, if anything.
func checkLeaderValue(value string) error {
	const want = "say who leads in printable text, e.g. the leader's address \"10.0.0.7:8080\""
	switch {
	case value == "":
		return invalidf("redlock: empty leader value: %s", want)
	case len(value) > MaxMetadataLen:
		return invalidf("redlock: leader value of %d bytes is longer than %d: %s", len(value), MaxMetadataLen, want)
	case !utf8.ValidString(value):
		return invalidf("redlock: leader value %q is not valid UTF-8: %s", value, want)
	case strings.ContainsFunc(value, unicode.IsControl):
		return invalidf("redlock: leader value %q contains a control character: %s", value, want)
	}
	return nil
}

// announce records l's term beside its value on every node that still
// holds l (Leader reads it there) and publishes "<term> <value>" on the
// election channel of l's name, and returns once a quorum has answered (or
// the node timeout passed). It is bounded by the Client's life, not by the
// caller's context, which may end the moment Campaign returns.
func (c *Client) announce(l *Lock) {
	sendRound(c.life, c, l.ls.announceRequest(strconv.FormatUint(l.fence, 10), l.won), &transport.Spec[int64]{
		Need: c.quorum, PerNode: l.ls.timeout, Parse: int64Reply,
		Accept: func(v int64, err error) bool { return err == nil && v >= 0 }})
}

// Term returns the leadership's term: the lock's fence, larger than the
// term of every leadership of name that began before this one was won.
// Send it with every write that only the leader may make.
func (ld *Leadership) Term() uint64 { return ld.l.fence }

// Fence returns the term: with Token, it makes a Leadership a guard's
// Holder.
func (ld *Leadership) Fence() uint64 { return ld.l.fence }

// Token returns the token of the leadership's lock (see [Lock.Token]).
func (ld *Leadership) Token() string { return ld.l.ls.token }

// Value returns the leader's value, as given to Campaign.
func (ld *Leadership) Value() string { return ld.value }

// Name returns the election's name.
func (ld *Leadership) Name() string { return ld.l.ls.name }

// Done returns a channel that is closed when the leadership ends: on
// Resign, when a majority of the nodes no longer hold it, or at the local
// deadline if the watchdog could not extend it before (see [Lock.Done]).
func (ld *Leadership) Done() <-chan struct{} { return ld.l.Done() }

// Err returns nil while this Client leads; an error matching [ErrLost]
// once the leadership was lost, and [ErrReleased] once it was resigned.
func (ld *Leadership) Err() error { return ld.l.Err() }

// Context returns a context derived from parent that is cancelled when the
// leadership ends; context.Cause then returns Err. Run the leader's work
// under it.
func (ld *Leadership) Context(parent context.Context) context.Context { return ld.l.Context(parent) }

// ValidUntil returns the local deadline of the leadership, which the
// watchdog moves on with each extend: after it, another may lead.
func (ld *Leadership) ValidUntil() time.Time { return ld.l.ValidUntil() }

// Resign gives up the leadership: [Lock.Release] of its lock, which wakes
// the next candidate. Resigning twice returns [ErrReleased]; a nil ctx is
// refused ([ErrInvalid]).
func (ld *Leadership) Resign(ctx context.Context) error {
	if err := checkCtx(ctx, "Resign"); err != nil {
		return err
	}
	return ld.l.Release(ctx)
}

// Lock returns the lock the leadership is made of (its fence is the term).
func (ld *Leadership) Lock() *Lock { return ld.l }
