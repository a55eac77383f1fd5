package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

func TestStatus(t *testing.T) {
	name := lockName(t)
	l := holdLock(t, name, time.Minute)
	code, stdout, stderr := runCLI(t, "status", "--nodes", nodesFlag(t), name)
	if code != 0 {
		t.Fatalf("status = %d; want 0; stderr:\n%s", code, stderr)
	}
	tok := l.Token()[:8] + "…"
	fence := strconv.FormatUint(l.Fence(), 10)
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[2] == "up" {
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
	_, stdout, _ = runCLI(t, "status", "--nodes", nodesFlag(t), name)
	if !strings.Contains(stdout, "held by quorum: no (best: token "+tok+" on 1/3 nodes") {
		t.Errorf("status after deleting 2 keys:\n%s\nwant \"held by quorum: no\" naming the minority holder", stdout)
	}

	_, stdout, _ = runCLI(t, "status", "--nodes", nodesFlag(t), name+"-never")
	if !strings.Contains(stdout, "held by quorum: no (free") || strings.Count(stdout, " free ") != 3 {
		t.Errorf("status of a never-used lock:\n%s\nwant free on every node", stdout)
	}
}

func TestStatusUnreachable(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	// One real node down of three: still a quorum answering.
	nodes := "redis://" + cluster(t).Addr(0) + ",redis://" + cluster(t).Addr(1) + ",redis://127.0.0.1:1"
	code, stdout, stderr := runCLI(t, "status", "--nodes", nodes, name)
	if code != 0 || !strings.Contains(stdout, "unreachable") || !strings.Contains(stdout, "held by quorum: yes") {
		t.Errorf("status with 1 of 3 unreachable = %d:\n%s%s\nwant 0, the node shown unreachable, held by quorum", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "status", "--nodes", "redis://127.0.0.1:1,redis://127.0.0.1:2,"+cluster(t).Addr(0), name)
	if code != exitUnavailable || !strings.Contains(stderr, "only 1 of 3 nodes answered") {
		t.Errorf("status with 2 of 3 unreachable = %d:\n%s%s\nwant %d and an error", code, stdout, stderr, exitUnavailable)
	}
}

// TestRunStatusWhileHeld looks at a lock held by `redlock run` with
// `redlock status`, and again after the command exited.
func TestRunStatusWhileHeld(t *testing.T) {
	name := lockName(t)
	marker := t.TempDir() + "/marker"
	p := startCLIEnv(t, []string{"M=" + marker}, "run", "--nodes", nodesFlag(t), name, "--", "sh", "-c",
		`echo "$REDLOCK_TOKEN $REDLOCK_FENCE" > "$M"; echo started >> "$M"; read x < /dev/null; sleep 30 & wait`)
	waitFile(t, marker, "started", p)
	code, stdout, _ := execCLI(t, "status", "--nodes", nodesFlag(t), name)
	b, _ := readFile(t, marker)
	f := strings.Fields(b)
	if code != 0 || len(f) < 2 || !strings.Contains(stdout, "held by quorum: yes (token "+f[0][:8]+"…") {
		t.Fatalf("status = %d:\n%s\nwant held by the child's token %v", code, stdout, f)
	}
	// Each node's row: its fence, and run's holder metadata (its host, its
	// pid, the command), on the plain lock.
	host, _ := os.Hostname()
	wantMeta := fmt.Sprintf("%q", fmt.Sprintf("host %s pid %d: sh -c ", host, p.cmd.Process.Pid))
	wantMeta = wantMeta[:len(wantMeta)-1]
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		if fs := strings.Fields(line); len(fs) > 7 && fs[2] == "up" && fs[5] == f[1] && strings.HasPrefix(strings.Join(fs[7:], " "), wantMeta) {
			rows++
		}
	}
	if rows != 3 {
		t.Errorf("status:\n%s\nwant 3 rows with fence %s and metadata starting %s", stdout, f[1], wantMeta)
	}
	_, st := statusJSONOf(t, name)
	for _, n := range st.Nodes {
		if n.Reentrant || !strings.HasPrefix(n.Metadata, fmt.Sprintf("host %s pid %d: sh -c echo", host, p.cmd.Process.Pid)) {
			t.Errorf("status --json node %d: %+v; want the plain lock with run's metadata", n.Node, n)
		}
	}
	if err := p.cmd.Process.Signal(sigterm); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	_, stdout, _ = execCLI(t, "status", "--nodes", nodesFlag(t), name)
	if !strings.Contains(stdout, "held by quorum: no (free") {
		t.Errorf("status after the command exited:\n%s\nwant free", stdout)
	}
	assertNoKey(t, lockKey(t, name)+":meta")
}

// A lock's key holds "<token>.<attempt>"; the attempts of one Acquire call
// that reached different nodes are one owner, and count as one quorum.
func TestStatusGroupsAttemptsOfOneCall(t *testing.T) {
	name := lockName(t)
	key := lockKey(t, name)
	for i, v := range []string{"tokenABCDEFGH.1", "tokenABCDEFGH.2", "tokenABCDEFGH.2"} {
		if err := cluster(t).Client(i).Set(context.Background(), key, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { deleteLockKeys(t, name, 3) })
	_, stdout, _ := runCLI(t, "status", "--nodes", nodesFlag(t), name)
	if !strings.Contains(stdout, "held by quorum: yes (token tokenABC…, 3/3 nodes") {
		t.Errorf("status:\n%s\nwant one owner on 3/3 nodes whatever the attempt", stdout)
	}
}

// statusJSONOf runs status --json on name and decodes its output.
func statusJSONOf(t *testing.T, name string, extra ...string) (int, statusJSON) {
	t.Helper()
	args := append([]string{"status", "--json", "--nodes", nodesFlag(t)}, extra...)
	code, stdout, stderr := runCLI(t, append(args, name)...)
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status --json = %d, output %q (stderr %q): not JSON: %v", code, stdout, stderr, err)
	}
	return code, st
}

func TestStatusJSONHeldFreePartly(t *testing.T) {
	name := lockName(t)
	c, err := redlock.New(cluster(t).Clients(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(context.Background(), name, time.Minute, &redlock.AcquireOptions{Reentrant: true, Metadata: "host-a:42"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	if _, err := l.Reenter(context.Background(), time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	// Reenter returns at a quorum; the last node's hold may land a moment later.
	code, st := statusJSONOf(t, name)
	for deadline := time.Now().Add(2 * time.Second); st.Nodes[0].Holds+st.Nodes[1].Holds+st.Nodes[2].Holds != 6 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		code, st = statusJSONOf(t, name)
	}
	if code != exitOK || st.State != "held" || st.Holder != l.Token() || st.HeldOn != 3 || st.Quorum != 2 || len(st.Nodes) != 3 {
		t.Errorf("status --json of a held lock = %d, %+v; want 0, held by %q on 3", code, st, l.Token())
	}
	for i, n := range st.Nodes {
		if !n.Reachable || !n.Held || n.Token != l.Token() || !n.Reentrant || n.Metadata != "host-a:42" || n.Holds != 2 ||
			n.TTLms <= 0 || n.TTLms > 60000 || n.Fence < l.Fence() {
			t.Errorf("node %d: %+v; want held by the full token with its metadata, 2 holds, TTL and fence", i, n)
		}
	}
	// Text output shows the holds and the metadata.
	_, stdout, _ := runCLI(t, "status", "--nodes", nodesFlag(t), name)
	if !strings.Contains(stdout, "HOLDS") || !strings.Contains(stdout, `"host-a:42"`) {
		t.Errorf("status of a re-entrant lock:\n%s\nwant its holds and metadata", stdout)
	}

	deleteLockKeys(t, name, 2) // a minority holds it
	code, st = statusJSONOf(t, name)
	if code != exitFree || st.State != "free" || st.HeldOn != 1 || st.Holder != l.Token() || st.Nodes[0].Held || !st.Nodes[2].Held {
		t.Errorf("status --json of a lock on 1 of 3 nodes = %d, %+v; want %d, free, the minority holder on node 2", code, st, exitFree)
	}
	deleteLockKeys(t, name, 3)
	code, st = statusJSONOf(t, name)
	if code != exitFree || st.State != "free" || st.HeldOn != 0 || st.Holder != "" {
		t.Errorf("status --json of a free lock = %d, %+v; want %d and free", code, st, exitFree)
	}
}

func TestStatusJSONUnknown(t *testing.T) {
	name := lockName(t)
	nodes := "redis://127.0.0.1:1,redis://127.0.0.1:2," + "redis://" + cluster(t).Addr(0)
	code, stdout, stderr := runCLI(t, "status", "--json", "--nodes", nodes, name)
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitUnavailable || st.State != "unknown" ||
		st.Nodes[0].Reachable || st.Nodes[0].Error == "" || !st.Nodes[2].Reachable {
		t.Errorf("status --json with 2 of 3 unreachable = %d, %s (%v), stderr %q; want %d, unknown, nodes 0 and 1 unreachable",
			code, stdout, err, stderr, exitUnavailable)
	}
}

// TestStatusQueue: status shows who waits, the head first, with how long
// each has waited, in the table and in --json (the built binary).
func TestStatusQueue(t *testing.T) {
	name := lockName(t)
	holder := holdLock(t, name, time.Minute)
	// Two `redlock run` processes wait for the lock, one after the other.
	var waiters []*proc
	for i := range 2 {
		waiters = append(waiters, startCLI(t, "run", "--no-metadata", "--nodes", nodesFlag(t), name, "--", "true"))
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, st := statusJSONOf(t, name)
			if st.Depth == i+1 && len(st.Waiters) == i+1 && st.Waiters[i].Nodes == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("status --json after 30s: %+v; want %d waiters on 3 nodes", st, i+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	code, stdout, stderr := execCLI(t, "status", "--nodes", nodesFlag(t), name)
	if code != exitOK || !strings.Contains(stdout, "queue: 2 waiting, the head first") {
		t.Fatalf("status = %d:\n%s%s\nwant held, and 2 waiting", code, stdout, stderr)
	}
	var rows [][]string
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) == 5 && (f[0] == "1" || f[0] == "2") && f[4] == "3/3" {
			rows = append(rows, f)
		} else if len(f) == 7 && f[2] == "up" && f[6] != "2" {
			t.Errorf("row %q: queue %s; want 2", line, f[6])
		}
	}
	if len(rows) != 2 {
		t.Fatalf("status:\n%s\nwant 2 waiter rows (#, token, client, waited, nodes 3/3)", stdout)
	}
	for _, r := range rows {
		if d, err := time.ParseDuration(r[3]); err != nil || d < 0 || d > time.Minute {
			t.Errorf("waiter row %v: waited %q; want a duration in [0, 1m]", r, r[3])
		}
	}
	code, stdout, _ = execCLI(t, "status", "--json", "--nodes", nodesFlag(t), name)
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitOK {
		t.Fatalf("status --json = %d, %q: %v", code, stdout, err)
	}
	if st.Depth != 2 || len(st.Waiters) != 2 || st.Head == nil || *st.Head != st.Waiters[0] || st.Answered != 3 {
		t.Fatalf("status --json: %+v; want depth 2, 2 waiters, the head the first, 3 answered", st)
	}
	if st.Waiters[0].Since.After(st.Waiters[1].Since) || !strings.HasPrefix(rows[0][1], st.Waiters[0].Token[:8]) || st.Waiters[0].AgeMs < st.Waiters[1].AgeMs {
		t.Errorf("waiters %+v, table rows %v; want the earlier first, in both", st.Waiters, rows)
	}
	for _, n := range st.Nodes {
		if n.Depth != 2 || len(n.Waiters) != 2 {
			t.Errorf("node %d: depth %d, waiters %+v; want 2", n.Node, n.Depth, n.Waiters)
		}
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range waiters {
		if code := p.wait(t); code != 0 {
			t.Errorf("waiting run = %d; want 0; stderr:\n%s", code, p.stderr.String())
		}
	}
}

// TestStatusNoNodeAnswers: with no node answering, status says the state
// is unknown (not free) and exits 69 (the built binary).
func TestStatusNoNodeAnswers(t *testing.T) {
	nodes := "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"
	code, stdout, stderr := execCLI(t, "status", "--nodes", nodes, "nobody-answers")
	if code != exitUnavailable || strings.Contains(stdout, "free") || !strings.Contains(stdout, "held by quorum: unknown (0 of 3 nodes answered") ||
		!strings.Contains(stdout, "queue: unknown") || !strings.Contains(stderr, "unknown") {
		t.Errorf("status with no node up = %d:\n%s%s\nwant %d, unknown and never free", code, stdout, stderr, exitUnavailable)
	}
	code, stdout, _ = execCLI(t, "status", "--json", "--nodes", nodes, "nobody-answers")
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitUnavailable || st.State != "unknown" || st.Answered != 0 {
		t.Errorf("status --json with no node up = %d, %q (%v); want %d, state unknown, answered 0", code, stdout, err, exitUnavailable)
	}
	if code, help, _ := execCLI(t, "help", "status"); code != 0 || !strings.Contains(help, "69 unknown") || !strings.Contains(help, "none at all") {
		t.Errorf("help status:\n%s\nwant exit 69 for unknown, with no node answering", help)
	}
}
