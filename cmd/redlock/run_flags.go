package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/cliflags"
)

// waitFlag is --wait: a duration, or "forever" (the default).
type waitFlag struct {
	d       time.Duration
	forever bool
}

func (w *waitFlag) String() string {
	if w == nil || w.forever {
		return "forever"
	}
	return w.d.String()
}

func (w *waitFlag) Set(s string) error {
	if s == "forever" || s == "inf" {
		*w = waitFlag{forever: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
	}
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 0, 10s or 2m, or forever")
	}
	*w = waitFlag{d: d}
	return nil
}

type runOptions struct {
	nodeFlags
	limit        int // -n: with more than 1, a permit of semaphore NAME instead of lock NAME
	ttl          time.Duration
	wait         waitFlag
	noFence      bool
	grace        time.Duration
	verbose      bool
	conflictExit int
	metadata     string // the holder's metadata (--metadata, or holderMetadata); "" with --no-metadata
	noMetadata   bool
	extraEnv     []string // more variables for the command (elect's REDLOCK_TERM)
}

// maxGrace is the longest --grace allowed: what a lease has left when the
// watchdog's first extend, a third of the TTL in, fails: ttl - ttl/3 - the
// drift allowance (the library's default, 1% + 2ms) - one node timeout.
// The command gets SIGTERM when the lock is lost, and SIGKILL no later
// than one such span after it.
func (o *runOptions) maxGrace() time.Duration {
	drift := time.Duration(float64(o.ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	return o.ttl - o.ttl/3 - drift - o.timeoutFor(o.ttl)
}

func runFlags(out io.Writer) (*flag.FlagSet, *runOptions) {
	o := &runOptions{wait: waitFlag{forever: true}}
	fs := flag.NewFlagSet("redlock run", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, true)
	fs.IntVar(&o.limit, "n", 1, "at most `N` commands run at once: take one of N permits of semaphore NAME (1 to "+strconv.Itoa(redlock.MaxPermits)+"; 1 is lock NAME)")
	fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "lock lease; the watchdog extends it every ttl/3")
	fs.Var(&o.wait, "wait", "how long to wait for the lock: a `duration`, 0 to try once, or forever")
	fs.BoolVar(&o.noFence, "no-fence", false, "do not keep a fencing counter (REDLOCK_FENCE=0)")
	fs.DurationVar(&o.grace, "grace", defaultGrace, "after a lost lock, time between SIGTERM and SIGKILL; at most ttl - ttl/3 - drift - node timeout (the default is cut to that)")
	fs.BoolVar(&o.verbose, "v", false, "report acquisition and release on stderr")
	fs.IntVar(&o.conflictExit, "conflict-exit-code", exitTempFail, "exit `code` when the lock is held elsewhere and not acquired within --wait (like flock -E)")
	fs.StringVar(&o.metadata, "metadata", "", "store `text` as the holder's metadata, shown by status (default \"host HOST pid PID: COMMAND\")")
	fs.BoolVar(&o.noMetadata, "no-metadata", false, "store no metadata with the lock")
	cliflags.SetUsage(fs, runUsage)
	return fs, o
}

// parseRun parses the run command line: flags and NAME before "--", the
// command after it.
func parseRun(args []string, stdout io.Writer) (o *runOptions, name string, command []string, err error) {
	fs, o := runFlags(io.Discard)
	pos, command, set, dashes, err := parseCommandLine("run", fs, args, stdout)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case len(pos) == 0:
		return nil, "", nil, usagef("run", "redlock: run: missing lock NAME: redlock run [flags] NAME -- COMMAND [ARGS...]")
	case !dashes:
		return nil, "", nil, usagef("run", "redlock: run: missing -- before the command: redlock run [flags] %s -- COMMAND [ARGS...]", pos[0])
	case len(pos) > 1:
		return nil, "", nil, usagef("run", "redlock: run: unexpected argument %q after NAME %q: put the command after --", pos[1], pos[0])
	case len(command) == 0:
		return nil, "", nil, usagef("run", "redlock: run: missing command after --")
	case pos[0] == "":
		return nil, "", nil, usagef("run", "redlock: run: empty lock NAME")
	case o.limit < 1 || o.limit > redlock.MaxPermits:
		return nil, "", nil, usagef("run", "redlock: run: -n %d: want 1 to %d, how many commands may run at once (1 is the plain lock NAME)", o.limit, redlock.MaxPermits)
	case o.ttl <= 0:
		return nil, "", nil, usagef("run", "redlock: run: --ttl %v: want a positive duration such as 30s", o.ttl)
	case o.grace < 0:
		return nil, "", nil, usagef("run", "redlock: run: --grace %v: want 0 or a positive duration", o.grace)
	case o.nodeTimeout < 0:
		return nil, "", nil, usagef("run", "redlock: run: --node-timeout %v: want a positive duration", o.nodeTimeout)
	case o.conflictExit < 0 || o.conflictExit > 255:
		return nil, "", nil, usagef("run", "redlock: run: --conflict-exit-code %d: want 0 to 255", o.conflictExit)
	case set["metadata"] && o.noMetadata:
		return nil, "", nil, usagef("run", "redlock: run: --metadata and --no-metadata: give one of them")
	case len(o.metadata) > redlock.MaxMetadataLen || !utf8.ValidString(o.metadata):
		return nil, "", nil, usagef("run", "redlock: run: --metadata: want at most %d bytes of UTF-8 text, such as a job id", redlock.MaxMetadataLen)
	}
	if !set["metadata"] && !o.noMetadata {
		o.metadata = holderMetadata(command)
	}
	maxGrace := o.maxGrace()
	switch {
	case !set["grace"]:
		o.grace = max(min(defaultGrace, maxGrace), 0)
	case o.grace > maxGrace:
		return nil, "", nil, usagef("run", "redlock: run: --grace %v is longer than the %v a --ttl %v lease has left after a failed extend (ttl - ttl/3 - drift - node timeout): the command would run on after the lock expired; give a shorter --grace or a longer --ttl",
			o.grace, max(maxGrace, 0), o.ttl)
	}
	return o, pos[0], command, nil
}

// parseCommandLine parses the command line of cmd (run, elect): the flags
// of fs and the positional arguments before "--", then the environment's
// flags, and returns the positional arguments, the command after "--",
// which flags were set, and whether "--" was there. Help (flag.ErrHelp)
// is printed on stdout.
func parseCommandLine(cmd string, fs *flag.FlagSet, args []string, stdout io.Writer) (pos, command []string, set map[string]bool, dashes bool, err error) {
	i := slices.Index(args, "--")
	flagArgs := args
	if i >= 0 {
		flagArgs, command = args[:i], args[i+1:]
	}
	pos, err = parseInterspersed(fs, flagArgs)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return nil, nil, nil, false, err
	}
	if err != nil {
		return nil, nil, nil, false, usagef(cmd, "redlock: %s: %s", cmd, cliflags.FlagError(err))
	}
	set, err = applyEnv(cmd, fs)
	if err != nil {
		return nil, nil, nil, false, err
	}
	return pos, command, set, i >= 0, nil
}
