package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Exit codes, after sysexits(3) where one fits, like flock(1).
const (
	exitOK          = 0
	exitFailure     = 1  // status/break: some nodes failed
	exitUsage       = 64 // EX_USAGE: bad flags, arguments or node URLs
	exitUnavailable = 69 // EX_UNAVAILABLE: fewer nodes reachable than a quorum
	exitTempFail    = 75 // EX_TEMPFAIL: lock held elsewhere, not acquired within --wait
	exitLost        = 76 // lock lost while the command ran; the command was stopped
	exitCannotExec  = 126
	exitNotFound    = 127
)

const mainUsage = `usage: redlock COMMAND [flags] [ARGS]

commands:
  run     [flags] NAME -- COMMAND [ARGS...]   run COMMAND while holding lock NAME
                                              (-n N: at most N at once, a semaphore)
  status  [flags] NAME                        show lock NAME on every node
                                              (-n N: the N permits of semaphore NAME)
  elect   [flags] NAME -- COMMAND [ARGS...]   run COMMAND while leading election NAME
  leader  [flags] NAME                        show the leader of election NAME
  break   --yes [flags] NAME                  delete lock NAME on every node (dangerous)
  help    [COMMAND]                           show help for COMMAND

  version                                     print redlock's version

` + nodesHelp + `
Every flag --FLAG falls back to $REDLOCK_FLAG (upper case, - as _: --ttl
$REDLOCK_TTL, --node-timeout $REDLOCK_NODE_TIMEOUT, -v $REDLOCK_VERBOSE,
-n $REDLOCK_PERMITS); the command line wins. Run 'redlock help run' for
the exit codes.
`

// nodesHelp describes node URLs, for the usage texts.
const nodesHelp = `Nodes: --nodes or $REDLOCK_NODES, URLs separated by commas or spaces; each
is one independent Redis node (a quorum of them must hold a lock):
  redis://[user:password@]host:port[/db]      a standalone master
  rediss://...                                the same over TLS (--cacert FILE
                                              for a private CA, --cert/--key
                                              for a client certificate)
  redis+sentinel://[suser:spass@]host:port[/db]?master_name=NAME[&addr=host:port...]
                                              a Sentinel-managed master (its own
                                              credentials: &username=U&password=P)
  redis+cluster://[user:password@]host:port[?addr=host:port...]
                                              a Redis Cluster (use a lock NAME
                                              without braces)
Each names its host (redis:// alone is not localhost; an IPv6 address in
brackets: [::1]:6379), and each server is listed once. A bare host:port
means redis://host:port. A password with , / # ? @ or % must be
percent-encoded (%2C %2F %23 %3F %40 %25). Keep passwords in $REDLOCK_NODES,
not in --nodes: a command line is visible to every user of the machine
(ps). $REDLOCK_NODES is not passed to the command. go-redis options may be
given as query parameters (?dial_timeout=3s&max_retries=2); redlock sets
max_retries=1 and dial_timeout=1s only where the URL does not.
`

// demoMoved is what 'redlock demo' says: the demo is a module of its own,
// so that this command does not link Docker's SDK.
const demoMoved = "redlock: the demo is no longer part of this command: run 'make demo' in a clone of the repository (or 'go run .' in its demo/ directory)"

// run is the whole CLI: main is os.Exit(run(...)). It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	quietRedis.Do(func() { redis.SetLogger(silentLogger{}) })
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "status":
		return statusCmd(ctx, args[1:], stdout, stderr)
	case "break":
		return breakCmd(ctx, args[1:], stdout, stderr)
	case "elect":
		return electCmd(ctx, args[1:], stdout, stderr)
	case "leader":
		return leaderCmd(ctx, args[1:], stdout, stderr)
	case "demo":
		fmt.Fprintln(stderr, demoMoved)
		return exitUsage
	case "help", "-h", "-help", "--help":
		return helpCmd(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "redlock %s\n", version())
		return exitOK
	default:
		fmt.Fprintf(stderr, "redlock: unknown command %q: use run, status, break, elect or leader (see 'redlock help')\n", args[0])
		return exitUsage
	}
}

func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, mainUsage)
		return exitOK
	}
	var fs *flag.FlagSet
	switch args[0] {
	case "run":
		fs, _ = runFlags(io.Discard)
	case "status":
		fs, _ = statusFlags(io.Discard)
	case "break":
		fs, _ = breakFlags(io.Discard)
	case "elect":
		fs, _ = electFlags(io.Discard)
	case "leader":
		fs, _ = leaderFlags(io.Discard)
	case "demo":
		fmt.Fprintln(stderr, demoMoved)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "redlock: no help for %q: use 'redlock help run', 'status', 'break', 'elect' or 'leader'\n", args[0])
		return exitUsage
	}
	fs.SetOutput(stdout)
	fs.Usage()
	return exitOK
}

// version is the module version redlock was built from, or "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// envName is the environment variable a flag falls back to:
// REDLOCK_ and the flag's name in upper case, - made _ (-v is
// REDLOCK_VERBOSE, -n REDLOCK_PERMITS).
func envName(flagName string) string {
	switch flagName {
	case "v":
		return "REDLOCK_VERBOSE"
	case "n":
		return "REDLOCK_PERMITS" // not REDLOCK_LIMIT, which run sets for its command
	}
	return "REDLOCK_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag of fs not given on the command line from its
// environment variable, where that is set and not empty. It returns the
// names of the flags set either way. A bad value is a usage error naming
// the variable.
func applyEnv(cmd string, fs *flag.FlagSet) (map[string]bool, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			err = usagef(cmd, "redlock: %s: $%s: invalid value %q for %s%s: %v", cmd, envName(f.Name), v, dash, f.Name, e)
			return
		}
		set[f.Name] = true
	})
	return set, err
}

// usageError is a bad command line: the message is printed on one line,
// followed by a hint where to find the usage.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd, format string, a ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, a...)}
}

// reportUsage prints err on one line with a usage hint and returns exitUsage.
func reportUsage(stderr io.Writer, err error) int {
	var ue *usageError
	cmd := ""
	if errors.As(err, &ue) {
		cmd = ue.cmd
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "redlock: ") {
		msg = "redlock: " + msg
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	fmt.Fprintf(stderr, "%s\n", msg)
	if cmd != "" {
		fmt.Fprintf(stderr, "usage: see 'redlock help %s'\n", cmd)
	}
	return exitUsage
}

// parseInterspersed parses flags that may come before and after the
// positional arguments (flag stops at the first non-flag), returning the
// positional arguments in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// quietRedis silences go-redis's own log lines (dial failures and the
// like): the CLI reports node failures itself, on one line.
var quietRedis sync.Once

type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}
