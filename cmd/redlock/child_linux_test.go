package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal: the test types into master, redlock gets the
// slave as its controlling terminal and stdin.
type pty struct {
	master *os.File
	slave  *os.File
	echo   lockedBuffer  // what the terminal showed
	done   chan struct{} // closed when the reader of master returns
}

func openPTY(t testing.TB) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open slave: %v", err)
	}
	p := &pty{master: m, slave: s, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_, _ = io.Copy(&p.echo, m)
	}()
	t.Cleanup(func() {
		s.Close()
		m.Close()
		<-p.done
	})
	return p
}

// attach makes the pty the controlling terminal and stdin of cmd, which
// leads a new session and so is the terminal's foreground group, as a job
// started by an interactive shell is.
func (p *pty) attach(cmd *exec.Cmd) {
	cmd.Stdin = p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// waitForeground polls until the terminal's foreground process group is
// want, or fails the test saying whose it should be.
func (p *pty) waitForeground(t testing.TB, want int, whose string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pg, err := unix.IoctlGetInt(int(p.master.Fd()), unix.TIOCGPGRP)
		if err != nil {
			t.Fatalf("tcgetpgrp: %v", err)
		}
		if pg == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("terminal's foreground group = %d after 30s; want %s, %d", pg, whose, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *pty) typeIn(t testing.TB, s string) {
	t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		t.Fatalf("write to the terminal: %v", err)
	}
}

// procState is the state letter of pid in /proc ("R", "S", "T", "Z"), or ""
// when there is no such process.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	st, _, _ := strings.Cut(rest, " ")
	return st
}

// alive reports whether pid runs or is stopped (not gone, not a zombie).
func alive(pid int) bool {
	st := procState(pid)
	return st != "" && st != "Z" && st != "X"
}

// waitState polls until cond(pid's state) holds, or fails the test.
func waitState(t testing.TB, pid int, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(procState(pid)) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d: state %q after 30s; want it %s", pid, procState(pid), what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stopped(st string) bool { return st == "T" }
func dead(st string) bool    { return st == "" || st == "Z" || st == "X" }

// pidFrom waits for file path to hold a pid and returns it.
func pidFrom(t testing.TB, path string, p *proc) int {
	t.Helper()
	waitFile(t, path, "\n", p)
	s, _ := readFile(t, path)
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%s = %q; want a pid", path, s)
	}
	return pid
}

func TestRunTerminalRead(t *testing.T) {
	// Before the command's group was made the terminal's foreground group,
	// its read stopped it (SIGTTIN) forever while redlock kept the lock.
	tty := openPTY(t)
	dir := t.TempDir()
	m, pidf := filepath.Join(dir, "marker"), filepath.Join(dir, "pid")
	script := `echo $$ > "$P"; read line; echo "got $line" >> "$M"; (while [ ! -e "$M.go" ]; do sleep 0.05; done) & exit 4`
	p := startCLIWith(t, tty.attach, []string{"M=" + m, "P=" + pidf}, "run", "--nodes", nodesFlag(t), lockName(t), "--", "sh", "-c", script)
	child := pidFrom(t, pidf, p)
	tty.waitForeground(t, child, "the command's group")
	tty.typeIn(t, "hello\n")
	waitFile(t, m, "got hello", p)
	// The command exited; the process it left in its group keeps the lock,
	// and redlock has the terminal back.
	waitState(t, child, "gone", dead)
	tty.waitForeground(t, p.cmd.Process.Pid, "redlock's group, taken back after the command exited")
	if n := lockKeyCount(t, lockName(t)); n != 3 {
		t.Errorf("lock key on %d nodes while a process of the command's group runs; want 3", n)
	}
	if err := os.WriteFile(m+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 4 {
		t.Errorf("redlock = %d; want the command's 4; stderr:\n%s", code, p.stderr.String())
	}
	if n := lockKeyCount(t, lockName(t)); n != 0 {
		t.Errorf("lock key on %d nodes after the group ended; want 0 (released)", n)
	}
}

// ctrlZ starts a command that waits for a line from the terminal, stops it
// with Ctrl-Z typed into the terminal, and checks that redlock stopped with
// it and took the terminal back. It returns redlock, the command's pid and
// the marker file.
func ctrlZ(t *testing.T, tty *pty, ttl string) (*proc, int, string) {
	t.Helper()
	dir := t.TempDir()
	m, pidf := filepath.Join(dir, "marker"), filepath.Join(dir, "pid")
	script := `trap 'echo term >> "$M"; exit 9' TERM; echo $$ > "$P"; read line; echo "got $line" >> "$M"`
	p := startCLIWith(t, tty.attach, []string{"M=" + m, "P=" + pidf}, "run", "--nodes", nodesFlag(t), "--ttl", ttl, "--grace", "200ms", lockName(t), "--", "sh", "-c", script)
	child := pidFrom(t, pidf, p)
	tty.typeIn(t, "\x1a") // the terminal's VSUSP, Ctrl-Z
	waitState(t, child, "stopped", stopped)
	waitState(t, p.cmd.Process.Pid, "stopped (as the job the shell sees)", stopped)
	tty.waitForeground(t, p.cmd.Process.Pid, "redlock's group, taken back with the job stopped")
	return p, child, m
}

func TestRunTerminalCtrlZ(t *testing.T) {
	// Ctrl-Z stops the command and redlock; continued (the shell's fg)
	// within the lease, the lock is still held and the command gets the
	// terminal back.
	tty := openPTY(t)
	p, child, m := ctrlZ(t, tty, "10s")
	if n := lockKeyCount(t, lockName(t)); n != 3 {
		t.Errorf("lock key on %d nodes with the job stopped; want 3 (held for the rest of its lease)", n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, child, "running again", func(st string) bool { return st != "T" })
	tty.waitForeground(t, child, "the command's group again after SIGCONT")
	tty.typeIn(t, "again\n")
	waitFile(t, m, "got again", p)
	if code := p.wait(t); code != 0 {
		t.Errorf("redlock = %d; want 0; stderr:\n%s", code, p.stderr.String())
	}
	if n := lockKeyCount(t, lockName(t)); n != 0 {
		t.Errorf("lock key on %d nodes after the command exited; want 0 (released)", n)
	}
}

func TestRunTerminalCtrlZPastLease(t *testing.T) {
	// A stopped redlock cannot extend: stopped longer than the lease, the
	// lock expires, and once continued the command is stopped (SIGTERM)
	// instead of resuming without the lock.
	tty := openPTY(t)
	p, child, m := ctrlZ(t, tty, "1s")
	deadline := time.Now().Add(30 * time.Second)
	for lockKeyCount(t, lockName(t)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("lock key still on a node 30s after the job stopped; want it expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != exitLost {
		t.Errorf("redlock = %d; want %d (lost); stderr:\n%s", code, exitLost, p.stderr.String())
	}
	waitState(t, child, "gone", dead)
	b, _ := readFile(t, m)
	if !strings.Contains(b, "term") || strings.Contains(b, "got") {
		t.Errorf("marker = %q; want the command stopped by SIGTERM before it read anything", b)
	}
}

func TestRunHoldsWhileGroupLives(t *testing.T) {
	// The command exits at once, leaving a process in its group that waits
	// for a go-ahead file: redlock keeps the lock until that one exits too.
	dir := t.TempDir()
	m, pidf := filepath.Join(dir, "marker"), filepath.Join(dir, "pid")
	script := `echo $$ > "$P"; (while [ ! -e "$M.go" ]; do sleep 0.05; done; echo bg-done >> "$M") & exit 6`
	p := startCLIEnv(t, []string{"M=" + m, "P=" + pidf}, "run", "--nodes", nodesFlag(t), lockName(t), "--", "sh", "-c", script)
	child := pidFrom(t, pidf, p)
	waitState(t, child, "gone", dead)
	select {
	case <-p.done:
		t.Fatalf("redlock exited (%v) with a process of the command's group still running; stderr:\n%s", p.cmd.ProcessState, p.stderr.String())
	default:
	}
	if n := lockKeyCount(t, lockName(t)); n != 3 {
		t.Errorf("lock key on %d nodes after the command exited with its background process running; want 3", n)
	}
	if err := os.WriteFile(m+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 6 {
		t.Errorf("redlock = %d; want the command's own 6; stderr:\n%s", code, p.stderr.String())
	}
	if b, _ := readFile(t, m); !strings.Contains(b, "bg-done") {
		t.Errorf("marker = %q after redlock exited; want the background process done first", b)
	}
	if n := lockKeyCount(t, lockName(t)); n != 0 {
		t.Errorf("lock key on %d nodes after the group ended; want 0 (released)", n)
	}
}

func TestRunKillOnLossWholeGroup(t *testing.T) {
	// A process the command started ignores SIGTERM: on loss it gets
	// SIGKILL after --grace whether the command is still there or not.
	tests := []struct{ name, script string }{
		{"command already exited", `trap '' TERM; sleep 30 & echo $! > "$P"; echo started >> "$M"; exit 0`},
		{"command exits on SIGTERM", `(trap '' TERM; exec sleep 30) & echo $! > "$P"; trap 'exit 3' TERM; echo started >> "$M"; wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := lockName(t)
			dir := t.TempDir()
			m, pidf := filepath.Join(dir, "marker"), filepath.Join(dir, "pid")
			p := startCLIEnv(t, []string{"M=" + m, "P=" + pidf}, "run", "--nodes", nodesFlag(t), "--ttl", "3s", "--grace", "300ms", name, "--", "sh", "-c", tt.script)
			waitFile(t, m, "started", p)
			grandchild := pidFrom(t, pidf, p)
			deleteLockKeys(t, name, 2)
			if code := p.wait(t); code != exitLost {
				t.Errorf("redlock = %d after the lock was lost; want %d; stderr:\n%s", code, exitLost, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "sending SIGKILL") {
				t.Errorf("stderr = %q; want the SIGKILL reported", p.stderr.String())
			}
			if alive(grandchild) {
				_ = syscall.Kill(grandchild, syscall.SIGKILL)
				t.Errorf("process %d of the command's group, which ignores SIGTERM, survived the lost lock", grandchild)
			}
		})
	}
}

func TestRunParentDeath(t *testing.T) {
	// redlock is SIGKILLed: the command gets SIGKILL from the kernel. A
	// process the command started does not (the documented limit), which
	// also shows that the check tells a live process from a dead one.
	dir := t.TempDir()
	pidf, gpidf := filepath.Join(dir, "pid"), filepath.Join(dir, "gpid")
	script := `sleep 30 & echo $! > "$G"; echo $$ > "$P"; exec sleep 30`
	p := startCLIEnv(t, []string{"P=" + pidf, "G=" + gpidf}, "run", "--nodes", nodesFlag(t), lockName(t), "--", "sh", "-c", script)
	child, grandchild := pidFrom(t, pidf, p), pidFrom(t, gpidf, p)
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	if !alive(child) || !alive(grandchild) {
		t.Fatalf("command %d (%s) and its process %d (%s): want both running", child, procState(child), grandchild, procState(grandchild))
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not <-p.done: the processes left hold redlock's output pipes open.
	waitState(t, child, "killed with redlock", dead)
	if !alive(grandchild) {
		t.Errorf("process %d started by the command died too; the check cannot tell (want it running, as documented)", grandchild)
	}
}
