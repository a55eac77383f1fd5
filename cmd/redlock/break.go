package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

const breakUsage = `usage: redlock break --yes [flags] NAME

Delete lock NAME on every node, whoever holds it (redlock.Client.ForceRelease),
and print what was deleted. The fence counter is kept, so fences never
repeat; the next waiter in line is woken.

This is dangerous: a holder that is still alive goes on working until its
next extend fails, while someone else takes the lock. Use it only for a
holder known to be dead whose TTL is too long to wait for. Fenced writes of
the old holder are refused by the guards, unfenced ones are not. Without
--yes, break changes nothing and says so.

Exit codes: 0 the lock is gone from every node; 1 a node failed (its key,
if any, stays until its TTL ends); 64 bad usage, or --yes missing.

` + nodesHelp + `
Every flag falls back to an environment variable: --timeout
$REDLOCK_TIMEOUT, --prefix $REDLOCK_PREFIX, --nodes $REDLOCK_NODES. The
command line wins, and --yes has none: it must be typed.

Flags:
`

type breakOptions struct {
	nodeFlags
	timeout time.Duration
	yes     bool
}

func breakFlags(out io.Writer) (*flag.FlagSet, *breakOptions) {
	o := &breakOptions{}
	fs := flag.NewFlagSet("redlock break", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, false)
	fs.DurationVar(&o.timeout, "timeout", time.Second, "how long to wait for each node's answer")
	fs.BoolVar(&o.yes, "yes", false, "really delete the lock, whoever holds it")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), breakUsage)
		fs.PrintDefaults()
	}
	return fs, o
}

func breakCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := breakFlags(io.Discard)
	name, cmdline, code := parseNameCmd("break", fs, args, &o.timeout, stdout, stderr)
	if name == "" {
		return code
	}
	// --yes must be typed: $REDLOCK_YES, left over in a shell, does not count.
	if !cmdline["yes"] || !o.yes {
		fmt.Fprintf(stderr, "redlock: break: not breaking %q without --yes: breaking a lock lets another holder in while the current one may still be working; run 'redlock status %s' first, then 'redlock break --yes %s'\n", name, name, name)
		return exitUsage
	}
	o.nodeTimeout = o.timeout
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
	fmt.Fprintf(stdout, "lock %q on %d nodes, key %s\n", name, len(broken), lockKey)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tDELETED")
	deleted := 0
	for i, b := range broken {
		addr := s.nodes[i].addr
		switch {
		case b.Err != nil:
			fmt.Fprintf(tw, "%d\t%s\tfailed: %s\n", i, addr, oneLine(unwrapAll(b.Err)))
		case b.Deleted:
			deleted++
			kind := "lock"
			if b.Reentrant {
				kind = "re-entrant lock"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s of token %s\n", i, addr, kind, b.Token)
		default:
			fmt.Fprintf(tw, "%d\t%s\tnothing (free)\n", i, addr)
		}
	}
	tw.Flush()
	fmt.Fprintf(stdout, "deleted on %d of %d nodes; fence counters kept\n", deleted, len(broken))
	if err != nil {
		fmt.Fprintf(stderr, "redlock: break: some nodes failed; their keys stay until their TTLs end: %s\n", oneLine(err))
		return exitFailure
	}
	return exitOK
}
