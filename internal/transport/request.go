package transport

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// Request is one script call, alike for every node of a round. It is made
// for one round and carries what the round needs, so that a round costs one
// allocation for all of it: the strings of its keys and arguments, their
// boxed form, the EVALSHA command and the calls to the nodes (ops). The
// fixed-size arrays hold what a lock's scripts need (at most 8 strings:
// a waiting acquire's lock key and seven arguments; 5 nodes); a larger
// request or cluster allocates as usual
// (BenchmarkRequest shows what they save).
type Request struct {
	script *Script
	keys   []string // the KEYS, in strs
	argv   []any    // the ARGV, as written: the tail of args
	// args is the EVALSHA command: "evalsha", sha, numkeys, keys...,
	// argv..., built once and shared, read only, by the round's commands
	// to every node.
	args []any

	sent atomic.Bool // ops is in use by a round
	strs [8]string   // the keys, then the arguments, unless more
	buf  [11]any     // args, unless longer
	ops  [5]op       // the round's calls, unless more nodes
}

// Script is a Lua script the nodes run: the go-redis script (EVALSHA with
// EVAL after NOSCRIPT) and its SHA1, boxed once for every command that
// carries it.
type Script struct {
	*redis.Script
	sha any
	src string
}

// NewScript returns the script of src.
func NewScript(src string) *Script {
	s := redis.NewScript(src)
	return &Script{Script: s, sha: s.Hash(), src: src}
}

// Source returns the script's source.
func (s *Script) Source() string { return s.src }

// NewRequest returns the call of script s with keys and argv.
func NewRequest(s *Script, keys []string, argv ...string) *Request {
	r := &Request{script: s}
	strs := append(append(r.strs[:0], keys...), argv...)
	r.keys = strs[:len(keys):len(keys)]
	args := append(r.buf[:0], "evalsha", s.sha, len(keys))
	for i := range strs {
		args = append(args, strArg{&strs[i]})
	}
	r.args = args
	r.argv = args[3+len(keys):]
	return r
}

// Keys returns the request's KEYS.
func (r *Request) Keys() []string { return r.keys }

// Argv returns the request's ARGV.
func (r *Request) Argv() []string {
	out := make([]string, len(r.argv))
	for i, a := range plainArgv(r.argv) {
		out[i] = a.(string)
	}
	return out
}

// Run runs the request on one node and returns its reply, for tests and
// tools; rounds go through Run's round (round.go).
func (r *Request) Run(ctx context.Context, c redis.Scripter) (any, error) {
	return r.script.Run(ctx, c, r.keys, plainArgv(r.argv)...).Result()
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

// cmd returns the request's EVALSHA command for one node.
func (r *Request) cmd(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx, r.args...)
	if len(r.keys) > 0 {
		cmd.SetFirstKeyPos(3) // where a Cluster client finds the slot
	}
	return cmd
}

// opsFor returns room for the calls of r's round to n nodes: r's own, if
// no other round took them (a request is made for one round, but nothing
// breaks if one is sent twice).
func (r *Request) opsFor(n int) []op {
	if n <= len(r.ops) && r.sent.CompareAndSwap(false, true) {
		return r.ops[:n]
	}
	return make([]op, n)
}

// IsNoScript reports whether err says the node does not have the script
// cached (it restarted, or its scripts were flushed): then it is sent
// again with EVAL, which caches it, as [redis.Script.Run] does.
func IsNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// op is one call of a round to one node, on its way through the node's
// sender. What every call of the round shares (its context, its per-node
// timeout) the round holds, so that the request's room for five calls
// stays small.
type op struct {
	to   round // the round (a *fan[T])
	node int
	req  *Request
	cmd  *redis.Cmd // the command; holds the reply once answered
}

// round is what a node's sender needs of the round a call belongs to.
type round interface {
	// answer takes the call's reply (in its cmd).
	answer(*op)
	// bounds returns the round's context, whose deadline is the per-node
	// timeout after the round began, and that timeout.
	bounds() (context.Context, time.Duration)
}
