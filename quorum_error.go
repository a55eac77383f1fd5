package redlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// QuorumError reports an operation that did not reach its quorum, or reached
// it too late to be of use. It matches [ErrNotAcquired] (acquire) or
// [ErrLost] (extend), every per-node error, and the caller's context error
// when the context ended the wait.
type QuorumError struct {
	Op       string        // "acquire", "acquire permit" (a semaphore's scan), "extend" or "fence write-back"
	Name     string        // lock name
	Quorum   int           // answers needed
	Agreed   int           // answers that agreed
	Held     int           // acquire: nodes that answered that another owner holds the lock
	Validity time.Duration // when the quorum came too late: the validity left (<= 0)
	Attempts int           // acquire attempts made
	Nodes    []error       // per node, in node order: nil where the node agreed
	Err      error         // the caller's context error, or ErrClosed, if it ended the wait

	sentinel error
	untried  untried // why no node was asked, when none was
}

// untried says why an Acquire call asked no node at all.
type untried uint8

const (
	tried         untried = iota // an attempt was made (or the error is not an Acquire's)
	beforeAttempt                // ctx had ended (or Close begun) before the first attempt
	waitingTurn                  // ctx or Close ended the wait for the call's local turn
)

func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: %s %q: ", e.Op, e.Name)
	if e.untried != tried {
		e.writeUntried(&b)
		return b.String()
	}
	switch {
	case e.Agreed >= e.Quorum && e.Validity <= 0:
		fmt.Fprintf(&b, "quorum of %d reached too late (validity %v): raise the TTL or lower Options.NodeTimeout", e.Quorum, e.Validity)
	default:
		fmt.Fprintf(&b, "%d of %d nodes agreed, quorum is %d", e.Agreed, len(e.Nodes), e.Quorum)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "; gave up: %s", strings.TrimPrefix(e.Err.Error(), "redlock: "))
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

// writeUntried says why no node was asked: what ended the call, and when.
func (e *QuorumError) writeUntried(b *strings.Builder) {
	b.WriteString("no attempt made: ")
	if errors.Is(e.Err, ErrClosed) {
		b.WriteString("the Client was closed")
	} else {
		fmt.Fprint(b, e.Err) // the context's error
	}
	switch e.untried {
	case beforeAttempt:
		b.WriteString(" before the first attempt")
	case waitingTurn:
		b.WriteString(" while the call waited for its turn behind an earlier Acquire of the same name by this Client (which holds the lock or waits for it)")
	}
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

// hopeless reports whether so many nodes failed for good (wrong key type,
// a corrupt counter, a replica, refused credentials) that no retry can
// reach a quorum.
func (c *Client) hopeless(e *QuorumError) bool {
	n := 0
	for _, err := range e.Nodes {
		if err != nil && permanent(errors.Unwrap(err)) {
			n++
		}
	}
	return n > len(c.nodes)-c.quorum
}
