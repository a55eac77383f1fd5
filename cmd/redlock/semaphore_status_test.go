package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSemaphoreStatus: status -n shows the permits held (by the library
// and by `redlock run -n`, with their metadata) and who waits, the first
// (the gate's holder) then the queue, in the table and in --json; run
// --wait 0 finds every permit held; as permits are released the waiters
// run, and the semaphore shows free again (the built binary).
func TestSemaphoreStatus(t *testing.T) {
	name := lockName(t)
	nodes := nodesFlag(t)
	lib := holdPermit(t, name, 2, "host-a:1")
	marker := filepath.Join(t.TempDir(), "marker")
	runner := startCLIEnv(t, []string{"M=" + marker}, "run", "-n", "2", "--nodes", nodes, name, "--",
		"sh", "-c", `echo started > "$M"; sleep 30 & wait`)
	waitFile(t, marker, "started", runner)

	code, st := permitsStatusOf(t, name, 2)
	if code != exitOK || st.State != "full" || st.Held != 2 || st.Free != 0 || st.Waiting != 0 || st.First != nil || st.Answered != 3 {
		t.Fatalf("status -n 2 --json with both permits held = %d, %+v; want 0, full, 2 held, nobody waiting", code, st)
	}
	host, _ := os.Hostname()
	runMeta := fmt.Sprintf("host %s pid %d: sh -c ", host, runner.cmd.Process.Pid)
	metas := map[string]bool{}
	for _, s := range st.Slots {
		if s.State != "held" || s.HeldOn != 3 || s.TTLms <= 0 || s.TTLms > 60000 || s.Holder == "" {
			t.Errorf("slot %+v; want held on 3 nodes by a token, with a TTL", s)
		}
		switch {
		case s.Slot == lib.Slot() && s.Holder == lib.Token() && s.Metadata == "host-a:1":
			metas["lib"] = true
		case strings.HasPrefix(s.Metadata, runMeta):
			metas["run"] = true
		}
	}
	if !metas["lib"] || !metas["run"] {
		t.Errorf("slots %+v; want the library's permit (slot %d, host-a:1) and run's (%q…)", st.Slots, lib.Slot(), runMeta)
	}

	// Every permit held: a try fails with the semaphore's message.
	code, stdout, stderr := execCLI(t, "run", "-n", "2", "--wait", "0", "--nodes", nodes, name, "--", "echo", "ran")
	if code != exitTempFail || stdout != "" || !strings.Contains(stderr, "all 2 held") {
		t.Errorf("run -n 2 --wait 0 with both held = %d, %q, %q; want %d, nothing run, all 2 held", code, stdout, stderr, exitTempFail)
	}

	// Two runs wait, one after the other: the first holds the gate.
	var waiters []*proc
	for i := range 2 {
		waiters = append(waiters, startCLI(t, "run", "-n", "2", "--no-metadata", "--nodes", nodes, name, "--", "true"))
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, st = permitsStatusOf(t, name, 2); st.Waiting == i+1 && st.First != nil && st.First.HeldOn == 3 && len(st.Waiters) == i &&
				(i == 0 || st.Waiters[0].Nodes == 3) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("status -n 2 --json after 30s: %+v; want %d waiting", st, i+1)
			}
		}
	}
	code, stdout, stderr = execCLI(t, "status", "-n", "2", "--nodes", nodes, name)
	if code != exitOK || !strings.Contains(stdout, fmt.Sprintf("semaphore %q: 2 permits on 3 nodes (quorum 2)", name)) ||
		!strings.Contains(stdout, "held: 2 of 2 permits (0 free, 0 unknown)") || !strings.Contains(stdout, "waiting: 2, the first takes the next permit freed") ||
		!strings.Contains(stdout, `"host-a:1"`) || !strings.Contains(stdout, short(lib.Token())) {
		t.Fatalf("status -n 2 = %d:\n%s%s\nwant full, both held, 2 waiting", code, stdout, stderr)
	}
	var slotRows, waitRows int
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && (f[0] == "0" || f[0] == "1") && f[1] == "held" && f[3] == "3/3":
			slotRows++
		case len(f) == 5 && f[0] == "1" && f[1] == short(st.First.Token) && f[4] == "3/3",
			len(f) == 5 && f[0] == "2" && f[1] == short(st.Waiters[0].Token) && f[2] == st.Waiters[0].Client && f[4] == "3/3":
			waitRows++
		}
	}
	if slotRows != 2 || waitRows != 2 {
		t.Errorf("status -n 2:\n%s\nwant 2 held slot rows and 2 waiter rows, the gate's holder first", stdout)
	}

	// Releasing the permits lets the waiters run, in turn.
	if err := lib.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := waiters[0].wait(t); code != 0 {
		t.Errorf("first waiter = %d; want 0; stderr:\n%s", code, waiters[0].stderr.String())
	}
	if err := runner.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	runner.wait(t)
	if code := waiters[1].wait(t); code != 0 {
		t.Errorf("second waiter = %d; want 0; stderr:\n%s", code, waiters[1].stderr.String())
	}
	code, st = permitsStatusOf(t, name, 2)
	if code != exitFree || st.State != "available" || st.Held != 0 || st.Free != 2 || st.Waiting != 0 {
		t.Errorf("status -n 2 --json after every run ended = %d, %+v; want %d, available, 2 free, nobody waiting", code, st, exitFree)
	}
	code, stdout, _ = runCLI(t, "status", "-n", "2", "--nodes", nodes, name)
	if code != exitFree || !strings.Contains(stdout, "held: 0 of 2 permits (2 free, 0 unknown)") || !strings.Contains(stdout, "waiting: nobody") {
		t.Errorf("status -n 2 after every run ended = %d:\n%s\nwant %d, 0 held, nobody waiting", code, stdout, exitFree)
	}
}

// TestSemaphoreStatusOtherLimit: status -n with another limit than the
// live permits' says which limit is in use (exit 64), rather than show a
// part of the semaphore as if it were all of it.
func TestSemaphoreStatusOtherLimit(t *testing.T) {
	name := lockName(t)
	holdPermit(t, name, 2, "host-a:1")
	code, _, stderr := execCLI(t, "status", "-n", "3", "--nodes", nodesFlag(t), name)
	if code != exitUsage || !strings.Contains(stderr, "in use with 2 permits, not 3") || !strings.Contains(stderr, "status -n 2") {
		t.Errorf("status -n 3 of a semaphore in use with 2 = %d, %q; want %d naming limit 2", code, stderr, exitUsage)
	}
}
