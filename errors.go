package redlock

import (
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

	// ErrReleased: the lock was released by its holder; it cannot be
	// extended or released again.
	ErrReleased = errors.New("redlock: lock released")
)

// errNodeTimeout is a node that did not answer within the per-node timeout.
// It does not match context.DeadlineExceeded on purpose: that error is kept
// for the caller's own context.
type nodeTimeoutError struct{ after time.Duration }

func (e nodeTimeoutError) Error() string {
	return fmt.Sprintf("no answer within %v (raise Options.NodeTimeout if the node is just slow)", e.after)
}

// heldError is a node on which another owner holds the lock.
type heldError struct{ ttl time.Duration }

func (e heldError) Error() string {
	if e.ttl < 0 {
		return "held by another owner, with no expiry"
	}
	return fmt.Sprintf("held by another owner for %v more", e.ttl)
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

// QuorumError reports an operation that did not reach its quorum, or reached
// it too late to be of use. It matches [ErrNotAcquired] (acquire) or
// [ErrLost] (extend), every per-node error, and the caller's context error
// when the context ended the wait.
type QuorumError struct {
	Op       string        // "acquire", "extend" or "fence write-back"
	Name     string        // lock name
	Quorum   int           // answers needed
	Agreed   int           // answers that agreed
	Validity time.Duration // when the quorum came too late: the validity left (<= 0)
	Attempts int           // acquire attempts made
	Nodes    []error       // per node, in node order: nil where the node agreed
	Err      error         // the caller's context error, if it ended the wait

	sentinel error
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: %s %q: ", e.Op, e.Name)
	switch {
	case e.Nodes == nil:
		fmt.Fprintf(&b, "no attempt made: still waiting for this client's earlier Acquire of the same name")
	case e.Agreed >= e.Quorum && e.Validity <= 0:
		fmt.Fprintf(&b, "quorum of %d reached too late (validity %v): raise the TTL or lower Options.NodeTimeout", e.Quorum, e.Validity)
	default:
		fmt.Fprintf(&b, "%d of %d nodes agreed, quorum is %d", e.Agreed, len(e.Nodes), e.Quorum)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "; gave up: %v", e.Err)
	}
	for i, err := range e.Nodes {
		if err == nil {
			continue
		}
		var ne *NodeError
		if errors.As(err, &ne) {
			fmt.Fprintf(&b, "; node %d (%s): %v", ne.Node, ne.Addr, ne.Err)
		} else {
			fmt.Fprintf(&b, "; node %d: %v", i, err)
		}
	}
	return b.String()
}

// Unwrap lets errors.Is and errors.As see the sentinel, the context error
// and every node's error.
func (e *QuorumError) Unwrap() []error {
	errs := make([]error, 0, len(e.Nodes)+2)
	if e.sentinel != nil {
		errs = append(errs, e.sentinel)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, err := range e.Nodes {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// permanent reports whether a node error will not go away by retrying: the
// key is of the wrong type, or the node refuses our credentials or commands.
// Such nodes count against the quorum for good, so Acquire fails fast once
// they make the quorum impossible.
func permanent(err error) bool {
	for _, p := range []string{"WRONGTYPE", "NOPERM", "WRONGPASS", "NOAUTH"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
