package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// TestElectionCLI: elect runs the command while leading, with the term as
// REDLOCK_TERM and REDLOCK_FENCE; leader shows the leader, or none.
func TestElectionCLI(t *testing.T) {
	name := lockName(t)
	code, stdout, stderr := runCLI(t, "leader", "--nodes", nodesFlag(t), name)
	if code != exitFree || !strings.Contains(stdout, "no leader") {
		t.Errorf("leader before any election = %d, %q, %q; want %d and \"no leader\"", code, stdout, stderr, exitFree)
	}
	code, stdout, stderr = runCLI(t, "elect", "--nodes", nodesFlag(t), "--value", "me:1", name, "--",
		"sh", "-c", `echo "$REDLOCK_TERM $REDLOCK_FENCE $REDLOCK_NAME"`)
	f := strings.Fields(stdout)
	if code != exitOK || len(f) != 3 || f[0] != f[1] || f[0] == "0" || f[2] != name {
		t.Fatalf("elect = %d, stdout %q, stderr %q; want 0 and \"TERM TERM %s\" with TERM > 0", code, stdout, stderr, name)
	}

	// Someone leads: leader shows its value and term.
	ld := lead(t, name, "10.0.0.9:80")
	if term, _ := strconv.ParseUint(f[0], 10, 64); ld.Term() <= term {
		t.Errorf("term after elect's = %d; want > %d", ld.Term(), term)
	}
	code, stdout, stderr = runCLI(t, "leader", "--json", "--nodes", nodesFlag(t), name)
	var j jsonLeader
	if err := json.Unmarshal([]byte(stdout), &j); code != exitOK || err != nil || !j.Held || j.Value != "10.0.0.9:80" || j.Term != ld.Term() || j.RemainingMS <= 0 {
		t.Errorf("leader --json = %d, %q (%v), stderr %q; want 0, held by 10.0.0.9:80 at term %d", code, stdout, err, stderr, ld.Term())
	}
	code, stdout, _ = runCLI(t, "leader", "--nodes", nodesFlag(t), name)
	if want := "leader of \"" + name + "\": 10.0.0.9:80 (term " + strconv.FormatUint(ld.Term(), 10); code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("leader = %d, %q; want 0 and %q", code, stdout, want)
	}

	// elect waits while another leads: --wait runs out.
	code, _, stderr = runCLI(t, "elect", "--wait", "300ms", "--nodes", nodesFlag(t), name, "--", "true")
	if code != exitTempFail || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("elect while another leads = %d, stderr %q; want %d", code, stderr, exitTempFail)
	}
}

// TestElectionCLIUsage: elect's and leader's bad command lines.
func TestElectionCLIUsage(t *testing.T) {
	for _, args := range [][]string{
		{"elect", "--nodes", "redis://127.0.0.1:1", "n"},
		{"elect", "--nodes", "redis://127.0.0.1:1", "--", "true"},
		{"elect", "--nodes", "redis://127.0.0.1:1", "--value", "", "n", "--", "true"},
		{"elect", "--nodes", "redis://127.0.0.1:1", "n", "--ttl", "5s", "true"},
		{"leader", "--nodes", "redis://127.0.0.1:1"},
		{"leader", "--nodes", "redis://127.0.0.1:1", "a", "b"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, "usage: see 'redlock help "+args[0]+"'") {
			t.Errorf("redlock %q = %d, stderr %q; want %d with a usage hint", args, code, stderr, exitUsage)
		}
	}
	// No node answers: unknown.
	if code, _, stderr := runCLI(t, "leader", "--nodes", "redis://127.0.0.1:1", "n"); code != exitUnavailable {
		t.Errorf("leader with no node up = %d, stderr %q; want %d", code, stderr, exitUnavailable)
	}
}

// lead makes another candidate lead election name with value, on the
// shared cluster, until the test ends.
func lead(t testing.TB, name, value string) *redlock.Leadership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ld, err := sharedClient(t).Campaign(ctx, name, time.Minute, value)
	if err != nil {
		t.Fatalf("Campaign(%q) = %v; want leadership", name, err)
	}
	t.Cleanup(func() { _ = ld.Resign(context.Background()) })
	return ld
}
