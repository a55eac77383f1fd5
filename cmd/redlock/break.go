package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/redlock-go/redlock/internal/cliflags"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock"
)

const breakUsage = `usage: redlock break --yes [flags] NAME

Delete lock NAME on every node, whoever holds it (redlock.Client.ForceRelease),
and print what was deleted: per node, the holder's token and metadata.
--json prints it as one JSON object, with full tokens. The fence counter is
kept, so fences never repeat; the next waiter in line is woken.

This is dangerous: a holder that is still alive goes on working until its
next extend fails, while someone else takes the lock. Use it only for a
holder known to be dead whose TTL is too long to wait for. Fenced writes of
the old holder are refused by the guards, unfenced ones are not. Without
--yes, break changes nothing and says so.

Exit codes: 0 the lock is gone from every node; 1 a node failed (its key,
if any, stays until its TTL ends); 64 bad usage, or --yes missing.

` + nodesHelp + `
Every flag falls back to an environment variable: --node-timeout
$REDLOCK_NODE_TIMEOUT (or --timeout $REDLOCK_TIMEOUT, its old name),
--prefix $REDLOCK_PREFIX, --nodes $REDLOCK_NODES, --json $REDLOCK_JSON.
The command line wins, and --yes has none: it must be typed. A yes-or-no
flag takes 1, true, yes or on; or 0, false, no or off.

Flags:
`

type breakOptions struct {
	nodeFlags
	yes  bool
	json bool
}

func breakFlags(out io.Writer) (*flag.FlagSet, *breakOptions) {
	o := &breakOptions{}
	fs := flag.NewFlagSet("redlock break", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, time.Second)
	boolVar(fs, &o.yes, "yes", "really delete the lock, whoever holds it")
	boolVar(fs, &o.json, "json", "print what was deleted as one JSON object (full tokens)")
	cliflags.SetUsage(fs, breakUsage)
	return fs, o
}

func breakCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := breakFlags(io.Discard)
	name, cmdline, code := parseNameCmd("break", fs, args, &o.nodeTimeout, stdout, stderr)
	if name == "" {
		return code
	}
	// --yes must be typed: $REDLOCK_YES, left over in a shell, does not count.
	if !cmdline["yes"] || !o.yes {
		fmt.Fprintf(stderr, "redlock: break: not breaking %q without --yes: breaking a lock lets another holder in while the current one may still be working; run 'redlock status %s' first, then 'redlock break --yes %s'\n", name, name, name)
		return exitUsage
	}
	s, code := openSession("break", &o.nodeFlags, 0, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	broken, err := s.client.ForceRelease(ctx, name)
	if broken == nil {
		fmt.Fprintf(stderr, "redlock: break: %s\n", trimPrefix(err))
		return exitUsage
	}
	lockKey, _ := s.client.Keys(name)
	if o.json {
		if jerr := json.NewEncoder(stdout).Encode(jsonBroken(name, lockKey, broken, s.nodes)); jerr != nil {
			fmt.Fprintf(stderr, "redlock: break: %v\n", jerr)
			return exitFailure
		}
	} else {
		printBroken(stdout, name, lockKey, broken, s.nodes)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlock: break: some nodes failed; their keys stay until their TTLs end: %s\n", oneLine(err))
		return exitFailure
	}
	return exitOK
}

// printBroken prints the table of what break deleted on each node.
func printBroken(w io.Writer, name, lockKey string, broken []redlock.Broken, nodes []node) {
	fmt.Fprintf(w, "lock %q on %s, key %s\n", name, nodesN(len(broken)), lockKey)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tDELETED")
	for i, b := range broken {
		addr := nodes[i].addr
		switch {
		case b.Err != nil:
			fmt.Fprintf(tw, "%d\t%s\tfailed: %s\n", i, addr, oneLine(unwrapAll(b.Err)))
		case b.Deleted:
			kind := "lock"
			if b.Reentrant {
				kind = "re-entrant lock"
			}
			meta := ""
			if b.Metadata != "" {
				meta = fmt.Sprintf(" (metadata %q)", b.Metadata)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s of token %s%s\n", i, addr, kind, b.Token, meta)
		default:
			fmt.Fprintf(tw, "%d\t%s\tnothing (free)\n", i, addr)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "deleted on %d of %s; fence counters kept\n", deletedOn(broken), nodesN(len(broken)))
}

func deletedOn(broken []redlock.Broken) int {
	n := 0
	for _, b := range broken {
		if b.Deleted {
			n++
		}
	}
	return n
}

// breakJSON is break --json's output.
type breakJSON struct {
	Name    string       `json:"name"`
	Key     string       `json:"key"`
	Deleted int          `json:"deleted"` // on how many nodes a lock was deleted
	Nodes   []brokenJSON `json:"nodes"`
}

type brokenJSON struct {
	Node      int    `json:"node"`
	Addr      string `json:"addr"`
	Error     string `json:"error,omitempty"` // the node failed: its key, if any, stays until its TTL ends
	Deleted   bool   `json:"deleted"`
	Token     string `json:"token,omitempty"`
	Reentrant bool   `json:"reentrant,omitempty"`
	Metadata  string `json:"metadata,omitempty"`
}

func jsonBroken(name, lockKey string, broken []redlock.Broken, nodes []node) breakJSON {
	out := breakJSON{Name: name, Key: lockKey, Deleted: deletedOn(broken), Nodes: make([]brokenJSON, len(broken))}
	for i, b := range broken {
		out.Nodes[i] = brokenJSON{Node: i, Addr: nodes[i].addr, Deleted: b.Deleted, Token: b.Token, Reentrant: b.Reentrant, Metadata: b.Metadata}
		if b.Err != nil {
			out.Nodes[i].Error = oneLine(unwrapAll(b.Err))
		}
	}
	return out
}
