package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Exit codes, after sysexits(3) where one fits, like flock(1).
const (
	exitOK          = 0
	exitFailure     = 1  // demo: something was lost or a stale write got through
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
  status  [flags] NAME                        show lock NAME on every node
  demo    [flags]                             workers, faults and fencing on 5 local nodes
  help    [COMMAND]                           show help for COMMAND

Nodes: --nodes URL,URL,... or $REDLOCK_NODES (redis://[user:pass@]host:port[/db],
rediss:// for TLS). Run 'redlock help run' for the exit codes.
`

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
	case "demo":
		return demoCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return helpCmd(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "redlock: unknown command %q: use run, status or demo (see 'redlock help')\n", args[0])
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
	case "demo":
		fs, _ = demoFlags(io.Discard)
	default:
		fmt.Fprintf(stderr, "redlock: no help for %q: use 'redlock help run', 'status' or 'demo'\n", args[0])
		return exitUsage
	}
	fs.SetOutput(stdout)
	fs.Usage()
	return exitOK
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
