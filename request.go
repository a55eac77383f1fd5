package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// request is one script call, alike for every node of a round.
type request struct {
	script *redis.Script
	keys   []string
	argv   []any
	// args is the EVALSHA command: "evalsha", sha, numkeys, keys...,
	// argv..., built once per round and shared, read only, by the round's
	// commands to every node.
	args []any
	// queued, if set, is set once the request is queued on every node's
	// sender.
	queued *atomic.Bool
	// op and name, if op is set, are what the nodes' answers are reported
	// as (EventNode), when the Client has an observer.
	op   EventKind
	name string

	buf [16]any // args, unless longer: one allocation for both
}

func newRequest(s *redis.Script, keys []string, argv ...any) *request {
	r := &request{script: s, keys: keys, argv: argv}
	args := r.buf[:0]
	args = append(args, "evalsha", scriptHash(s), len(keys))
	for _, k := range keys {
		args = append(args, k)
	}
	r.args = append(args, argv...)
	return r
}

// observed sets what the nodes' answers to r are reported as.
func (r *request) observed(op EventKind, name string) *request {
	r.op, r.name = op, name
	return r
}

// cmd returns the request's EVALSHA command for one node.
func (r *request) cmd(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx, r.args...)
	if len(r.keys) > 0 {
		cmd.SetFirstKeyPos(3) // where a Cluster client finds the slot
	}
	return cmd
}

// isNoScript reports whether err says the node does not have the script
// cached (it restarted, or its scripts were flushed): then it is sent
// again with EVAL, which caches it, as [redis.Script.Run] does.
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// int64Reply reads a script's integer reply.
func int64Reply(cmd *redis.Cmd) (int64, error) { return cmd.Int64() }

// scriptRound runs req on every node (on the nodes which selects, if which
// is not nil; the others count as having answered the zero value) and
// decides as [fanout] does. A node with a sender (every go-redis client)
// gets the call through it, so that concurrent rounds share one pipelined
// write to the node; any other node gets it through [redis.Script.Run] in
// a goroutine of c.goes. parse reads a node's reply. Late answers go to
// late in a goroutine of c.goes.
func scriptRound[T any](ctx context.Context, c *Client, need int, perNode time.Duration, req *request, which []bool,
	parse func(*redis.Cmd) (T, error),
	accept func(T, error) bool,
	late func(reply[T]),
) *round[T] {
	n := len(c.nodes)
	f := newFan(ctx, &c.goes, n, perNode, late)
	f.parse = parse
	f.obs = c.newRoundObserver(req.op, req.name)
	var ops []op // one allocation for the round's calls
	for i := range c.nodes {
		nd := &c.nodes[i]
		switch {
		case which != nil && !which[i]:
			f.deliver(reply[T]{node: i}, false)
		case nd.send != nil:
			if ops == nil {
				ops = make([]op, n)
			}
			o := &ops[i]
			*o = op{to: f, node: i, req: req, ctx: f.ctx, timeout: perNode, cmd: req.cmd(f.ctx)}
			nd.send.submit(o)
		default:
			c.goes.Go(func() {
				v, err := parse(req.script.Run(f.ctx, nd.client, req.keys, req.argv...))
				f.deliver(reply[T]{node: i, val: v, err: err}, false)
			})
		}
	}
	if req.queued != nil {
		req.queued.Store(true)
	}
	return f.wait(ctx, n, need, accept)
}

// answer reads op's reply and delivers it; called by the node's sender.
func (f *fan[T]) answer(o *op) {
	v, err := f.parse(o.cmd)
	f.deliver(reply[T]{node: o.node, val: v, err: err}, true)
}

// op is one call of a round to one node, on its way through the node's
// sender.
type op struct {
	to      interface{ answer(*op) } // the round (a *fan[T])
	node    int
	req     *request
	ctx     context.Context // the round's: its deadline is the per-node timeout after the round began
	timeout time.Duration   // the per-node timeout
	cmd     *redis.Cmd      // the command; holds the reply once answered
}
