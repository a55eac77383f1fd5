package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-go/redlock"
)

const runUsage = `usage: redlock run [flags] NAME -- COMMAND [ARGS...]

Acquire lock NAME on a quorum of the nodes, run COMMAND while a watchdog
extends the lock every TTL/3, and release the lock when COMMAND exits.
Like flock(1), redlock waits for the lock by default; --wait 0 tries once.

COMMAND runs in its own process group, with these variables added to its
environment:
  REDLOCK_NAME   the lock name
  REDLOCK_TOKEN  the random token that owns the lock on the nodes
  REDLOCK_FENCE  the fencing token (0 with --no-fence): send it with every
                 write and have the store reject a lower one than it has seen

SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to redlock are
forwarded to COMMAND's process group; the lock is released when COMMAND
exits. If the lock is lost while COMMAND runs (an extend fails its quorum),
COMMAND's group gets SIGTERM, then SIGKILL after --grace. If redlock itself
is SIGKILLed, COMMAND keeps running and the lock expires within --ttl.

Exit codes:
  N    COMMAND's own exit code (128+S if it was killed by signal S)
  64   bad usage: flags, arguments or node URLs (EX_USAGE)
  69   fewer nodes reachable than a quorum (EX_UNAVAILABLE)
  75   lock held elsewhere: not acquired within --wait (EX_TEMPFAIL)
  76   lock lost while COMMAND ran; COMMAND was stopped
  126  COMMAND could not be executed; 127 COMMAND not found
  128+S  redlock got signal S while waiting for the lock

Flags:
`

// forwarded are the signals redlock passes on to the command.
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
	ttl     time.Duration
	wait    waitFlag
	noFence bool
	grace   time.Duration
	verbose bool
}

func runFlags(out io.Writer) (*flag.FlagSet, *runOptions) {
	o := &runOptions{wait: waitFlag{forever: true}}
	fs := flag.NewFlagSet("redlock run", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, true)
	fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "lock lease; the watchdog extends it every ttl/3")
	fs.Var(&o.wait, "wait", "how long to wait for the lock: a `duration`, 0 to try once, or forever")
	fs.BoolVar(&o.noFence, "no-fence", false, "do not keep a fencing counter (REDLOCK_FENCE=0)")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "after a lost lock, time between SIGTERM and SIGKILL")
	fs.BoolVar(&o.verbose, "v", false, "report acquisition and release on stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), runUsage)
		fs.PrintDefaults()
	}
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
		return nil, "", nil, usagef("run", "redlock: run: %v", err)
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
	opts := &redlock.AcquireOptions{NoFence: o.noFence, AutoExtend: true}
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
	return nil, exitTempFail
}

// superviseChild runs the command and waits for it, forwarding signals and
// stopping it if the lock is lost. It returns the command's exit code and
// whether the lock was lost while it ran.
func superviseChild(ctx context.Context, lock *redlock.Lock, o *runOptions, name string, command []string, sigc <-chan os.Signal, stdout, stderr io.Writer) (code int, lost bool) {
	path, err := exec.LookPath(command[0])
	if err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		fmt.Fprintf(stderr, "redlock: cannot run %q: %v: check the command after --\n", command[0], unwrapAll(err))
		return code, false
	}
	cmd := exec.Command(path, command[1:]...)
	cmd.Args[0] = command[0]
	cmd.Env = append(os.Environ(),
		"REDLOCK_NAME="+name,
		"REDLOCK_TOKEN="+lock.Token(),
		"REDLOCK_FENCE="+strconv.FormatUint(lock.Fence(), 10),
	)
	cmd.Stdin = os.Stdin
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "redlock: cannot run %q: %v\n", command[0], unwrapAll(err))
		return exitCannotExec, false
	}
	pgid := cmd.Process.Pid
	signalGroup := func(sig syscall.Signal) {
		// The group may be gone already; then there is nothing to signal.
		_ = syscall.Kill(-pgid, sig)
	}

	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()

	lockDone := lock.Done()
	ctxDone := ctx.Done()
	var killc <-chan time.Time
	for {
		select {
		case <-waitc:
			return exitCodeOf(cmd.ProcessState), lost
		case sig := <-sigc:
			signalGroup(sig.(syscall.Signal))
		case <-ctxDone:
			ctxDone = nil
			signalGroup(syscall.SIGTERM)
		case <-lockDone:
			lockDone = nil
			lost = true
			fmt.Fprintf(stderr, "redlock: lock %q lost while the command ran (an extend failed its quorum or came too late): sending SIGTERM, SIGKILL in %v\n", name, o.grace)
			signalGroup(syscall.SIGTERM)
			t := time.NewTimer(o.grace)
			defer t.Stop()
			killc = t.C
		case <-killc:
			killc = nil
			fmt.Fprintf(stderr, "redlock: command still running %v after SIGTERM: sending SIGKILL\n", o.grace)
			signalGroup(syscall.SIGKILL)
		}
	}
}

// exitCodeOf is the shell's view of how a process ended.
func exitCodeOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
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
