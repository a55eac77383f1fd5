package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock/internal/cliflags"

	"github.com/redlock-go/redlock"
)

const statusUsage = `usage: redlock status [-n N] [flags] NAME

Show lock NAME on every node: reachable or not, the holder's token
(shortened), the remaining TTL, the fence counter, how many wait in the
node's queue, the holder's metadata (redlock run stores its host, pid and
command there) and for a re-entrant lock its holds; then whether a quorum
of the nodes currently holds it, for whom, and who waits for it, in the
order the lock will go to them (the head first), with how long each has
waited (at most 32 are listed; the depth counts them all). --json prints
the same as one JSON object, with full tokens (they prove ownership: show
them to admins only).

Exit codes, for scripts: 0 held (a quorum of the nodes hold it for one
owner); 1 free (a quorum of the nodes answered without it); 69 unknown
(EX_UNAVAILABLE: fewer nodes answered than a quorum, none at all
included, or the answers are split; the state says "unknown", never
"free"); 64 bad usage.

Semaphore: with -n N (N > 1) status shows semaphore NAME, as 'redlock run
-n N' takes it: for each of its N permits (slots) held, free or unknown,
with the holder's token, on how many nodes, the TTL left and the holder's
metadata; how many of the N are held; and who waits, the first (it holds
the semaphore's gate, and takes the next permit freed) then the others in
order. Give the N the runs give: status reads slots 0 to N-1 only. Exit
codes: 0 full (every permit held: a run would wait); 1 a permit is free;
69 unknown (fewer nodes answered than a quorum, or no permit free and
some unknown); 64 bad usage. -n 1, the default, is lock NAME.

` + nodesHelp + `
Every flag falls back to an environment variable: --node-timeout
$REDLOCK_NODE_TIMEOUT (or --timeout $REDLOCK_TIMEOUT, its old name),
--prefix $REDLOCK_PREFIX, --nodes $REDLOCK_NODES, --json $REDLOCK_JSON, -n
$REDLOCK_PERMITS. The command line wins. A yes-or-no flag takes 1, true,
yes or on; or 0, false, no or off.

Flags:
`

// exitFree is status's exit code for a lock that a quorum of the nodes
// reported free.
const exitFree = 1

type statusOptions struct {
	nodeFlags
	json  bool
	limit int // -n: with more than 1, semaphore NAME's permits
}

func statusFlags(out io.Writer) (*flag.FlagSet, *statusOptions) {
	o := &statusOptions{}
	fs := flag.NewFlagSet("redlock status", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, time.Second)
	boolVar(fs, &o.json, "json", "print the state as one JSON object (full tokens)")
	fs.IntVar(&o.limit, "n", 1, "show the `N` permits of semaphore NAME, as 'run -n N' takes them (1 is lock NAME)")
	cliflags.SetUsage(fs, statusUsage)
	return fs, o
}

// parseNameCmd parses the flags and the one NAME of a command that looks
// at one lock (status, break). It returns the name and the flags given on
// the command line (not from the environment), or "" and the exit code.
func parseNameCmd(cmd string, fs *flag.FlagSet, args []string, timeout *time.Duration, stdout, stderr io.Writer) (string, map[string]bool, int) {
	cmdline := map[string]bool{}
	pos, err := parseInterspersed(fs, args)
	if err == nil {
		fs.Visit(func(f *flag.Flag) { cmdline[f.Name] = true })
		_, err = applyEnv(cmd, fs)
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return "", nil, reportUsage(stderr, err)
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return "", nil, exitOK
	case err != nil:
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: %s", cmd, cliflags.FlagError(err)))
	case len(pos) == 0 || pos[0] == "":
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: missing lock NAME: redlock %s [flags] NAME", cmd, cmd))
	case len(pos) > 1:
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: unexpected argument %q after NAME %q", cmd, pos[1], pos[0]))
	case *timeout <= 0:
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: --node-timeout %v: want a positive duration such as 1s", cmd, *timeout))
	}
	return pos[0], cmdline, exitOK
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := statusFlags(io.Discard)
	name, _, code := parseNameCmd("status", fs, args, &o.nodeTimeout, stdout, stderr)
	if name == "" {
		return code
	}
	if o.limit < 1 || o.limit > redlock.MaxPermits {
		return reportUsage(stderr, usagef("status", "redlock: status: -n %d: want 1 to %d, the semaphore's limit as run -n gives it (1 is the plain lock NAME)", o.limit, redlock.MaxPermits))
	}
	s, code := openSession("status", &o.nodeFlags, 0, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	if o.limit > 1 {
		return permitsStatus(ctx, s, o, name, stdout, stderr)
	}

	st, err := s.client.Inspect(ctx, name)
	if err != nil {
		fmt.Fprintf(stderr, "redlock: status: %s\n", trimPrefix(err))
		return exitUsage
	}
	lockKey, _ := s.client.Keys(name)
	if o.json {
		if err := json.NewEncoder(stdout).Encode(jsonState(st, lockKey, s.nodes)); err != nil {
			fmt.Fprintf(stderr, "redlock: status: %v\n", err)
			return exitFailure
		}
	} else {
		printState(stdout, st, lockKey, s.nodes)
	}
	switch {
	case st.Held:
		return exitOK
	case st.Free:
		return exitFree
	case st.Answered < st.Quorum:
		fmt.Fprintf(stderr, "redlock: only %d of %s answered, a lock needs %d: the lock's state is unknown; check --nodes/$%s and that the servers are up\n", st.Answered, nodesN(len(st.Nodes)), st.Quorum, nodesEnv)
	default:
		fmt.Fprintf(stderr, "redlock: the nodes' answers are split: neither a quorum holding %q nor a free quorum; look again in a moment\n", name)
	}
	return exitUnavailable
}

// printState prints the table of the nodes and the quorum line.
func printState(w io.Writer, st *redlock.LockState, lockKey string, nodes []node) {
	fmt.Fprintf(w, "lock %q on %s (quorum %d), key %s\n", st.Name, nodesN(len(st.Nodes)), st.Quorum, lockKey)
	reentrant, meta := false, false
	for _, ns := range st.Nodes {
		reentrant = reentrant || ns.Reentrant
		meta = meta || ns.Metadata != ""
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "NODE\tADDRESS\tSTATE\tHOLDER\tTTL\tFENCE\tQUEUE"
	if reentrant {
		head += "\tHOLDS"
	}
	if meta || reentrant {
		head += "\tMETADATA"
	}
	fmt.Fprintln(tw, head)
	for i, ns := range st.Nodes {
		addr := nodes[i].addr
		fence := "-"
		if ns.Fence > 0 {
			fence = strconv.FormatUint(ns.Fence, 10)
		}
		switch {
		case !ns.Reachable:
			fmt.Fprintf(tw, "%d\t%s\tunreachable: %s\t-\t-\t-\t-", i, addr, oneLine(unwrapAll(ns.Err)))
		case ns.Err != nil:
			fmt.Fprintf(tw, "%d\t%s\tbad key: %s\t-\t-\t%s\t-", i, addr, oneLine(unwrapAll(ns.Err)), fence)
		case !ns.Held:
			fmt.Fprintf(tw, "%d\t%s\tup\tfree\t-\t%s\t%d", i, addr, fence, ns.Depth)
		case ns.Shared:
			fmt.Fprintf(tw, "%d\t%s\tup\t%d readers\t%s\t%s\t%d", i, addr, ns.Readers, formatTTL(ns.TTL), fence, ns.Depth)
		default:
			fmt.Fprintf(tw, "%d\t%s\tup\t%s\t%s\t%s\t%d", i, addr, short(ns.Token), formatTTL(ns.TTL), fence, ns.Depth)
		}
		if reentrant {
			if ns.Reentrant {
				fmt.Fprintf(tw, "\t%d", ns.Holds)
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		if meta || reentrant {
			if ns.Held {
				fmt.Fprintf(tw, "\t%q", ns.Metadata)
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w, quorumLine(st))
	printReaders(w, st)
	printQueue(w, st)
}

// printQueue prints who waits for the lock, the head first.
func printQueue(w io.Writer, st *redlock.LockState) {
	if st.Answered == 0 {
		fmt.Fprintln(w, "queue: unknown (no node answered)")
		return
	}
	if st.Depth == 0 {
		fmt.Fprintln(w, "queue: nobody waits")
		return
	}
	fmt.Fprintf(w, "queue: %d waiting, the head first\n", st.Depth)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tTOKEN\tCLIENT\tWAITED\tNODES")
	for i, wt := range st.Waiters {
		token := short(wt.Token)
		if wt.Shared {
			token += " (reader)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d/%d\n", i+1, token, wt.Client, wt.Age.Round(time.Millisecond), wt.Nodes, len(st.Nodes))
	}
	tw.Flush()
	if n := st.Depth - len(st.Waiters); n > 0 {
		fmt.Fprintf(w, "  … and %d more\n", n)
	}
}

func formatTTL(d time.Duration) string {
	switch {
	case d == -1:
		return "no expiry"
	case d < 0:
		return "expired"
	default:
		return d.Round(time.Millisecond).String()
	}
}

// quorumLine says whether a quorum of the nodes holds the lock, for whom.
func quorumLine(st *redlock.LockState) string {
	if st.Held && st.Shared {
		return fmt.Sprintf("held by quorum: yes (%d readers, %d/%s)", st.Readers, st.HeldOn, nodesN(len(st.Nodes)))
	}
	if st.Held {
		minTTL := time.Duration(-1)
		for _, ns := range st.Nodes {
			if ns.Held && ns.Token == st.Holder && (minTTL == -1 || ns.TTL >= 0 && ns.TTL < minTTL) {
				minTTL = ns.TTL
			}
		}
		line := fmt.Sprintf("held by quorum: yes (token %s, %d/%s, %s left)", short(st.Holder), st.HeldOn, nodesN(len(st.Nodes)), formatTTL(minTTL))
		if st.Set > 0 {
			line += fmt.Sprintf(", held as part of a set of %d names", st.Set)
		}
		return line
	}
	switch {
	case st.Free && st.HeldOn == 0:
		return "held by quorum: no (free on every node that answered)"
	case st.Free:
		return fmt.Sprintf("held by quorum: no (best: token %s on %d/%s, quorum %d)", short(st.Holder), st.HeldOn, nodesN(len(st.Nodes)), st.Quorum)
	case st.Answered < st.Quorum:
		return fmt.Sprintf("held by quorum: unknown (%d of %s answered, quorum %d)", st.Answered, nodesN(len(st.Nodes)), st.Quorum)
	}
	return fmt.Sprintf("held by quorum: unknown (best: token %s on %d/%s, quorum %d)", short(st.Holder), st.HeldOn, nodesN(len(st.Nodes)), st.Quorum)
}

// printReaders prints the readers of a lock held by readers, the soonest
// to expire first.
func printReaders(w io.Writer, st *redlock.LockState) {
	if !st.Shared || len(st.ReaderList) == 0 {
		return
	}
	fmt.Fprintf(w, "readers: %d, the soonest to expire first\n", st.Readers)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOKEN\tTTL\tNODES\tMETADATA")
	for _, r := range st.ReaderList {
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%q\n", short(r.Token), formatTTL(r.TTL), r.Nodes, len(st.Nodes), r.Metadata)
	}
	tw.Flush()
	if n := st.Readers - len(st.ReaderList); n > 0 {
		fmt.Fprintf(w, "  … and %d more\n", n)
	}
}
