package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel errors. Test for them with [errors.Is]; the errors returned carry
// more detail ([*QuorumError], [*NodeError]).
var (
	// ErrNotAcquired: Acquire gave up without the lock. The error it
	// returns also matches the context's error when the wait was cut short.
	ErrNotAcquired = errors.New("redlock: lock not acquired")

	// ErrLost: the lock's local deadline passed without a successful
	// extend, or an extend failed its quorum. Whatever was done under the
	// lock after that may have overlapped another holder; a fenced
	// downstream store rejects such writes.
	ErrLost = errors.New("redlock: lock lost")

	// ErrMaxHold: the watchdog stopped extending the lock because it had
	// been held for [AcquireOptions].MaxHold, and the lock ended at its
	// deadline. The error also matches [ErrLost].
	ErrMaxHold = errors.New("redlock: lock held for its MaxHold")

	// ErrReleased: the lock was released by its holder; it cannot be
	// extended or released again.
	ErrReleased = errors.New("redlock: lock released")

	// ErrClosed: Acquire (or Resume, Reenter) was called after
	// [Client.Close], or its wait was ended by Close. Create a new Client
	// with [New] to take more locks.
	ErrClosed = errors.New("redlock: client closed: create a new Client with New to acquire locks")

	// ErrHeld: a node answered that another owner holds the lock (a busy
	// lock, as opposed to nodes that could not be reached). A failed
	// Acquire's error matches it when at least one node said so;
	// [QuorumError].Held counts them and each node's [*HeldError] gives
	// the holder's remaining TTL there.
	ErrHeld = errors.New("redlock: held by another owner")

	// ErrBadCounter: a node's fence counter key holds something that is
	// not a decimal counter in [0, 2^63-2] (corrupt, negative, or about to
	// overflow). The acquire changed nothing on that node and is not
	// retried there: repair or delete the key by hand — deleting it lets
	// fences repeat unless it is set back to at least its old value.
	ErrBadCounter = errors.New("redlock: fence counter is not a counter")

	// ErrLimitMismatch: a quorum of the nodes refused a permit because
	// permits of the semaphore live on each of them were taken with
	// another limit ([Client.AcquirePermit]): that limit is in force, and
	// the call ends at once. Every client of a semaphore must use the same
	// limit. A new limit is usable as soon as no permit of the old one is
	// held: released (once the releases reached the nodes: Release returns
	// at a quorum, the rest land within the node timeout) or expired. A
	// node alone, or any minority, that refuses so is a node that did not
	// grant: the call goes on, and the error does not match this.
	ErrLimitMismatch = errors.New("redlock: the semaphore is in use with another limit")

	// ErrNoPerm: a node's ACL refused a command, key or channel to the
	// user the client logs in as (NOPERM, or a call inside a lock script
	// the user may not make). The node is not retried: grant the user the
	// commands, keys and channels of the README's "Minimal ACL".
	ErrNoPerm = errors.New("redlock: refused by the node's ACL")

	// ErrNodeTimeout: a node did not answer within the per-node timeout
	// ([Options].NodeTimeout, capped by the TTL). It is not
	// context.DeadlineExceeded, which stays the caller's own context's.
	ErrNodeTimeout = errors.New("redlock: no answer within the node timeout")

	// ErrNotAwaited: the call did not wait for a node's answer, because
	// the outcome was known without it (a quorum agreed, or so many
	// refused that none could) or the caller's context ended first. The
	// node may be healthy; its answer, when it comes, is still handled
	// (a late key is released).
	ErrNotAwaited = errors.New("redlock: not awaited")

	// ErrNotNew: a method was called on a Client that [New] (or
	// [NewWithNodes]) did not make — a zero Client, or a nil *Client. It
	// has no nodes to ask; make the Client with New.
	ErrNotNew = errors.New("redlock: Client was not made by New: use redlock.New")

	// ErrInvalid: an argument or option the call refuses before it sends
	// anything (a name, TTL, limit, value, handle, option or a nil
	// context). The error's text says which and what to pass instead;
	// nothing was written to the nodes.
	ErrInvalid = errors.New("redlock: invalid argument")
)

// invalidError is an argument refused before anything is sent. Its text is
// the whole message (it starts with "redlock:"); it matches [ErrInvalid],
// and whatever err wraps.
type invalidError struct{ err error }

func (e *invalidError) Error() string        { return e.err.Error() }
func (e *invalidError) Unwrap() error        { return e.err }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// invalidf returns an error matching [ErrInvalid], formatted as
// fmt.Errorf does (so %w wraps), for an argument a call refuses.
func invalidf(format string, args ...any) error {
	return &invalidError{err: fmt.Errorf(format, args...)}
}

// checkCtx refuses a nil context, which every call of a Client needs (it
// bounds the call): nothing is sent.
func checkCtx(ctx context.Context, op string) error {
	if ctx == nil {
		return invalidf("redlock: %s: nil context: pass context.Background(), or a context with a deadline to bound the wait", op)
	}
	return nil
}

// nodeTimeoutError is a node that did not answer within the per-node
// timeout. It matches ErrNodeTimeout.
type nodeTimeoutError struct{ after time.Duration }

func (e nodeTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %v (raise Options.NodeTimeout if the node is just slow)", e.after)
}

func (e nodeTimeoutError) Is(target error) bool { return target == ErrNodeTimeout }

// notAwaitedError is a node whose answer the round did not wait for. It
// matches ErrNotAwaited.
type notAwaitedError struct{ ctxEnded bool }

func (e notAwaitedError) Error() string {
	if e.ctxEnded {
		return "not awaited: the call's context ended first"
	}
	return "not awaited: the round was decided without it"
}

func (e notAwaitedError) Is(target error) bool { return target == ErrNotAwaited }

// HeldError is a node on which another owner holds the lock, with the
// holder's remaining TTL there (negative: no expiry). It matches [ErrHeld].
type HeldError struct{ TTL time.Duration }

func (e *HeldError) Error() string {
	if e.TTL < 0 {
		return "held by another owner, with no expiry"
	}
	return fmt.Sprintf("held by another owner for %v more", e.TTL)
}

// Is reports whether target is ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// badCounterError is a node that refused an acquire because its fence
// counter is corrupt (the script's BADCOUNTER error).
type badCounterError struct{ err error }

func (e badCounterError) Error() string {
	return e.err.Error() + ": repair the key (set it to at least its highest fence) or use another KeyPrefix"
}
func (e badCounterError) Unwrap() []error { return []error{ErrBadCounter, e.err} }

// limitError is a node that refused a permit because permits of the
// semaphore live on it were taken with another limit (the script's LIMIT
// error). One node's refusal, or a minority's, is a node that did not
// grant: it does not match [ErrLimitMismatch] (limitMismatchError does,
// when a quorum refused so).
type limitError struct{ err error }

func (e limitError) Error() string {
	return e.err.Error() + " on this node only: not in force unless a quorum of the nodes say so " +
		"(it lasts while that limit's permit, or a failed attempt's key, lives here)"
}
func (e limitError) Unwrap() error { return e.err }

// limitMismatchError is a node's LIMIT refusal when a quorum of the nodes
// refused so: the other limit is in force. It matches [ErrLimitMismatch].
type limitMismatchError limitError

func (e limitMismatchError) Error() string {
	return e.err.Error() + ": every client of a semaphore must use the same limit; a new limit is usable once no permit of the old one is held " +
		"(released, and the release reached the nodes, or expired: at most the old permits' TTL)"
}
func (e limitMismatchError) Unwrap() []error { return []error{ErrLimitMismatch, e.err} }

// aclError is a node whose ACL refused us (see deniedByACL).
type aclError struct{ err error }

func (e aclError) Error() string {
	return e.err.Error() + ": grant the lock user the commands, keys and channels of the README's \"Minimal ACL\""
}
func (e aclError) Unwrap() []error { return []error{ErrNoPerm, e.err} }

// deniedByACL reports whether err is a node refusing by its ACL: NOPERM
// for the command and its keys, or the error of a script that made a call
// the user may not make, which Redis 7.0 and 7.1 send as "ERR The user
// executing the script can't ..." and later versions as "ERR ACL failure
// in script: ...", without the NOPERM prefix.
func deniedByACL(err error) bool {
	if redis.HasErrorPrefix(err, "NOPERM") {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.Contains(msg, "The user executing the script can't") || strings.Contains(msg, "ACL failure in script")
}

// notOursError is a node on which the key is gone or holds another token.
type notOursError struct{}

func (notOursError) Error() string { return "key expired or taken by another owner" }

// NodeError is one node's failure. Node is the index of the node in the
// slice given to [New]; Addr is its address as its client reports it.
type NodeError struct {
	Node int
	Addr string
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("redlock: node %d (%s): %v", e.Node, e.Addr, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// permanent reports whether a node error will not go away by retrying: the
// key is of the wrong type, the fence counter is corrupt, the node is a
// read-only replica, the keys are in different Cluster slots, or the node
// refuses our credentials or commands. Such nodes count against the quorum
// for good, so Acquire fails fast once they make the quorum impossible.
func permanent(err error) bool {
	if errors.Is(err, ErrBadCounter) || errors.Is(err, ErrNoPerm) || deniedByACL(err) {
		return true
	}
	for _, p := range []string{"WRONGTYPE", "NOPERM", "WRONGPASS", "NOAUTH", "READONLY", "CROSSSLOT", "BADCOUNTER"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
