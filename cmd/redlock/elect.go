package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/cliflags"
)

const electUsage = `usage: redlock elect [flags] NAME [--] COMMAND [ARGS...]
       redlock elect [flags] NAME -c 'SHELL COMMAND'

Campaign in election NAME: wait until this process leads (it holds lock
NAME, with --value as who leads), then run COMMAND while it leads, as
'redlock run' does: the watchdog extends the leadership every TTL/3, and
when the leadership is lost COMMAND's process group gets SIGTERM, then
SIGKILL after --grace (exit 76). When COMMAND exits, the leadership is
resigned and the next candidate leads. 'redlock leader NAME' shows who
leads. --wait bounds the campaign (default forever); --wait 0 tries once.
The command line is read as run's (see 'redlock help run').

COMMAND gets run's variables (REDLOCK_NAME, REDLOCK_TOKEN, REDLOCK_FENCE)
and REDLOCK_TERM, the leadership's term: its fence, larger than every
earlier leader's. Send it with every write only the leader may make.

--value TEXT says who leads (default "host HOST pid PID"), at most 256
bytes of printable UTF-8; every observer reads it.

Exit codes:
  N    COMMAND's own exit code (128+S if it was killed by signal S)
  64   bad usage: flags, environment, arguments or node URLs (EX_USAGE)
  69   fewer nodes reachable than a quorum (EX_UNAVAILABLE)
  75   another candidate led (or came first) until --wait ran out; with
       --wait 0, at once (EX_TEMPFAIL)
  76   leadership lost while COMMAND ran; COMMAND was stopped
  126  COMMAND could not be executed; 127 COMMAND not found
  128+S  redlock got signal S while campaigning

` + nodesHelp + `
Every flag falls back to an environment variable: --ttl $REDLOCK_TTL,
--wait $REDLOCK_WAIT, --grace $REDLOCK_GRACE, --value $REDLOCK_VALUE,
--node-timeout $REDLOCK_NODE_TIMEOUT, --prefix $REDLOCK_PREFIX, -v
$REDLOCK_VERBOSE (1, true, yes or on; or 0, false, no or off), --nodes
$REDLOCK_NODES; -c has none. The command line wins.

Flags:
`

func electFlags(out io.Writer) (*flag.FlagSet, *runOptions) {
	o := &runOptions{wait: waitFlag{forever: true}, conflictExit: exitTempFail}
	fs := flag.NewFlagSet("redlock elect", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, 0)
	fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "leadership lease; the watchdog extends it every ttl/3")
	fs.Var(&o.wait, "wait", "how long to campaign: a `duration`, 0 to try once, or forever")
	fs.DurationVar(&o.grace, "grace", defaultGrace, "after a lost leadership, time between SIGTERM and SIGKILL; at most ttl - ttl/3 - drift - node timeout")
	boolVar(fs, &o.verbose, "v", "report leadership and resignation on stderr")
	fs.StringVar(&o.metadata, "value", "", "who leads: `text` every observer reads (default \"host HOST pid PID\")")
	fs.StringVar(&o.shell, "c", "", "run `'SHELL COMMAND'` with sh -c, instead of a COMMAND after NAME (as flock -c)")
	cliflags.SetUsage(fs, electUsage)
	return fs, o
}

// parseElect parses the elect command line (see parseCommandLine).
func parseElect(args []string, stdout io.Writer) (o *runOptions, name string, command []string, err error) {
	fs, o := electFlags(io.Discard)
	name, command, set, err := parseCommandLine("elect", fs, args, stdout)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case o.ttl <= 0:
		return nil, "", nil, usagef("elect", "redlock: elect: --ttl %v: want a positive duration such as 30s", o.ttl)
	case o.grace < 0:
		return nil, "", nil, usagef("elect", "redlock: elect: --grace %v: want 0 or a positive duration", o.grace)
	case o.nodeTimeout < 0:
		return nil, "", nil, usagef("elect", "redlock: elect: --node-timeout %v: want a positive duration", o.nodeTimeout)
	case set["value"] && (o.metadata == "" || len(o.metadata) > redlock.MaxMetadataLen || !utf8.ValidString(o.metadata) || strings.ContainsFunc(o.metadata, unicode.IsControl)):
		return nil, "", nil, usagef("elect", "redlock: elect: --value: want 1 to %d bytes of printable UTF-8 text, such as an address", redlock.MaxMetadataLen)
	}
	if !set["value"] {
		host, err := os.Hostname()
		if err != nil {
			host = "?"
		}
		o.metadata = fmt.Sprintf("host %s pid %d", host, os.Getpid())
	}
	maxGrace := o.maxGrace()
	switch {
	case !set["grace"]:
		o.grace = max(min(defaultGrace, maxGrace), 0)
	case o.grace > maxGrace:
		return nil, "", nil, usagef("elect", "redlock: elect: --grace %v is longer than the %v a --ttl %v lease has left after a failed extend: give a shorter --grace or a longer --ttl",
			o.grace, max(maxGrace, 0), o.ttl)
	}
	return o, name, command, nil
}

func electCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, name, command, err := parseElect(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return reportUsage(stderr, err)
	}
	s, sigc, done, code := startCommand(ctx, "elect", o, stderr)
	if s == nil {
		return code
	}
	defer done()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	campaign := s.client.Campaign
	switch {
	case o.wait.forever:
	case o.wait.d == 0:
		campaign = s.client.TryCampaign // one try, as run's --wait 0
	default:
		cctx, cancel = context.WithTimeout(cctx, o.wait.d)
		defer cancel()
	}
	if o.verbose {
		fmt.Fprintf(stderr, "redlock: campaigning in %q as %q (--wait %v)\n", name, o.metadata, o.wait.String())
	}
	type result struct {
		ld  *redlock.Leadership
		err error
	}
	resc := make(chan result, 1)
	go func() {
		ld, err := campaign(cctx, name, o.ttl, o.metadata)
		resc <- result{ld, err}
	}()
	var res result
	select {
	case res = <-resc:
	case sig := <-sigc:
		cancel()
		if res = <-resc; res.err == nil {
			releaseQuietly(ctx, res.ld.Lock())
		}
		fmt.Fprintf(stderr, "redlock: got %v while campaigning in %q: nothing was run\n", sig, name)
		return 128 + int(sig.(syscall.Signal))
	}
	if res.err != nil {
		switch {
		case !errors.Is(res.err, redlock.ErrNotAcquired):
			return reportUsage(stderr, usagef("elect", "%s", trimPrefix(res.err)))
		case ctx.Err() != nil:
			fmt.Fprintf(stderr, "redlock: stopped while campaigning in %q: nothing was run\n", name)
			return exitTempFail
		}
		if code, ok := s.checkQuorum(ctx, stderr); !ok {
			return code
		}
		fmt.Fprintf(stderr, "redlock: did not lead %q within --wait %v (%s); nothing was run\n", name, o.wait.String(), trimPrefix(res.err))
		return exitTempFail
	}
	ld := res.ld
	if o.verbose {
		fmt.Fprintf(stderr, "redlock: leading %q (term %d)\n", name, ld.Term())
	}
	o.extraEnv = []string{"REDLOCK_TERM=" + strconv.FormatUint(ld.Term(), 10)}
	code, lost := superviseChild(ctx, ld.Lock(), o, name, command, sigc, stdout, stderr)

	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	relErr := ld.Resign(rctx)
	if lost || errors.Is(relErr, redlock.ErrLost) {
		fmt.Fprintf(stderr, "redlock: leadership of %q was lost before the command finished (it %s): another may have led meanwhile; exit %d\n", name, describeExit(code), exitLost)
		return exitLost
	}
	if relErr != nil {
		fmt.Fprintf(stderr, "redlock: warning: resigning %q: %s (the leadership expires by itself within --ttl %v)\n", name, trimPrefix(relErr), o.ttl)
	} else if o.verbose {
		fmt.Fprintf(stderr, "redlock: resigned %q\n", name)
	}
	return code
}
