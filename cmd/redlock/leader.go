package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/cliflags"
)

const leaderUsage = `usage: redlock leader [flags] NAME

Print the current leader of election NAME (the value its candidate gave,
'redlock elect --value'), its term (the fence its command got as
$REDLOCK_TERM; "no term recorded", and no "term" in JSON, for a holder
that did not campaign or whose record was lost) and how long it is sure to
lead without another extend; or say that nobody leads. --json prints one
JSON object: {"name", "held", "value", "term", "remaining_ms"}.

Exit codes, for scripts, as status's: 0 a leader; 1 no leader (a quorum of
the nodes answered, and no leader holds a quorum of them); 69 unknown
(EX_UNAVAILABLE: fewer nodes answered than a quorum); 64 bad usage.

` + nodesHelp + `
Every flag falls back to an environment variable: --node-timeout
$REDLOCK_NODE_TIMEOUT (or --timeout $REDLOCK_TIMEOUT, its old name),
--prefix $REDLOCK_PREFIX, --nodes $REDLOCK_NODES, --json $REDLOCK_JSON.
The command line wins. A yes-or-no flag takes 1, true, yes or on; or 0,
false, no or off.

Flags:
`

func leaderFlags(out io.Writer) (*flag.FlagSet, *statusOptions) {
	o := &statusOptions{}
	fs := flag.NewFlagSet("redlock leader", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, time.Second)
	boolVar(fs, &o.json, "json", "print the leader as one JSON object")
	cliflags.SetUsage(fs, leaderUsage)
	return fs, o
}

// jsonLeader is the leader as --json prints it.
type jsonLeader struct {
	Name        string `json:"name"`
	Held        bool   `json:"held"`
	Value       string `json:"value,omitempty"`
	Term        uint64 `json:"term,omitempty"`
	RemainingMS int64  `json:"remaining_ms,omitempty"`
}

func leaderCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := leaderFlags(io.Discard)
	name, _, code := parseNameCmd("leader", fs, args, &o.nodeTimeout, stdout, stderr)
	if name == "" {
		return code
	}
	s, code := openSession("leader", &o.nodeFlags, 0, stderr)
	if s == nil {
		return code
	}
	defer s.close()

	info, err := s.client.Leader(ctx, name)
	switch {
	case errors.Is(err, redlock.ErrLeaderUnknown):
		fmt.Fprintf(stderr, "redlock: leader of %q: %s; check --nodes/$%s and that the servers are up\n", name, trimPrefix(err), nodesEnv)
		return exitUnavailable
	case err != nil:
		fmt.Fprintf(stderr, "redlock: leader: %s\n", trimPrefix(err))
		return exitUsage
	}
	if o.json {
		j := jsonLeader{Name: name, Held: info.Held, Value: info.Value, Term: info.Term, RemainingMS: info.Remaining.Milliseconds()}
		if err := json.NewEncoder(stdout).Encode(j); err != nil {
			fmt.Fprintf(stderr, "redlock: leader: %v\n", err)
			return exitFailure
		}
	} else if info.Held && info.Term == 0 { // no term recorded (see Client.Leader)
		fmt.Fprintf(stdout, "leader of %q: %s (no term recorded, %v left)\n", name, info.Value, info.Remaining.Round(time.Millisecond))
	} else if info.Held {
		fmt.Fprintf(stdout, "leader of %q: %s (term %d, %v left)\n", name, info.Value, info.Term, info.Remaining.Round(time.Millisecond))
	} else {
		fmt.Fprintf(stdout, "no leader of %q\n", name)
	}
	if !info.Held {
		return exitFree
	}
	return exitOK
}
