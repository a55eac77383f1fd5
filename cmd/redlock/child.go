package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-go/redlock"
)

// groupPoll is how often redlock looks whether the command's process group
// still has members once the command itself has exited.
const groupPoll = 50 * time.Millisecond

// childEnv is redlock's environment for the command: without
// $REDLOCK_NODES (it may hold passwords) and with h's variables.
func childEnv(name string, h holder) []string {
	env := make([]string, 0, len(os.Environ())+5)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, nodesEnv+"=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, holdEnv(name, h)...)
}

// childEvent is what wait4 says about the command: stopped by a signal, or
// gone with a status (err when waiting failed).
type childEvent struct {
	stopped bool
	status  syscall.WaitStatus
	err     error
}

// waitLeader reports the command's stops and, last, its end on events,
// which the caller buffers; it returns after the end.
func waitLeader(pid int, events chan<- childEvent) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED|syscall.WCONTINUED, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			events <- childEvent{err: err}
			return
		case ws.Stopped():
			events <- childEvent{stopped: true, status: ws}
		case ws.Continued():
		default:
			events <- childEvent{status: ws}
			return
		}
	}
}

// superviseChild runs the command and waits for it and for every process
// left in its process group, forwarding signals, handing it the terminal,
// and stopping the whole group if h (the lock or permit) is lost. It
// returns the command's exit code and whether h was lost while the group
// ran.
func superviseChild(ctx context.Context, h holder, o *runOptions, name string, command []string, sigc <-chan os.Signal, stdout, stderr io.Writer) (code int, lost bool) {
	path, err := exec.LookPath(command[0])
	if err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNotFound
		}
		fmt.Fprintf(stderr, "redlock: cannot run %q: %v: check COMMAND\n", command[0], unwrapAll(err))
		return code, false
	}
	cmd := exec.Command(path, command[1:]...)
	cmd.Args[0] = command[0]
	cmd.Env = append(childEnv(name, h), o.extraEnv...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	tty := foregroundTerminal(os.Stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if tty != nil {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = tty.fd
	}
	setParentDeathSignal(cmd.SysProcAttr)
	// The parent-death signal fires when the thread that started the child
	// ends, not the process: start it from a thread that stays.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		fmt.Fprintf(stderr, "redlock: cannot run %q: %v\n", command[0], unwrapAll(err))
		return exitCannotExec, false
	}
	pgid := cmd.Process.Pid
	if tty != nil {
		// redlock is in the background now: it must be able to take the
		// terminal back and to write its messages without being stopped.
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
		defer tty.takeBack(pgid)
	}
	signalGroup := func(sig syscall.Signal) {
		// The group may be gone already; then there is nothing to signal.
		_ = syscall.Kill(-pgid, sig)
	}

	// Job control: SIGTSTP sent to redlock stops the command instead (the
	// lock is kept while it is stopped), SIGCONT continues it.
	jobc := make(chan os.Signal, 4)
	signal.Notify(jobc, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(jobc)

	events := make(chan childEvent, 4)
	waiterDone := make(chan struct{})
	go func() {
		defer close(waiterDone)
		waitLeader(pgid, events)
	}()
	defer func() {
		<-waiterDone
		_ = cmd.Wait() // joins the output copiers; the status came from waitLeader
	}()

	lockDone := h.Done()
	ctxDone := ctx.Done()
	var killc, pollc <-chan time.Time
	leaderGone := false
	for {
		select {
		case ev := <-events:
			switch {
			case ev.err != nil:
				fmt.Fprintf(stderr, "redlock: waiting for %q: %v\n", command[0], ev.err)
				code = exitCannotExec
			case ev.stopped:
				if tty != nil {
					// Ctrl-Z (or a read from the terminal in the
					// background): stop with the command, so the shell
					// gets the terminal and sees the job stopped.
					tty.takeBack(pgid)
					_ = syscall.Kill(0, syscall.SIGSTOP)
				}
				continue
			default:
				code = exitCodeOf(ev.status)
			}
			leaderGone = true
			if tty != nil {
				tty.takeBack(pgid)
			}
			if !groupAlive(pgid) {
				return code, lost
			}
			t := time.NewTicker(groupPoll)
			defer t.Stop()
			pollc = t.C
		case <-pollc:
			if !groupAlive(pgid) {
				return code, lost
			}
		case sig := <-sigc:
			signalGroup(sig.(syscall.Signal))
		case sig := <-jobc:
			if sig == syscall.SIGTSTP {
				signalGroup(syscall.SIGTSTP)
				continue
			}
			// SIGCONT: the shell's fg or bg, or redlock continued by hand.
			if leaderGone || h.Err() != nil || !time.Now().Before(h.ValidUntil()) {
				continue // a lost lock continues the group with its SIGTERM
			}
			if tty != nil {
				tty.handTo(pgid)
			}
			signalGroup(syscall.SIGCONT)
		case <-ctxDone:
			ctxDone = nil
			signalGroup(syscall.SIGTERM)
			signalGroup(syscall.SIGCONT)
		case <-lockDone:
			lockDone = nil
			lost = true
			why := "an extend failed its quorum or came too late"
			if errors.Is(h.Err(), redlock.ErrMaxHold) {
				why = fmt.Sprintf("held for --max-hold %v, the watchdog stopped extending it", o.maxHold)
			}
			fmt.Fprintf(stderr, "redlock: %s lost while the command ran (%s): sending SIGTERM to its process group, SIGKILL in %v\n", holdName(name, h), why, o.grace)
			signalGroup(syscall.SIGTERM)
			signalGroup(syscall.SIGCONT) // a stopped group gets the SIGTERM now
			t := time.NewTimer(o.grace)
			defer t.Stop()
			killc = t.C
		case <-killc:
			killc = nil
			if groupAlive(pgid) {
				fmt.Fprintf(stderr, "redlock: command's process group still running %v after SIGTERM: sending SIGKILL\n", o.grace)
				signalGroup(syscall.SIGKILL)
			}
		}
	}
}

// exitCodeOf is the shell's view of how a process ended.
func exitCodeOf(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
