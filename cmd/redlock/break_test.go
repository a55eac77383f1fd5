package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

func TestBreakNeedsYes(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	t.Setenv("REDLOCK_YES", "true") // left over in a shell: must not count
	code, stdout, stderr := runCLI(t, "break", "--nodes", nodesFlag(t), name)
	if code != exitUsage || !strings.Contains(stderr, "without --yes") || stdout != "" {
		t.Errorf("break without --yes = %d, %q, %q; want %d and a message asking for --yes", code, stdout, stderr, exitUsage)
	}
	if n := lockKeyCount(t, name); n != 3 {
		t.Errorf("%d nodes hold the lock after break without --yes; want 3 (untouched)", n)
	}
}

func TestBreak(t *testing.T) {
	name := lockName(t)
	l := holdLock(t, name, time.Minute)
	code, stdout, stderr := runCLI(t, "break", "--yes", "--nodes", nodesFlag(t), name)
	if code != exitOK || strings.Count(stdout, "lock of token "+l.Token()) != 3 || !strings.Contains(stdout, "deleted on 3 of 3 nodes") {
		t.Errorf("break --yes = %d:\n%s%s\nwant 0, the full token deleted on 3 nodes", code, stdout, stderr)
	}
	if n := lockKeyCount(t, name); n != 0 {
		t.Errorf("%d nodes still hold the lock after break", n)
	}
	if err := l.Extend(context.Background(), time.Minute); !errors.Is(err, redlock.ErrLost) {
		t.Errorf("the broken holder's Extend = %v; want ErrLost", err)
	}
	code, stdout, _ = runCLI(t, "break", "--yes", "--nodes", nodesFlag(t), name)
	if code != exitOK || strings.Count(stdout, "nothing (free)") != 3 {
		t.Errorf("break of a free lock = %d:\n%s\nwant 0, nothing deleted", code, stdout)
	}
	// A node down: its key stays, and break says so.
	holdLock(t, name, time.Minute)
	code, stdout, stderr = runCLI(t, "break", "--yes", "--nodes", nodesFlag(t)+",redis://127.0.0.1:1", name)
	if code != exitFailure || !strings.Contains(stdout, "failed:") || !strings.Contains(stderr, "some nodes failed") {
		t.Errorf("break with a node down = %d:\n%s%s\nwant %d naming the failed node", code, stdout, stderr, exitFailure)
	}
}

func TestBreakHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "help", "break")
	if code != exitOK || !strings.Contains(stdout, "usage: redlock break --yes") || !strings.Contains(stdout, "dangerous") {
		t.Errorf("help break = %d:\n%s\nwant the usage, saying it is dangerous", code, stdout)
	}
	code, stdout, _ = runCLI(t, "help")
	if code != exitOK || !strings.Contains(stdout, "  break --yes NAME  ") {
		t.Errorf("help = %d:\n%s\nwant break in the command list", code, stdout)
	}
}

// TestBreakJSON: break --json says what it deleted on each node, with the
// holder's metadata, and leaves no key behind (the built binary).
func TestBreakJSON(t *testing.T) {
	name := lockName(t)
	c, err := redlock.New(cluster(t).Clients(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(context.Background(), name, time.Minute, &redlock.AcquireOptions{Metadata: "job 42"})
	if err != nil {
		t.Fatal(err)
	}
	waitKeys(t, name, 3)
	code, stdout, stderr := execCLI(t, "break", "--yes", "--json", "--nodes", nodesFlag(t), name)
	var got breakJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitOK {
		t.Fatalf("break --json = %d, %q (%v); stderr %s", code, stdout, err, stderr)
	}
	if got.Name != name || got.Key != lockKey(t, name) || got.Deleted != 3 || len(got.Nodes) != 3 {
		t.Errorf("break --json = %+v; want %s deleted on 3 nodes", got, name)
	}
	for _, n := range got.Nodes {
		if !n.Deleted || n.Token != l.Token() || n.Metadata != "job 42" || n.Reentrant || n.Error != "" || n.Addr == "" {
			t.Errorf("node %d: %+v; want the plain lock of %s with metadata \"job 42\" deleted", n.Node, n, l.Token())
		}
	}
	assertNoKey(t, lockKey(t, name))
	assertNoKey(t, lockKey(t, name)+":meta")
	code, stdout, _ = execCLI(t, "break", "--yes", "--json", "--nodes", nodesFlag(t), name)
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitOK || got.Deleted != 0 || got.Nodes[0].Deleted {
		t.Errorf("break --json of a free lock = %d, %q; want nothing deleted", code, stdout)
	}
}

// waitKeys waits until n nodes hold name's lock key.
func waitKeys(t *testing.T, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for lockKeyCount(t, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes hold %s; want %d", lockKeyCount(t, name), name, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
