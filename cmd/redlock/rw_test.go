package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// TestReadWriteCLI: run --shared runs beside another reader and not beside
// a writer; a plain run waits for the readers; status shows the readers.
func TestReadWriteCLI(t *testing.T) {
	name := lockName(t)
	c := sharedClient(t)
	r, err := c.AcquireShared(t.Context(), name, time.Minute, &redlock.AcquireOptions{Metadata: "nightly export"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release(context.Background())
	if code, _, stderr := runCLI(t, "run", "--nodes", nodesFlag(t), "--shared", "--wait", "0", name, "--", "true"); code != 0 {
		t.Errorf("run --shared --wait 0 beside a reader = %d; want 0; stderr:\n%s", code, stderr)
	}
	if code, _, _ := runCLI(t, "run", "--nodes", nodesFlag(t), "--wait", "0", name, "--", "true"); code != exitTempFail {
		t.Errorf("run --wait 0 (a writer) beside a reader = %d; want %d", code, exitTempFail)
	}
	code, stdout, stderr := runCLI(t, "status", "--nodes", nodesFlag(t), name)
	if code != 0 || !strings.Contains(stdout, "held by quorum: yes (1 readers, 3/3 nodes)") ||
		!strings.Contains(stdout, "readers: 1") || !strings.Contains(stdout, r.Token()[:8]) || !strings.Contains(stdout, `"nightly export"`) {
		t.Errorf("status with a reader = %d:\n%s%s\nwant held by 1 reader, listed", code, stdout, stderr)
	}
	_, stdout, _ = runCLI(t, "status", "--json", "--nodes", nodesFlag(t), name)
	var st statusJSON
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || !st.Shared || len(st.Readers) != 1 || st.Readers[0].Token != r.Token() {
		t.Errorf("status --json with a reader = %s (%v); want shared, the reader listed", stdout, err)
	}
	for _, args := range [][]string{{"--shared", "-n", "2"}} {
		argv := append(append([]string{"run", "--nodes", nodesFlag(t)}, args...), name, "--", "true")
		if code, _, _ := runCLI(t, argv...); code != exitUsage {
			t.Errorf("run %v = %d; want %d (usage)", args, code, exitUsage)
		}
	}
	if err := r.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "run", "--nodes", nodesFlag(t), "--wait", "0", name, "--", "true"); code != 0 {
		t.Errorf("run --wait 0 after the reader released = %d; want 0; stderr:\n%s", code, stderr)
	}
}
