package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/redlock-go/redlock"
)

const runUsage = `usage: redlock run [-n N] [flags] NAME [--] COMMAND [ARGS...]
       redlock run [-n N] [flags] NAME -c 'SHELL COMMAND'

Acquire lock NAME on a quorum of the nodes, run COMMAND while a watchdog
extends the lock every TTL/3, and release the lock when COMMAND and every
process left in its process group have exited (as flock holds the lock
while any process it started has the file open; a process that leaves the
group, with setsid say, is not waited for). Like flock(1), redlock waits
for the lock by default; --wait 0 tries once.

Command line: as flock's, everything after NAME is the command, its flags
included ('redlock run job ls -l'); redlock's flags go before NAME. With
-- before COMMAND, redlock's flags may also come between NAME and the --.
-c 'SHELL COMMAND' runs the text with sh -c instead (as flock -c). A flag
after NAME followed by a command without -- is refused: it could be
either's.

Semaphore: with -n N (N > 1) at most N commands run NAME at once, like
'consul lock -n': redlock takes one of the N permits of semaphore NAME
(each a lock of its own on the quorum) instead of lock NAME, and keeps it
as it keeps a lock: the watchdog extends it, the command is stopped if it
is lost, and a --wait 0 tries once. Waiters take the permits freed in the
order they came. Every run of NAME must give the same -n: while permits
taken with another N are live, run fails at once (exit 75). -n 1, the
default, is lock NAME, the same as no -n; a semaphore's keys are apart
from the lock's. 'redlock status -n N NAME' shows the permits.

COMMAND runs in its own process group, with these variables added to its
environment (and $REDLOCK_NODES removed from it):
  REDLOCK_NAME   the lock name (with -n, the semaphore's)
  REDLOCK_TOKEN  the random token that owns the lock on the nodes
  REDLOCK_FENCE  the fencing token (0 with --no-fence): send it with every
                 write and have the store reject a lower one than it has seen;
                 with -n the permit's (the semaphore's counter times N plus
                 the slot): guard a store per slot, not per NAME
  REDLOCK_SLOT   with -n: which permit the command holds, 0 to N-1
  REDLOCK_LIMIT  with -n: N

Shared: with --shared, COMMAND runs as a reader of lock NAME: any number
of --shared runs of NAME run at once, and none while a run without
--shared (or any other holder of lock NAME) holds it. A reader that comes
after a waiting writer waits behind it. REDLOCK_FENCE is the reader's fence
(above every writer's before it); its metadata is shown among the readers.

Holder: redlock stores "host HOST pid PID: COMMAND ARGS" (its own host name
and pid, and the command, cut to 256 bytes) with the lock (or permit) as
its metadata, which 'redlock status' shows; --metadata TEXT stores TEXT
instead, and --no-metadata nothing. Either way the lock is the plain one
(the metadata lives in a key of its own that expires and goes with the
lock).

Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGTSTP sent
to redlock are forwarded to COMMAND's process group. If the lock is lost
while the group runs (an extend fails its quorum, or --max-hold ran out),
the whole group gets SIGTERM (and SIGCONT, should it be stopped), then
SIGKILL after --grace, whether COMMAND itself is still there or not.

A cap: --max-hold D stops the watchdog once an extend would keep the lock
past D after it was acquired, so a COMMAND that hangs cannot keep the lock
forever: the lock then expires at its deadline and COMMAND is stopped as
on any loss (exit 76). The default, 0, is no cap.

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
       --conflict-exit-code changes it); with -n: all N permits held, or
       the semaphore in use with another -n (at once, whatever --wait)
  76   lock (or permit) lost while COMMAND ran, or held for --max-hold;
       COMMAND was stopped
  126  COMMAND could not be executed; 127 COMMAND not found
  128+S  redlock got signal S while waiting for the lock

` + nodesHelp + `
Every flag falls back to an environment variable: --ttl $REDLOCK_TTL,
--wait $REDLOCK_WAIT, --grace $REDLOCK_GRACE, --no-fence $REDLOCK_NO_FENCE,
--max-hold $REDLOCK_MAX_HOLD, --node-timeout $REDLOCK_NODE_TIMEOUT,
--prefix $REDLOCK_PREFIX, --conflict-exit-code $REDLOCK_CONFLICT_EXIT_CODE,
--metadata $REDLOCK_METADATA, --no-metadata $REDLOCK_NO_METADATA, -n
$REDLOCK_PERMITS, -v $REDLOCK_VERBOSE, --nodes $REDLOCK_NODES; -c has none.
The command line wins. A yes-or-no flag (--no-fence, --no-metadata, -v)
takes 1, true, yes or on; or 0, false, no or off.

Flags:
`

// forwarded are the signals redlock passes on to the command while it runs
// (and that end the wait for the lock before); SIGTSTP and SIGCONT are
// handled once the command runs (see superviseChild).
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// defaultGrace is --grace when neither it nor $REDLOCK_GRACE is given and
// the TTL leaves that long (see maxGrace).
const defaultGrace = 10 * time.Second

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, name, command, err := parseRun(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return reportUsage(stderr, err)
	}
	s, sigc, done, code := startCommand(ctx, "run", o, stderr)
	if s == nil {
		return code
	}
	defer done()

	h, code := acquireForRun(ctx, s, o, name, sigc, stderr)
	if h == nil {
		return code
	}
	if o.verbose {
		fmt.Fprintf(stderr, "redlock: acquired %s (fence %d, token %s)\n", holdName(name, h), h.Fence(), short(h.Token()))
	}

	code, lost := superviseChild(ctx, h, o, name, command, sigc, stdout, stderr)

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	relErr := h.Release(rctx)
	if lost || errors.Is(relErr, redlock.ErrLost) {
		fmt.Fprintf(stderr, "redlock: %s was lost before the command finished (it %s): its work may have overlapped another holder; exit %d\n", holdName(name, h), describeExit(code), exitLost)
		return exitLost
	}
	if relErr != nil {
		fmt.Fprintf(stderr, "redlock: warning: release of %s: %s (the keys expire by themselves within --ttl %v)\n", holdName(name, h), trimPrefix(relErr), o.ttl)
	} else if o.verbose {
		fmt.Fprintf(stderr, "redlock: released %s\n", holdName(name, h))
	}
	return code
}

// acquireForRun waits for the lock (or with -n, a permit) as --wait says.
// A signal or ctx ends the wait. It returns what it acquired, or nil and
// the exit code after reporting why.
func acquireForRun(ctx context.Context, s *session, o *runOptions, name string, sigc <-chan os.Signal, stderr io.Writer) (holder, int) {
	opts := &redlock.AcquireOptions{NoFence: o.noFence, AutoExtend: true, MaxHold: o.maxHold, Metadata: o.metadata}
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
		h   holder
		err error
	}
	resc := make(chan result, 1)
	if o.verbose {
		fmt.Fprintf(stderr, "redlock: waiting for %s (--wait %v)\n", wantedName(name, o.limit), o.wait.String())
	}
	go func() {
		h, err := acquireHold(actx, s.client, o, name, opts)
		resc <- result{h, err}
	}()
	var res result
	select {
	case res = <-resc:
	case sig := <-sigc:
		cancel()
		res = <-resc
		if res.err == nil {
			releaseQuietly(ctx, res.h)
		}
		fmt.Fprintf(stderr, "redlock: got %v while waiting for %s: nothing was run\n", sig, wantedName(name, o.limit))
		return nil, 128 + int(sig.(syscall.Signal))
	}
	if res.err == nil {
		return res.h, exitOK
	}
	if !errors.Is(res.err, redlock.ErrNotAcquired) {
		return nil, reportUsage(stderr, usagef("run", "%s", trimPrefix(res.err)))
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "redlock: stopped while waiting for %s: nothing was run\n", wantedName(name, o.limit))
		return nil, exitTempFail
	}
	// Held elsewhere, or the nodes went away while we waited?
	if code, ok := s.checkQuorum(ctx, stderr); !ok {
		return nil, code
	}
	return nil, reportNotAcquired(o, name, res.err, stderr)
}

func describeExit(code int) string {
	if code > 128 {
		return fmt.Sprintf("was killed by signal %d (%v)", code-128, syscall.Signal(code-128))
	}
	return fmt.Sprintf("exited with %d", code)
}

func releaseQuietly(ctx context.Context, l holder) {
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

// trimPrefix is err's text on one line without its "redlock: "s (oneLine),
// for a message that has one of its own.
func trimPrefix(err error) string { return oneLine(err) }

// startCommand opens the session of cmd (run, elect), catches the signals
// that go to the command (from here on: while waiting they stop the wait,
// once the command runs they are forwarded to it), and checks that a
// quorum answers. It returns the session, the signals and the func that
// undoes both; with a nil session, the exit code.
func startCommand(ctx context.Context, cmd string, o *runOptions, stderr io.Writer) (*session, chan os.Signal, func(), int) {
	s, code := openSession(cmd, &o.nodeFlags, o.ttl, stderr)
	if s == nil {
		return nil, nil, nil, code
	}
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, forwarded...)
	done := func() {
		signal.Stop(sigc)
		s.close()
	}
	if code, ok := s.checkQuorum(ctx, stderr); !ok {
		done()
		return nil, nil, nil, code
	}
	return s, sigc, done, 0
}
