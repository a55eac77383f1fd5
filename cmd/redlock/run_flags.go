package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	maxHold      time.Duration // --max-hold: the watchdog's cap (AcquireOptions.MaxHold); 0: none
	shell        string        // -c: the command, for sh -c
	shared       bool          // --shared: the shared side of lock NAME (a reader), not the lock itself
	extraEnv     []string      // more variables for the command (elect's REDLOCK_TERM)
	also         namesFlag     // -m: more names held with NAME, all or nothing (multi.go)
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
	o.register(fs, 0)
	fs.IntVar(&o.limit, "n", 1, "at most `N` commands run at once: take one of N permits of semaphore NAME (1 to "+strconv.Itoa(redlock.MaxPermits)+"; 1 is lock NAME)")
	fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "lock lease; the watchdog extends it every ttl/3")
	fs.Var(&o.also, "m", "also hold lock `NAME2` (repeatable): the command runs under NAME and every -m name at once, taken all or nothing")
	fs.Var(&o.wait, "wait", "how long to wait for the lock: a `duration`, 0 to try once, or forever")
	boolVar(fs, &o.noFence, "no-fence", "do not keep a fencing counter (REDLOCK_FENCE=0)")
	fs.DurationVar(&o.grace, "grace", defaultGrace, "after a lost lock, time between SIGTERM and SIGKILL; at most ttl - ttl/3 - drift - node timeout (the default is cut to that)")
	boolVar(fs, &o.verbose, "v", "report acquisition and release on stderr")
	fs.IntVar(&o.conflictExit, "conflict-exit-code", exitTempFail, "exit `code` when the lock is held elsewhere and not acquired within --wait (like flock -E)")
	fs.StringVar(&o.metadata, "metadata", "", "store `text` as the holder's metadata, shown by status (default \"host HOST pid PID: COMMAND\")")
	boolVar(fs, &o.noMetadata, "no-metadata", "store no metadata with the lock")
	fs.DurationVar(&o.maxHold, "max-hold", 0, "stop extending the lock once it has been held this long: it then expires and COMMAND is stopped as on any loss (exit 76); 0: no cap")
	boolVar(fs, &o.shared, "shared", "take the shared side of lock NAME (a reader): any number of --shared runs at once, none beside a run without it")
	fs.StringVar(&o.shell, "c", "", "run `'SHELL COMMAND'` with sh -c, instead of a COMMAND after NAME (as flock -c)")
	cliflags.SetUsage(fs, runUsage)
	return fs, o
}

// parseRun parses the run command line (see parseCommandLine).
func parseRun(args []string, stdout io.Writer) (o *runOptions, name string, command []string, err error) {
	fs, o := runFlags(io.Discard)
	name, command, set, err := parseCommandLine("run", fs, args, stdout)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case o.limit < 1 || o.limit > redlock.MaxPermits:
		return nil, "", nil, usagef("run", "redlock: run: -n %d: want 1 to %d, how many commands may run at once (1 is the plain lock NAME)", o.limit, redlock.MaxPermits)
	case o.ttl <= 0:
		return nil, "", nil, usagef("run", "redlock: run: --ttl %v: want a positive duration such as 30s", o.ttl)
	case o.grace < 0:
		return nil, "", nil, usagef("run", "redlock: run: --grace %v: want 0 or a positive duration", o.grace)
	case o.nodeTimeout < 0:
		return nil, "", nil, usagef("run", "redlock: run: --node-timeout %v: want a positive duration", o.nodeTimeout)
	case o.maxHold < 0:
		return nil, "", nil, usagef("run", "redlock: run: --max-hold %v: want 0 (no cap) or a positive duration such as 1h", o.maxHold)
	case o.conflictExit < 0 || o.conflictExit > 255:
		return nil, "", nil, usagef("run", "redlock: run: --conflict-exit-code %d: want 0 to 255", o.conflictExit)
	case o.shared && o.limit > 1:
		return nil, "", nil, usagef("run", "redlock: run: --shared and -n %d: a semaphore has no shared side; give one of them", o.limit)
	case set["metadata"] && o.noMetadata:
		return nil, "", nil, usagef("run", "redlock: run: --metadata and --no-metadata: give one of them")
	case len(o.metadata) > redlock.MaxMetadataLen || !utf8.ValidString(o.metadata):
		return nil, "", nil, usagef("run", "redlock: run: --metadata: want at most %d bytes of UTF-8 text, such as a job id", redlock.MaxMetadataLen)
	}
	if err := checkAlso(o, name); err != nil {
		return nil, "", nil, err
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
	return o, name, command, nil
}

// parseCommandLine parses the command line of cmd (run, elect), in one of
// its forms:
//
//	[flags] NAME [flags] -- COMMAND [ARGS...]
//	[flags] NAME COMMAND [ARGS...]      as flock: everything after NAME is the command's
//	[flags] NAME [flags] -c 'SHELL COMMAND'
//
// then the environment's flags. It returns NAME, the command (sh -c and the
// text of -c), and which flags were set. Help (flag.ErrHelp) is printed on
// stdout. A flag after NAME followed by a command without "--" is refused:
// it could be meant for either.
func parseCommandLine(cmd string, fs *flag.FlagSet, args []string, stdout io.Writer) (name string, command []string, set map[string]bool, err error) {
	synopsis := fmt.Sprintf("redlock %s [flags] NAME [--] COMMAND [ARGS...], or NAME -c 'SHELL COMMAND'", cmd)
	k := skipFlags(fs, args) // NAME's index, or "--"'s, or len(args)
	flagArgs := args[:k:k]
	ambiguous := "" // a flag after NAME, then a command without "--"
	if k < len(args) && args[k] != "--" {
		name = args[k]
		rest := args[k+1:]
		j := skipFlags(fs, rest)
		flagArgs = append(flagArgs, rest[:j]...)
		switch {
		case j < len(rest) && rest[j] == "--":
			command = rest[j+1:]
		case j < len(rest) && j > 0:
			ambiguous = rest[0]
		case j < len(rest):
			command = rest
		}
	}
	pos, err := parseInterspersed(fs, flagArgs)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return "", nil, nil, err
	}
	if err != nil {
		return "", nil, nil, usagef(cmd, "redlock: %s: %s%s", cmd, cliflags.FlagError(err), flagHint(err))
	}
	if len(pos) > 0 { // a flag's value that looked like a flag, say
		return "", nil, nil, usagef(cmd, "redlock: %s: unexpected argument %q: %s", cmd, pos[0], synopsis)
	}
	if set, err = applyEnv(cmd, fs); err != nil {
		return "", nil, nil, err
	}
	shell := fs.Lookup("c").Value.String()
	switch {
	case name == "":
		return "", nil, nil, usagef(cmd, "redlock: %s: missing %s NAME: %s", cmd, map[string]string{"run": "lock", "elect": "election"}[cmd], synopsis)
	case ambiguous != "":
		return "", nil, nil, usagef(cmd, "redlock: %s: %q after NAME %q: is it redlock's flag or the command's? Put redlock's flags before NAME, or -- before the command: %s", cmd, ambiguous, name, synopsis)
	case set["c"] && len(command) > 0:
		return "", nil, nil, usagef(cmd, "redlock: %s: both -c and a COMMAND: give one of them", cmd)
	case set["c"] && strings.TrimSpace(shell) == "":
		return "", nil, nil, usagef(cmd, "redlock: %s: -c with an empty command: give the shell a command, -c 'make && make install'", cmd)
	case set["c"]:
		command = []string{"/bin/sh", "-c", shell}
	case len(command) == 0:
		return "", nil, nil, usagef(cmd, "redlock: %s: missing COMMAND after NAME %q: %s", cmd, name, synopsis)
	}
	return name, command, set, nil
}

// skipFlags returns the index of the first argument of args that is not a
// flag of fs or a flag's value: the first positional argument, or "--", or
// len(args). A flag fs does not know counts as a flag (parsing reports it).
func skipFlags(fs *flag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return i
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) {
			i++ // its value
		}
	}
	return len(args)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagHint is a hint for an unknown flag that users of other tools give:
// --timeout, which is flock's wait.
func flagHint(err error) string {
	if strings.Contains(err.Error(), "flag provided but not defined: -timeout") {
		return " (--wait is how long to wait for the lock, as flock's --timeout; --node-timeout bounds each node's answer)"
	}
	return ""
}
