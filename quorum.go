package redlock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// quorumOf is the number of nodes out of n that a lock needs: a majority,
// so that any two quorums share a node.
func quorumOf(n int) int { return n/2 + 1 }

// decided reports whether a round over n nodes that needs need agreeing
// answers is decided after ok agreed and failed did not: either need
// agreed, or so many failed that need can no longer be reached. The
// answers still pending cannot change the outcome then, so the round does
// not wait for them: a slow or dead minority never delays a call.
func decided(ok, failed, n, need int) bool {
	return ok >= need || failed > n-need
}

// sendRound sends req to every node (those spec.Which selects) and returns
// once the round is decided by the quorum rule (spec.Need accepted, or so
// many refused that it cannot be), every node answered, the per-node
// timeout ran out, or ctx ended. With spec.Need <= 0 it waits for every
// node.
func sendRound[T any](ctx context.Context, c *Client, req *transport.Request, spec *transport.Spec[T]) *transport.Round[T] {
	spec.Decided = decided
	return transport.Run(ctx, &c.goes, c.links, req, spec)
}

// observed returns spec with every node's answer reported to the Client's
// observer as one of an op round on lock name (an EventNode) sent by a call
// with context ctx, if the Client has an observer.
func observed[T any](ctx context.Context, c *Client, spec *transport.Spec[T], op EventKind, name string) *transport.Spec[T] {
	if o := c.newRoundObserver(ctx, op, name); o != nil {
		spec.Observe = o.answered
	}
	return spec
}

// int64Reply reads a script's integer reply.
func int64Reply(cmd *redis.Cmd) (int64, error) { return cmd.Int64() }

// sliceReply reads a script's table reply.
func sliceReply(cmd *redis.Cmd) ([]any, error) { return cmd.Slice() }

// isOne accepts a node's answer 1 (it extended, it added the hold).
func isOne(v int64, err error) bool { return err == nil && v == 1 }

// anyAnswer accepts every answer: for rounds that wait for every node.
func anyAnswer[T any](T, error) bool { return true }

// nodeErrorsOf turns a round's answers into one error per node (nil where
// the node agreed), naming the node: refused says what an answer that is
// not an error means (nil: agreed), timeout is the round's per-node
// timeout.
func nodeErrorsOf[T any](c *Client, r *transport.Round[T], timeout time.Duration, refused func(T) error) []error {
	errs := make([]error, len(r.Replies))
	for i, rp := range r.Replies {
		var err error
		switch {
		case !r.Answered[i] && r.TimedOut:
			err = nodeTimeoutError{after: timeout}
		case !r.Answered[i]:
			err = notAwaitedError{ctxEnded: r.CtxEnded}
		case rp.Err == nil: // the common case: no error to look into
			err = refused(rp.Val)
		case redis.HasErrorPrefix(rp.Err, "BADCOUNTER"):
			err = badCounterError{rp.Err}
		case redis.HasErrorPrefix(rp.Err, "LIMIT"):
			err = limitError{rp.Err}
		case deniedByACL(rp.Err):
			err = aclError{rp.Err}
		default:
			err = rp.Err
		}
		if err != nil {
			errs[i] = &NodeError{Node: i, Addr: c.nodes[i].addr, Err: err}
		}
	}
	return errs
}

// noRefusal reads every answer as agreement: for rounds whose answers
// refuse nothing (release, cleanup).
func noRefusal[T any](T) error { return nil }
