package main

import (
	"strings"
	"testing"
	"time"
)

// Tests of the command line's conventions on the shared Redis nodes.

// TestElectWaitZeroTriesOnce: elect --wait 0 makes one try, as run's does:
// it leads a free election and runs the command; while another leads it
// exits 75 at once.
func TestElectWaitZeroTriesOnce(t *testing.T) {
	name := lockName(t)
	code, stdout, stderr := runCLI(t, "elect", "--wait", "0", "--nodes", nodesFlag(t), name, "--", "sh", "-c", "echo led $REDLOCK_TERM")
	if code != exitOK || !strings.HasPrefix(stdout, "led ") {
		t.Fatalf("elect --wait 0 on a free election = %d, stdout %q, stderr %q; want 0 and the command run", code, stdout, stderr)
	}

	lead(t, name, "other:1")
	start := time.Now()
	code, stdout, stderr = runCLI(t, "elect", "--wait", "0", "--nodes", nodesFlag(t), name, "--", "echo", "led")
	if code != exitTempFail || stdout != "" || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("elect --wait 0 while another leads = %d, stdout %q, stderr %q; want %d, nothing run", code, stdout, stderr, exitTempFail)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("elect --wait 0 while another leads took %v; want one try", d)
	}
}

// TestRunCommandWithoutDashes: run NAME COMMAND ARGS... runs the command
// under the lock without "--" (as flock does), and -c 'SHELL COMMAND'
// through sh -c.
func TestRunCommandWithoutDashes(t *testing.T) {
	name := lockName(t)
	code, stdout, stderr := runCLI(t, "run", "--nodes", nodesFlag(t), name, "sh", "-c", `echo "$REDLOCK_NAME" "$1"`, "sh", "-x")
	if code != exitOK || stdout != name+" -x\n" {
		t.Errorf("run NAME sh -c ... = %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, name+" -x\n")
	}
	code, stdout, stderr = runCLI(t, "run", "--nodes", nodesFlag(t), name, "-c", `echo "$REDLOCK_NAME" && exit 3`)
	if code != 3 || stdout != name+"\n" {
		t.Errorf("run NAME -c '...' = %d, stdout %q, stderr %q; want 3 and %q", code, stdout, stderr, name+"\n")
	}
	if n := lockKeyCount(t, name); n != 0 {
		t.Errorf("lock key on %d nodes after run; want released", n)
	}
}

// TestRunMaxHold: run --max-hold stops extending the lock once it has
// been held that long: the command is stopped as on any loss (76), and
// the message says the cap did it.
func TestRunMaxHold(t *testing.T) {
	name := lockName(t)
	start := time.Now()
	code, _, stderr := execCLI(t, "run", "--ttl", "1s", "--max-hold", "1s", "--nodes", nodesFlag(t), name, "--", "sleep", "30")
	if code != exitLost || !strings.Contains(stderr, "held for --max-hold 1s") {
		t.Errorf("run --max-hold 1s of sleep 30 = %d, stderr %q; want %d saying the cap ended it", code, stderr, exitLost)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("run --max-hold 1s of sleep 30 took %v; want it stopped soon after the cap", d)
	}
	if code, _, stderr := runCLI(t, "run", "--max-hold", "-1s", "--nodes", nodesFlag(t), name, "true"); code != exitUsage || !strings.Contains(stderr, "--max-hold -1s") {
		t.Errorf("run --max-hold -1s = %d, %q; want %d", code, stderr, exitUsage)
	}
}
