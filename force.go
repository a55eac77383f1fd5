package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redlock-go/redlock/internal/transport"
)

// Broken is what [Client.ForceRelease] deleted on one node.
type Broken struct {
	Node      int
	Addr      string
	Err       error  // the node failed or did not answer in time: its key, if any, is still there
	Deleted   bool   // a lock key was there and is gone
	Token     string // the token it held, when Deleted
	Reentrant bool   // it was a re-entrant lock, when Deleted
	Shared    bool   // it was held by readers (Client.AcquireShared), when Deleted: Token is ""
	Metadata  string // its holder's metadata, when Deleted
}

// ForceRelease deletes the lock name on every node, whoever holds it:
// an administrative break for a lock whose holder is known to be gone and
// whose TTL is too long to wait for (redlock break NAME). The fence counter
// stays (fences must never repeat), and so does the waiting order: the
// head of the queue is woken as by a release.
//
// It is dangerous: if the holder is still alive, it goes on believing it
// holds the lock until its next extend fails, while someone else takes it —
// mutual exclusion is broken for that time. Fencing still protects the
// downstream stores: the new holder's fence is larger, so the old holder's
// writes are refused by the guards. The library never calls it.
//
// ForceRelease waits for every node (or the node timeout) and returns what
// each one deleted; the error joins the nodes' failures (a node that was
// down keeps its key until its TTL ends). A key that is not a lock (another
// type) is left alone and reported as that node's error.
func (c *Client) ForceRelease(ctx context.Context, name string) ([]Broken, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "ForceRelease"); err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	r := sendRound(ctx, c, forceRequest(c.keys(name)), &transport.Spec[[]any]{
		PerNode: c.opts.NodeTimeout, Parse: sliceReply, Accept: anyAnswer[[]any]})
	out := make([]Broken, len(c.nodes))
	errs := nodeErrorsOf(c, r, c.opts.NodeTimeout, func(v []any) error {
		if len(v) != 3 {
			return fmt.Errorf("unexpected reply %v from the force-release script", v)
		}
		return nil
	})
	for i := range c.nodes {
		b := &out[i]
		b.Node, b.Addr, b.Err = i, c.nodes[i].addr, errs[i]
		if b.Err != nil {
			continue
		}
		kind, _ := r.Replies[i].Val[0].(string)
		b.Token, _ = r.Replies[i].Val[1].(string)
		b.Metadata, _ = r.Replies[i].Val[2].(string)
		b.Deleted, b.Reentrant = kind != "none", kind == "reentrant"
		b.Shared = kind == "shared"
	}
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 && ctx.Err() != nil {
		failed = append(failed, ctx.Err())
	}
	return out, errors.Join(failed...)
}
