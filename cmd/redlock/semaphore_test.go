package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// holdPermit takes a permit of semaphore name with the library itself and
// releases it when the test ends.
func holdPermit(t testing.TB, name string, limit int, meta string) *redlock.Permit {
	t.Helper()
	c, err := redlock.New(cluster(t).Clients(), nil)
	if err != nil {
		t.Fatalf("redlock.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := c.AcquirePermit(ctx, name, limit, time.Minute, &redlock.AcquireOptions{Metadata: meta})
	if err != nil {
		t.Fatalf("AcquirePermit(%q, %d) = %v; want a permit", name, limit, err)
	}
	t.Cleanup(func() { _ = p.Release(context.Background()) })
	return p
}

// permitsStatusOf runs status -n limit --json on name and decodes its output.
func permitsStatusOf(t *testing.T, name string, limit int) (int, permitsJSON) {
	t.Helper()
	code, stdout, stderr := runCLI(t, "status", "--json", "-n", strconv.Itoa(limit), "--nodes", nodesFlag(t), name)
	var st permitsJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status -n %d --json = %d, output %q (stderr %q): not JSON: %v", limit, code, stdout, stderr, err)
	}
	return code, st
}

// TestSemaphoreRunOverlap: three `run -n 2` at once; each command waits
// until two have started, so exactly two overlap, never three; all three
// run, each with its slot, the limit and a fence of that slot.
func TestSemaphoreRunOverlap(t *testing.T) {
	name := lockName(t)
	log := filepath.Join(t.TempDir(), "log")
	script := `echo "start $0 $REDLOCK_SLOT $REDLOCK_LIMIT $REDLOCK_FENCE" >> "$LOG"
i=0; while [ "$(grep -c start "$LOG")" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
sleep 0.3; echo "end $0 $REDLOCK_SLOT" >> "$LOG"`
	const procs = 3
	var ps []*proc
	for i := range procs {
		ps = append(ps, startCLIEnv(t, []string{"LOG=" + log},
			"run", "-n", "2", "--nodes", nodesFlag(t), name, "--", "sh", "-c", script, strconv.Itoa(i)))
	}
	for i, p := range ps {
		if code := p.wait(t); code != 0 {
			t.Errorf("redlock run -n 2 (%d) = %d; want 0; stderr:\n%s", i, code, p.stderr.String())
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]string{} // proc → slot
	fences := map[uint64]bool{}
	most := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == "start":
			for p, slot := range running {
				if slot == f[2] {
					t.Errorf("%s started in slot %s while %s held it; log:\n%s", f[1], slot, p, b)
				}
			}
			running[f[1]] = f[2]
			most = max(most, len(running))
			fence, err := strconv.ParseUint(f[4], 10, 64)
			slot, serr := strconv.Atoi(f[2])
			if err != nil || serr != nil || f[3] != "2" || slot < 0 || slot > 1 || fence == 0 || fence%2 != uint64(slot) || fences[fence] {
				t.Errorf("command saw REDLOCK_SLOT %q, REDLOCK_LIMIT %q, REDLOCK_FENCE %q; want a slot 0 or 1, 2, and a new fence with fence %% 2 = slot", f[2], f[3], f[4])
			}
			fences[fence] = true
		case len(f) == 3 && f[0] == "end":
			if running[f[1]] != f[2] {
				t.Errorf("%s ended in slot %s, not the one it started in; log:\n%s", f[1], f[2], b)
			}
			delete(running, f[1])
		default:
			t.Errorf("log line %q; want start/end lines with the variables", line)
		}
	}
	if len(fences) != procs || len(running) != 0 {
		t.Errorf("log:\n%s\nwant %d commands started and ended", b, procs)
	}
	if most != 2 {
		t.Errorf("at most %d commands ran at once; want 2 (-n 2); log:\n%s", most, b)
	}
}

// TestSemaphoreRunOneIsLock: -n 1 is lock NAME, the same as no -n.
func TestSemaphoreRunOneIsLock(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	code, stdout, stderr := runCLI(t, "run", "-n", "1", "--wait", "0", "--nodes", nodesFlag(t), name, "--", "echo", "ran")
	if code != exitTempFail || stdout != "" || !strings.Contains(stderr, "lock \""+name+"\" not acquired") {
		t.Errorf("run -n 1 on a held lock = %d, %q, %q; want %d: lock NAME is held", code, stdout, stderr, exitTempFail)
	}
	code, stdout, stderr = runCLI(t, "run", "-n", "1", "--nodes", nodesFlag(t), name+"-free", "--", "sh", "-c", `echo "${REDLOCK_SLOT-none} ${REDLOCK_LIMIT-none}"`)
	if code != 0 || stdout != "none none\n" {
		t.Errorf("run -n 1 = %d, %q, %q; want 0 and no REDLOCK_SLOT/REDLOCK_LIMIT", code, stdout, stderr)
	}
}

// TestSemaphoreRunLimitMismatch: with permits of -n 2 live, run -n 3
// fails at once with the mismatch; run -n 2 takes the free permit.
func TestSemaphoreRunLimitMismatch(t *testing.T) {
	name := lockName(t)
	holdPermit(t, name, 2, "")
	start := time.Now()
	code, stdout, stderr := runCLI(t, "run", "-n", "3", "--wait", "20s", "--nodes", nodesFlag(t), name, "--", "echo", "ran")
	if code != exitTempFail || stdout != "" || !strings.Contains(stderr, "in use with another limit than -n 3") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("run -n 3 on a -n 2 semaphore = %d, %q, %q; want %d and one line naming the mismatch", code, stdout, stderr, exitTempFail)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run -n 3 on a -n 2 semaphore took %v; want it to fail at once, not wait --wait 20s", d)
	}
	code, stdout, stderr = runCLI(t, "run", "-n", "2", "--wait", "0", "--nodes", nodesFlag(t), name, "--", "sh", "-c", `echo "$REDLOCK_LIMIT"`)
	if code != 0 || stdout != "2\n" {
		t.Errorf("run -n 2 with 1 of 2 permits held = %d, %q, %q; want 0 and the command run", code, stdout, stderr)
	}
}

// TestSemaphoreUsage: a bad -n is bad usage, for run and status.
func TestSemaphoreUsage(t *testing.T) {
	nodes := "--nodes=redis://127.0.0.1:1"
	tests := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"run", nodes, "-n", "0", "job", "--", "true"}, "", "-n 0: want 1 to 1024"},
		{[]string{"run", nodes, "-n", "1025", "job", "--", "true"}, "", "-n 1025: want 1 to 1024"},
		{[]string{"run", nodes, "-n", "-2", "job", "--", "true"}, "", "-n -2: want 1 to 1024"},
		{[]string{"run", nodes, "-n", "two", "job", "--", "true"}, "", `invalid value "two" for flag -n`},
		{[]string{"run", nodes, "job", "--", "true"}, "x", "$REDLOCK_PERMITS: invalid value \"x\" for -n"},
		{[]string{"status", nodes, "-n", "0", "job"}, "", "-n 0: want 1 to 1024"},
		{[]string{"status", nodes, "-n", "2000", "job"}, "", "-n 2000: want 1 to 1024"},
	}
	for _, tt := range tests {
		t.Setenv("REDLOCK_PERMITS", tt.env)
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "usage: see 'redlock help "+tt.args[0]+"'") {
			t.Errorf("redlock %q ($REDLOCK_PERMITS %q) = %d, %q, %q; want %d, %q and a usage hint", tt.args, tt.env, code, stdout, stderr, exitUsage, tt.want)
		}
	}
}

// TestSemaphoreHelp: run's and status's help tell of -n, the command's
// variables and the exit codes.
func TestSemaphoreHelp(t *testing.T) {
	for cmd, wants := range map[string][]string{
		"run":    {"usage: redlock run [-n N]", "REDLOCK_SLOT", "REDLOCK_LIMIT", "another -n", "$REDLOCK_PERMITS", "\n  -n N\n"},
		"status": {"usage: redlock status [-n N]", "0 full", "1 a permit is free", "69", "$REDLOCK_PERMITS", "\n  -n N\n"},
	} {
		code, stdout, _ := runCLI(t, "help", cmd)
		for _, want := range wants {
			if code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("help %s = %d:\n%s\nwant it to contain %q", cmd, code, stdout, want)
			}
		}
	}
	if _, stdout, _ := runCLI(t, "help"); !strings.Contains(stdout, "-n N: at most N at once") {
		t.Errorf("help:\n%s\nwant run's -n", stdout)
	}
}

// TestSemaphoreStatusUnknown: with no node answering, status -n says
// unknown and exits 69.
func TestSemaphoreStatusUnknown(t *testing.T) {
	nodes := "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	code, stdout, stderr := runCLI(t, "status", "-n", "3", "--nodes", nodes, "nobody-answers")
	if code != exitUnavailable || strings.Contains(stdout, "free") || !strings.Contains(stdout, "held: unknown (0 of 3 nodes answered") ||
		!strings.Contains(stderr, "a semaphore needs 2") {
		t.Errorf("status -n 3 with no node up = %d:\n%s%s\nwant %d, unknown and never free", code, stdout, stderr, exitUnavailable)
	}
	code, stdout, _ = runCLI(t, "status", "-n", "3", "--json", "--nodes", nodes, "nobody-answers")
	var st permitsJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitUnavailable || st.State != "unknown" || st.Answered != 0 || len(st.Slots) != 3 {
		t.Errorf("status -n 3 --json with no node up = %d, %q (%v); want %d, unknown, 3 slots", code, stdout, err, exitUnavailable)
	}
}

// TestSemaphoreRunKillOnLoss: the command is stopped when its permit is
// lost, as when a lock is.
func TestSemaphoreRunKillOnLoss(t *testing.T) {
	name := lockName(t)
	marker := filepath.Join(t.TempDir(), "marker")
	p := startCLIEnv(t, []string{"M=" + marker}, "run", "-n", "2", "--nodes", nodesFlag(t), "--ttl", "3s", "--grace", "500ms", name, "--",
		"sh", "-c", `trap 'echo term >> "$M"; exit 3' TERM; echo "started $REDLOCK_SLOT" >> "$M"; sleep 30 & wait`)
	waitFile(t, marker, "started", p)
	b, _ := os.ReadFile(marker)
	slot := strings.Fields(string(b))[1]
	ctx := context.Background()
	for i := range 2 {
		keys, err := cluster(t).Client(i).Keys(ctx, "*{"+name+"}:permit:"+slot).Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("node %d: KEYS of slot %s = %v, %v; want the permit's key", i, slot, keys, err)
		}
		if err := cluster(t).Client(i).Del(ctx, keys[0]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code := p.wait(t); code != exitLost {
		t.Errorf("redlock = %d after the permit was lost; want %d; stderr:\n%s", code, exitLost, p.stderr.String())
	}
	want := fmt.Sprintf("permit %s of 2 of %q lost while the command ran", slot, name)
	if b, _ := os.ReadFile(marker); !strings.Contains(string(b), "term") || !strings.Contains(p.stderr.String(), want) {
		t.Errorf("marker %q, stderr %q; want the command's SIGTERM and %q", b, p.stderr.String(), want)
	}
}

// TestSemaphoreNewLimitAfterRelease: once every permit of -n 2 is released,
// status -n 3 and run -n 3 work at once. They exited 64 (in use with 2
// permits) and 75 (in use with another limit) for about the permits' TTL:
// the limit's record outlived them.
func TestSemaphoreNewLimitAfterRelease(t *testing.T) {
	name := lockName(t)
	for _, p := range []*redlock.Permit{holdPermit(t, name, 2, ""), holdPermit(t, name, 2, "")} {
		if err := p.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Release returns at a quorum; the other node's delete follows within
	// the node timeout.
	code, _, stderr := runCLI(t, "status", "-n", "3", "--nodes", nodesFlag(t), name)
	for deadline := time.Now().Add(2 * time.Second); code != exitFree && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		code, _, stderr = runCLI(t, "status", "-n", "3", "--nodes", nodesFlag(t), name)
	}
	if code != exitFree {
		t.Fatalf("status -n 3 after every -n 2 permit was released = %d, %q; want %d (a permit free)", code, stderr, exitFree)
	}
	if code, st := permitsStatusOf(t, name, 3); code != exitFree || st.Free != 3 {
		t.Errorf("status -n 3 --json after every -n 2 permit was released = %d, %+v; want %d and 3 free", code, st, exitFree)
	}
	code, stdout, stderr := runCLI(t, "run", "-n", "3", "--wait", "5s", "--nodes", nodesFlag(t), name, "--", "sh", "-c", `echo "$REDLOCK_LIMIT"`)
	if code != 0 || stdout != "3\n" {
		t.Errorf("run -n 3 after every -n 2 permit was released = %d, %q, %q; want 0 and the command run", code, stdout, stderr)
	}
}
