package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
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
  run NAME COMMAND [ARGS...]    run COMMAND while holding lock NAME
                                (-n N: at most N at once, a semaphore)
  status NAME                   show lock NAME on every node
                                (-n N: the N permits of semaphore NAME)
  elect NAME COMMAND [ARGS...]  run COMMAND while leading election NAME
  leader NAME                   show the leader of election NAME
  break --yes NAME              delete lock NAME on every node (dangerous)
  help [COMMAND]                show help for COMMAND
  version                       print redlock's version

Flags go before NAME ('redlock help COMMAND' lists them); run and elect
also take them between NAME and a -- before COMMAND, and a shell command
as -c 'SHELL COMMAND' (as flock -c) in place of COMMAND.

` + nodesHelp + `
Every flag --FLAG falls back to $REDLOCK_FLAG (upper case, - as _: --ttl
$REDLOCK_TTL, --node-timeout $REDLOCK_NODE_TIMEOUT, -v $REDLOCK_VERBOSE,
-n $REDLOCK_PERMITS; -c has none); the command line wins. A yes-or-no flag
takes 1, true, yes or on; or 0, false, no or off, in its variable as on the
command line (--json=yes). --timeout is --node-timeout's old name, still
taken by status, leader and break. Run 'redlock help run' for the exit
codes.
`

// nodesHelp describes node URLs, for the usage texts.
const nodesHelp = `Nodes: --nodes or $REDLOCK_NODES, URLs separated by commas or spaces; each
is one independent Redis node (a quorum of them must hold a lock):
  redis://[user:password@]host:port[/db]
      a standalone master
  rediss://...
      the same over TLS (--cacert FILE for a private CA, --cert and --key
      for a client certificate)
  redis+sentinel://[suser:spass@]host:port[/db]?master_name=NAME[&addr=...]
      a Sentinel-managed master, with more sentinels as &addr=host:port
      (its own credentials: &username=U&password=P)
  redis+cluster://[user:password@]host:port[?addr=host:port...]
      a Redis Cluster (use a lock NAME without braces)
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

// aliases are the flags kept under an old name: alias -> the flag's name.
// An alias sets the same value; the flag's own name, and its variable, win
// over the alias's variable.
var aliases = map[string]string{"timeout": "node-timeout"}

// noEnv are the flags that have no variable: -c, a shell command, must be
// typed (a $REDLOCK_C left in an environment would run in place of the
// COMMAND given).
var noEnv = map[string]bool{"c": true}

// applyEnv sets every flag of fs not given on the command line from its
// environment variable, where that is set and not empty. It returns the
// names of the flags set either way (a flag and its alias count as one). A
// bad value is a usage error naming the variable; a flag given on the
// command line under both its names is one too.
func applyEnv(cmd string, fs *flag.FlagSet) (map[string]bool, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for alias, name := range aliases {
		if set[alias] && set[name] {
			return nil, usagef(cmd, "redlock: %s: --%s and --%s (its old name) given: give one of them", cmd, name, alias)
		}
	}
	mark := func(name string) {
		set[name] = true
		for alias, n := range aliases {
			if n == name {
				set[alias] = true
			}
			if alias == name {
				set[n] = true
			}
		}
	}
	for name := range set {
		mark(name)
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) { // in lexical order: node-timeout before its alias timeout
		if set[f.Name] || noEnv[f.Name] || err != nil {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok || v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = usagef(cmd, "redlock: %s: $%s: invalid value %q for %s: %v", cmd, envName(f.Name), v, dashed(f.Name), e)
			return
		}
		mark(f.Name)
	})
	return set, err
}

// dashed is a flag's name as the docs write it: --name, or -v for a
// one-letter flag.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// boolValue is a boolean flag that takes the usual spellings, on the
// command line (--json=yes) and in its variable ($REDLOCK_JSON=yes).
type boolValue bool

// boolWords is what a boolean flag accepts, for its errors and the help.
const boolWords = "1, true, yes or on; or 0, false, no or off"

func (b *boolValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "1", "t", "true", "y", "yes", "on":
		*b = true
	case "0", "f", "false", "n", "no", "off":
		*b = false
	default:
		return fmt.Errorf("want %s", boolWords)
	}
	return nil
}

func (b *boolValue) String() string {
	if b != nil && *b {
		return "true"
	}
	return "false"
}

func (b *boolValue) IsBoolFlag() bool { return true }

// boolVar defines a boolean flag of fs that takes the usual spellings
// (boolValue).
func boolVar(fs *flag.FlagSet, p *bool, name, usage string) {
	*p = false
	fs.Var((*boolValue)(p), name, usage)
}

// nodesN is "1 node" or "N nodes".
func nodesN(n int) string {
	if n == 1 {
		return "1 node"
	}
	return strconv.Itoa(n) + " nodes"
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
