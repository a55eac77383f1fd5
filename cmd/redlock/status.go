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

	"github.com/redlock-go/redlock"
)

const statusUsage = `usage: redlock status [flags] NAME

Show lock NAME on every node: reachable or not, the holder's token
(shortened), the remaining TTL and the fence counter, and for a re-entrant
lock its holds and the holder's metadata; then whether a quorum of the
nodes currently holds it, for whom. --json prints the same as one JSON
object, with the full token (it proves ownership: show it to admins only).

Exit codes, for scripts: 0 held (a quorum of the nodes hold it for one
owner); 1 free (a quorum of the nodes answered without it); 69 unknown
(fewer nodes answered than a quorum, or the answers are split); 64 bad
usage.

` + nodesHelp + `
Every flag falls back to an environment variable: --timeout
$REDLOCK_TIMEOUT, --prefix $REDLOCK_PREFIX, --nodes $REDLOCK_NODES, --json
$REDLOCK_JSON. The command line wins.

Flags:
`

// exitFree is status's exit code for a lock that a quorum of the nodes
// reported free.
const exitFree = 1

type statusOptions struct {
	nodeFlags
	timeout time.Duration
	json    bool
}

func statusFlags(out io.Writer) (*flag.FlagSet, *statusOptions) {
	o := &statusOptions{}
	fs := flag.NewFlagSet("redlock status", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, false)
	fs.DurationVar(&o.timeout, "timeout", time.Second, "how long to wait for each node's answer")
	fs.BoolVar(&o.json, "json", false, "print the state as one JSON object (full tokens)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), statusUsage)
		fs.PrintDefaults()
	}
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
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: %v", cmd, err))
	case len(pos) == 0 || pos[0] == "":
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: missing lock NAME: redlock %s [flags] NAME", cmd, cmd))
	case len(pos) > 1:
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: unexpected argument %q after NAME %q", cmd, pos[1], pos[0]))
	case *timeout <= 0:
		return "", nil, reportUsage(stderr, usagef(cmd, "redlock: %s: --timeout %v: want a positive duration such as 1s", cmd, *timeout))
	}
	return pos[0], cmdline, exitOK
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := statusFlags(io.Discard)
	name, _, code := parseNameCmd("status", fs, args, &o.timeout, stdout, stderr)
	if name == "" {
		return code
	}
	o.nodeTimeout = o.timeout
	s, code := openSession("status", &o.nodeFlags, 0, stderr)
	if s == nil {
		return code
	}
	defer s.close()

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
	up := 0
	for _, ns := range st.Nodes {
		if ns.Reachable {
			up++
		}
	}
	switch {
	case st.Held:
		return exitOK
	case st.Free:
		return exitFree
	case up < st.Quorum:
		fmt.Fprintf(stderr, "redlock: only %d of %d nodes answered, a lock needs %d: check --nodes/$%s and that the servers are up\n", up, len(st.Nodes), st.Quorum, nodesEnv)
	default:
		fmt.Fprintf(stderr, "redlock: the nodes' answers are split: neither a quorum holding %q nor a free quorum; look again in a moment\n", name)
	}
	return exitUnavailable
}

// printState prints the table of the nodes and the quorum line.
func printState(w io.Writer, st *redlock.LockState, lockKey string, nodes []node) {
	fmt.Fprintf(w, "lock %q on %d nodes (quorum %d), key %s\n", st.Name, len(st.Nodes), st.Quorum, lockKey)
	reentrant := false
	for _, ns := range st.Nodes {
		reentrant = reentrant || ns.Reentrant
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "NODE\tADDRESS\tSTATE\tHOLDER\tTTL\tFENCE"
	if reentrant {
		head += "\tHOLDS\tMETADATA"
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
			fmt.Fprintf(tw, "%d\t%s\tunreachable: %s\t-\t-\t-", i, addr, oneLine(unwrapAll(ns.Err)))
		case ns.Err != nil:
			fmt.Fprintf(tw, "%d\t%s\tbad key: %s\t-\t-\t%s", i, addr, oneLine(unwrapAll(ns.Err)), fence)
		case !ns.Held:
			fmt.Fprintf(tw, "%d\t%s\tup\tfree\t-\t%s", i, addr, fence)
		default:
			fmt.Fprintf(tw, "%d\t%s\tup\t%s\t%s\t%s", i, addr, short(ns.Token), formatTTL(ns.TTL), fence)
		}
		if reentrant {
			if ns.Reentrant {
				fmt.Fprintf(tw, "\t%d\t%q", ns.Holds, ns.Metadata)
			} else {
				fmt.Fprint(tw, "\t-\t-")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w, quorumLine(st))
}

// statusJSON is status --json's output.
type statusJSON struct {
	Name   string     `json:"name"`
	Key    string     `json:"key"`
	Quorum int        `json:"quorum"`
	State  string     `json:"state"`  // "held", "free" or "unknown"
	Holder string     `json:"holder"` // the token on the most nodes, "" when none
	HeldOn int        `json:"held_on"`
	Nodes  []nodeJSON `json:"nodes"`
}

type nodeJSON struct {
	Node      int    `json:"node"`
	Addr      string `json:"addr"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Held      bool   `json:"held"`
	Token     string `json:"token,omitempty"`
	Reentrant bool   `json:"reentrant,omitempty"`
	Metadata  string `json:"metadata,omitempty"`
	Holds     int    `json:"holds"`
	TTLms     int64  `json:"ttl_ms"` // -1: no expiry; 0 when not held
	Fence     uint64 `json:"fence"`  // the node's fence counter, 0 when none
}

func jsonState(st *redlock.LockState, lockKey string, nodes []node) statusJSON {
	out := statusJSON{Name: st.Name, Key: lockKey, Quorum: st.Quorum, State: "unknown", Holder: st.Holder, HeldOn: st.HeldOn,
		Nodes: make([]nodeJSON, len(st.Nodes))}
	switch {
	case st.Held:
		out.State = "held"
	case st.Free:
		out.State = "free"
	}
	for i, ns := range st.Nodes {
		n := nodeJSON{Node: i, Addr: nodes[i].addr, Reachable: ns.Reachable, Held: ns.Held, Token: ns.Token,
			Reentrant: ns.Reentrant, Metadata: ns.Metadata, Holds: ns.Holds, Fence: ns.Fence}
		if ns.Err != nil {
			n.Error = oneLine(unwrapAll(ns.Err))
		}
		if ns.Held {
			n.TTLms = ns.TTL.Milliseconds()
			if ns.TTL < 0 {
				n.TTLms = -1
			}
		}
		out.Nodes[i] = n
	}
	return out
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
	if st.Held {
		minTTL := time.Duration(-1)
		for _, ns := range st.Nodes {
			if ns.Held && ns.Token == st.Holder && (minTTL == -1 || ns.TTL >= 0 && ns.TTL < minTTL) {
				minTTL = ns.TTL
			}
		}
		return fmt.Sprintf("held by quorum: yes (token %s, %d/%d nodes, %s left)", short(st.Holder), st.HeldOn, len(st.Nodes), formatTTL(minTTL))
	}
	if st.HeldOn == 0 {
		return "held by quorum: no (free on every node that answered)"
	}
	return fmt.Sprintf("held by quorum: no (best: token %s on %d/%d nodes, quorum %d)", short(st.Holder), st.HeldOn, len(st.Nodes), st.Quorum)
}
