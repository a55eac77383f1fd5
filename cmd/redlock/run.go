package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/redlock-go/redlock/internal/cliflags"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/redlock-go/redlock"
)

const runUsage = `usage: redlock run [flags] NAME -- COMMAND [ARGS...]

Acquire lock NAME on a quorum of the nodes, run COMMAND while a watchdog
extends the lock every TTL/3, and release the lock when COMMAND and every
process left in its process group have exited (as flock holds the lock
while any process it started has the file open; a process that leaves the
group, with setsid say, is not waited for). Like flock(1), redlock waits
for the lock by default; --wait 0 tries once.

COMMAND runs in its own process group, with these variables added to its
environment (and $REDLOCK_NODES removed from it):
  REDLOCK_NAME   the lock name
  REDLOCK_TOKEN  the random token that owns the lock on the nodes
  REDLOCK_FENCE  the fencing token (0 with --no-fence): send it with every
                 write and have the store reject a lower one than it has seen

Holder: redlock stores "host HOST pid PID: COMMAND ARGS" (its own host name
and pid, and the command, cut to 256 bytes) with the lock as its metadata,
which 'redlock status' shows; --metadata TEXT stores TEXT instead, and
--no-metadata nothing. Either way the lock is the plain one (the metadata
lives in a key of its own that expires and goes with the lock).

Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGTSTP sent
to redlock are forwarded to COMMAND's process group. If the lock is lost
while the group runs (an extend fails its quorum), the whole group gets
SIGTERM (and SIGCONT, should it be stopped), then SIGKILL after --grace,
whether COMMAND itself is still there or not.

Terminal: when stdin is a terminal and redlock runs in its foreground, the
command's group becomes the terminal's foreground group, so it reads the
terminal and gets Ctrl-C and Ctrl-Z itself; redlock takes the terminal back
when COMMAND exits. Ctrl-Z stops COMMAND and then redlock, so the shell
sees the job stopped; fg or bg continues both. A stopped redlock cannot
extend the lock: the lock is kept for what is left of its lease (at least
2/3 of --ttl); stopped longer, it expires, and when continued COMMAND is
stopped as on any loss (exit 76). Use a --ttl as long as you may keep a job
suspended, and continue it with fg/bg, not by signalling COMMAND alone.
Without a terminal a stopped COMMAND (SIGTSTP, SIGSTOP) keeps the lock: the
watchdog runs on.

If redlock dies (SIGKILL, OOM): on Linux COMMAND gets SIGKILL from the
kernel (the parent-death signal); processes COMMAND started do not, and run
on without the lock, which expires within --ttl. On other systems COMMAND
itself runs on too.

Exit codes:
  N    COMMAND's own exit code (128+S if it was killed by signal S)
  64   bad usage: flags, environment, arguments or node URLs (EX_USAGE)
  69   fewer nodes reachable than a quorum (EX_UNAVAILABLE)
  75   lock held elsewhere: not acquired within --wait (EX_TEMPFAIL;
       --conflict-exit-code changes it)
  76   lock lost while COMMAND ran; COMMAND was stopped
  126  COMMAND could not be executed; 127 COMMAND not found
  128+S  redlock got signal S while waiting for the lock

` + nodesHelp + `
Every flag falls back to an environment variable: --ttl $REDLOCK_TTL,
--wait $REDLOCK_WAIT, --grace $REDLOCK_GRACE, --no-fence $REDLOCK_NO_FENCE,
--node-timeout $REDLOCK_NODE_TIMEOUT, --prefix $REDLOCK_PREFIX,
--conflict-exit-code $REDLOCK_CONFLICT_EXIT_CODE, --metadata
$REDLOCK_METADATA, --no-metadata $REDLOCK_NO_METADATA, -v $REDLOCK_VERBOSE,
--nodes $REDLOCK_NODES. The command line wins.

Flags:
`

// forwarded are the signals redlock passes on to the command while it runs
// (and that end the wait for the lock before); SIGTSTP and SIGCONT are
// handled once the command runs (see superviseChild).
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

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
	ttl          time.Duration
	wait         waitFlag
	noFence      bool
	grace        time.Duration
	verbose      bool
	conflictExit int
	metadata     string // the holder's metadata (--metadata, or holderMetadata); "" with --no-metadata
	noMetadata   bool
}

// defaultGrace is --grace when neither it nor $REDLOCK_GRACE is given and
// the TTL leaves that long (see maxGrace).
const defaultGrace = 10 * time.Second

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
	i := slices.Index(args, "--")
	flagArgs := args
	if i >= 0 {
		flagArgs, command = args[:i], args[i+1:]
	}
	pos, err := parseInterspersed(fs, flagArgs)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return nil, "", nil, err
	}
	if err != nil {
		return nil, "", nil, usagef("run", "redlock: run: %s", cliflags.FlagError(err))
	}
	set, err := applyEnv("run", fs)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case len(pos) == 0:
		return nil, "", nil, usagef("run", "redlock: run: missing lock NAME: redlock run [flags] NAME -- COMMAND [ARGS...]")
	case i < 0:
		return nil, "", nil, usagef("run", "redlock: run: missing -- before the command: redlock run [flags] %s -- COMMAND [ARGS...]", pos[0])
	case len(pos) > 1:
		return nil, "", nil, usagef("run", "redlock: run: unexpected argument %q after NAME %q: put the command after --", pos[1], pos[0])
	case len(command) == 0:
		return nil, "", nil, usagef("run", "redlock: run: missing command after --")
	case pos[0] == "":
		return nil, "", nil, usagef("run", "redlock: run: empty lock NAME")
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

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, name, command, err := parseRun(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return reportUsage(stderr, err)
	}
	s, code := openSession("run", &o.nodeFlags, o.ttl, stderr)
	if s == nil {
		return code
	}
	defer s.close()

	// Signals are caught from here on: while waiting they stop the wait,
	// once the command runs they are forwarded to it.
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, forwarded...)
	defer signal.Stop(sigc)

	if code, ok := s.checkQuorum(ctx, stderr); !ok {
		return code
	}

	lock, code := acquireForRun(ctx, s, o, name, sigc, stderr)
	if lock == nil {
		return code
	}
	if o.verbose {
		fmt.Fprintf(stderr, "redlock: acquired %q (fence %d, token %s)\n", name, lock.Fence(), short(lock.Token()))
	}

	code, lost := superviseChild(ctx, lock, o, name, command, sigc, stdout, stderr)

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	relErr := lock.Release(rctx)
	if lost || errors.Is(relErr, redlock.ErrLost) {
		fmt.Fprintf(stderr, "redlock: lock %q was lost before the command finished (it %s): its work may have overlapped another holder; exit %d\n", name, describeExit(code), exitLost)
		return exitLost
	}
	if relErr != nil {
		fmt.Fprintf(stderr, "redlock: warning: release of %q: %s (the keys expire by themselves within --ttl %v)\n", name, trimPrefix(relErr), o.ttl)
	} else if o.verbose {
		fmt.Fprintf(stderr, "redlock: released %q\n", name)
	}
	return code
}

// acquireForRun waits for the lock as --wait says. A signal or ctx ends the
// wait. It returns the lock, or nil and the exit code after reporting why.
func acquireForRun(ctx context.Context, s *session, o *runOptions, name string, sigc <-chan os.Signal, stderr io.Writer) (*redlock.Lock, int) {
	opts := &redlock.AcquireOptions{NoFence: o.noFence, AutoExtend: true, Metadata: o.metadata}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch {
	case o.wait.forever:
	case o.wait.d == 0:
		opts.Retry = redlock.NoRetry()
	default:
		actx, cancel = context.WithTimeout(actx, o.wait.d)
		defer cancel()
	}
	type result struct {
		lock *redlock.Lock
		err  error
	}
	resc := make(chan result, 1)
	if o.verbose {
		fmt.Fprintf(stderr, "redlock: waiting for lock %q (--wait %v)\n", name, o.wait.String())
	}
	go func() {
		l, err := s.client.Acquire(actx, name, o.ttl, opts)
		resc <- result{l, err}
	}()
	var res result
	select {
	case res = <-resc:
	case sig := <-sigc:
		cancel()
		res = <-resc
		if res.err == nil {
			releaseQuietly(ctx, res.lock)
		}
		fmt.Fprintf(stderr, "redlock: got %v while waiting for lock %q: nothing was run\n", sig, name)
		return nil, 128 + int(sig.(syscall.Signal))
	}
	if res.err == nil {
		return res.lock, exitOK
	}
	if !errors.Is(res.err, redlock.ErrNotAcquired) {
		return nil, reportUsage(stderr, usagef("run", "%s", trimPrefix(res.err)))
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "redlock: stopped while waiting for lock %q: nothing was run\n", name)
		return nil, exitTempFail
	}
	// Held elsewhere, or the nodes went away while we waited?
	if code, ok := s.checkQuorum(ctx, stderr); !ok {
		return nil, code
	}
	fmt.Fprintf(stderr, "redlock: lock %q not acquired within --wait %v: held by another owner (%s); nothing was run\n", name, o.wait.String(), trimPrefix(res.err))
	return nil, o.conflictExit
}

func describeExit(code int) string {
	if code > 128 {
		return fmt.Sprintf("was killed by signal %d (%v)", code-128, syscall.Signal(code-128))
	}
	return fmt.Sprintf("exited with %d", code)
}

func releaseQuietly(ctx context.Context, l *redlock.Lock) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = l.Release(rctx)
}

// holderMetadata is run's default metadata: "host HOST pid PID: COMMAND
// ARGS", cut to redlock.MaxMetadataLen bytes (on a character boundary,
// ending in "…").
func holderMetadata(command []string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "?"
	}
	m := fmt.Sprintf("host %s pid %d: %s", host, os.Getpid(), strings.ToValidUTF8(strings.Join(command, " "), "?"))
	if len(m) <= redlock.MaxMetadataLen {
		return m
	}
	cut := redlock.MaxMetadataLen - len("…")
	for !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "…"
}

// short shortens a token for display.
func short(token string) string {
	if len(token) <= 8 {
		return token
	}
	return token[:8] + "…"
}

func trimPrefix(err error) string {
	return strings.TrimPrefix(oneLine(err), "redlock: ")
}
