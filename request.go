package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// request is one script call, alike for every node of a round. It is made
// for one round and carries what the round needs, so that a round costs one
// allocation for all of it: the strings of its keys and arguments, their
// boxed form, the EVALSHA command and the calls to the nodes (ops).
type request struct {
	script *redis.Script
	keys   []string // the KEYS, in strs
	argv   []any    // the ARGV, as written: the tail of args
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

	sent atomic.Bool // ops is in use by a round
	strs [12]string  // the keys, then the arguments, unless more
	buf  [16]any     // args, unless longer
	ops  [5]op       // the round's calls, unless more nodes
}

func newRequest(s *redis.Script, keys []string, argv ...string) *request {
	r := &request{script: s}
	strs := append(append(r.strs[:0], keys...), argv...)
	r.keys = strs[:len(keys):len(keys)]
	args := append(r.buf[:0], "evalsha", scriptHash(s), len(keys))
	for i := range strs {
		args = append(args, strArg{&strs[i]})
	}
	r.args = args
	r.argv = args[3+len(keys):]
	return r
}

// strArg is a string argument of a command, boxed without an allocation:
// an interface holds a one-pointer struct as it is, where a string would be
// copied to the heap first. go-redis writes it with MarshalBinary (the
// string's own bytes, which it only reads) and prints it, in logs and
// traces, with String.
type strArg struct{ s *string }

func (a strArg) MarshalBinary() ([]byte, error) {
	return unsafe.Slice(unsafe.StringData(*a.s), len(*a.s)), nil
}

func (a strArg) String() string { return *a.s }

// plainArgv returns argv with its strings as plain strings, for a node that
// is not a go-redis client (a Scripter of the caller's), which may expect
// them.
func plainArgv(argv []any) []any {
	out := make([]any, len(argv))
	for i, a := range argv {
		if s, ok := a.(strArg); ok {
			a = *s.s
		}
		out[i] = a
	}
	return out
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
	var ops []op
	for i := range c.nodes {
		nd := &c.nodes[i]
		switch {
		case which != nil && !which[i]:
			f.deliver(reply[T]{node: i}, false)
		case nd.send != nil:
			if ops == nil {
				ops = req.opsFor(n)
			}
			o := &ops[i]
			*o = op{to: f, node: i, req: req, ctx: f.ctx, timeout: perNode, cmd: req.cmd(f.ctx)}
			nd.send.submit(o)
		default:
			c.goes.Go(func() {
				v, err := parse(req.script.Run(f.ctx, nd.client, req.keys, plainArgv(req.argv)...))
				f.deliver(reply[T]{node: i, val: v, err: err}, false)
			})
		}
	}
	if req.queued != nil {
		req.queued.Store(true)
	}
	return f.wait(ctx, n, need, accept)
}

// opsFor returns room for the calls of r's round to n nodes: r's own, if
// no other round took them (a request is made for one round, but nothing
// breaks if one is sent twice).
func (r *request) opsFor(n int) []op {
	if n <= len(r.ops) && r.sent.CompareAndSwap(false, true) {
		return r.ops[:n]
	}
	return make([]op, n)
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
