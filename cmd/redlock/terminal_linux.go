package main

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is redlock's controlling terminal, when its stdin is one and
// redlock's process group is the terminal's foreground group: then the
// command's group is made the foreground group instead, so that Ctrl-Z,
// Ctrl-C and reads from the terminal reach the command as they would
// without redlock.
type terminal struct {
	fd   int
	pgrp int // redlock's own process group
}

// foregroundTerminal returns f as a terminal if it is one and redlock is in
// its foreground process group, else nil.
func foregroundTerminal(f *os.File) *terminal {
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return nil
	}
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != syscall.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: fg}
}

// takeBack makes redlock's group the foreground group again if the
// command's group child has it. The caller ignores SIGTTOU.
func (t *terminal) takeBack(child int) {
	if fg, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP); err == nil && fg == child {
		_ = unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, t.pgrp)
	}
}

// handTo makes the command's group child the foreground group if redlock's
// group has the terminal (after the shell's fg, not after bg).
func (t *terminal) handTo(child int) {
	if fg, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP); err == nil && fg == t.pgrp {
		_ = unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, child)
	}
}

// setParentDeathSignal has the kernel SIGKILL the command when redlock
// dies, so that it never runs on without the lock's watchdog. Linux sends
// it when the thread that started the command ends: the caller starts it
// with the thread locked, and Go ends a thread only when a goroutine locked
// to it exits. Only the command itself gets the signal, not the processes
// it started.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// becomeSubreaper makes redlock the parent of the processes its command
// leaves behind, so that their exits are reaped (and seen) by redlock even
// where the system's init does not reap.
func becomeSubreaper() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// groupAlive reports whether process group pgid still has a member. It
// first reaps the members that are redlock's children (left to it as a
// subreaper) and have exited.
func groupAlive(pgid int) bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			break
		}
	}
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
