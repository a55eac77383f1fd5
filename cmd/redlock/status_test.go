package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStatus(t *testing.T) {
	name := lockName(t)
	l := holdLock(t, name, time.Minute)
	code, stdout, stderr := runCLI(t, "status", "--nodes", nodesFlag(), name)
	if code != 0 {
		t.Fatalf("status = %d; want 0; stderr:\n%s", code, stderr)
	}
	tok := l.Token()[:8] + "…"
	fence := strconv.FormatUint(l.Fence(), 10)
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 6 && f[2] == "up" {
			rows++
			if f[3] != tok || f[5] != fence {
				t.Errorf("row %q: want holder %s and fence %s", line, tok, fence)
			}
			if d, err := time.ParseDuration(f[4]); err != nil || d <= 0 || d > time.Minute {
				t.Errorf("row %q: TTL %q; want a duration in (0, 1m]", line, f[4])
			}
		}
	}
	if rows != 3 {
		t.Errorf("status shows %d nodes up holding it; want 3:\n%s", rows, stdout)
	}
	if !strings.Contains(stdout, "held by quorum: yes (token "+tok+", 3/3 nodes") {
		t.Errorf("status output:\n%s\nwant \"held by quorum: yes (token %s, 3/3 nodes\"", stdout, tok)
	}

	// Two of three nodes lose the key: a minority holds it.
	deleteLockKeys(t, name, 2)
	_, stdout, _ = runCLI(t, "status", "--nodes", nodesFlag(), name)
	if !strings.Contains(stdout, "held by quorum: no (best: token "+tok+" on 1/3 nodes") {
		t.Errorf("status after deleting 2 keys:\n%s\nwant \"held by quorum: no\" naming the minority holder", stdout)
	}

	_, stdout, _ = runCLI(t, "status", "--nodes", nodesFlag(), name+"-never")
	if !strings.Contains(stdout, "held by quorum: no (free") || strings.Count(stdout, " free ") != 3 {
		t.Errorf("status of a never-used lock:\n%s\nwant free on every node", stdout)
	}
}

func TestStatusUnreachable(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	// One real node down of three: still a quorum answering.
	nodes := "redis://" + cluster.Addr(0) + ",redis://" + cluster.Addr(1) + ",redis://127.0.0.1:1"
	code, stdout, stderr := runCLI(t, "status", "--nodes", nodes, name)
	if code != 0 || !strings.Contains(stdout, "unreachable") || !strings.Contains(stdout, "held by quorum: yes") {
		t.Errorf("status with 1 of 3 unreachable = %d:\n%s%s\nwant 0, the node shown unreachable, held by quorum", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "status", "--nodes", "redis://127.0.0.1:1,redis://127.0.0.1:2,"+cluster.Addr(0), name)
	if code != exitUnavailable || !strings.Contains(stderr, "only 1 of 3 nodes answered") {
		t.Errorf("status with 2 of 3 unreachable = %d:\n%s%s\nwant %d and an error", code, stdout, stderr, exitUnavailable)
	}
}

// TestRunStatusWhileHeld looks at a lock held by `redlock run` with
// `redlock status`, and again after the command exited.
func TestRunStatusWhileHeld(t *testing.T) {
	name := lockName(t)
	marker := t.TempDir() + "/marker"
	p := startCLIEnv(t, []string{"M=" + marker}, "run", "--nodes", nodesFlag(), name, "--", "sh", "-c",
		`echo "$REDLOCK_TOKEN $REDLOCK_FENCE" > "$M"; echo started >> "$M"; read x < /dev/null; sleep 30 & wait`)
	waitFile(t, marker, "started", p)
	code, stdout, _ := execCLI(t, "status", "--nodes", nodesFlag(), name)
	b, _ := readFile(t, marker)
	f := strings.Fields(b)
	if code != 0 || len(f) < 2 || !strings.Contains(stdout, "held by quorum: yes (token "+f[0][:8]+"…") || !strings.Contains(stdout, "  "+f[1]+"\n") {
		t.Errorf("status = %d:\n%s\nwant held by the child's token %v and its fence", code, stdout, f)
	}
	if err := p.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	_, stdout, _ = execCLI(t, "status", "--nodes", nodesFlag(), name)
	if !strings.Contains(stdout, "held by quorum: no (free") {
		t.Errorf("status after the command exited:\n%s\nwant free", stdout)
	}
}

// A lock's key holds "<token>.<attempt>"; the attempts of one Acquire call
// that reached different nodes are one owner, and count as one quorum.
func TestStatusGroupsAttemptsOfOneCall(t *testing.T) {
	name := lockName(t)
	key := lockKey(t, name)
	for i, v := range []string{"tokenABCDEFGH.1", "tokenABCDEFGH.2", "tokenABCDEFGH.2"} {
		if err := cluster.Client(i).Set(context.Background(), key, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { deleteLockKeys(t, name, 3) })
	_, stdout, _ := runCLI(t, "status", "--nodes", nodesFlag(), name)
	if !strings.Contains(stdout, "held by quorum: yes (token tokenABC…, 3/3 nodes") {
		t.Errorf("status:\n%s\nwant one owner on 3/3 nodes whatever the attempt", stdout)
	}
}
