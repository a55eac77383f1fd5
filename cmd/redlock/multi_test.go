package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunMulti: run -m holds several names at once, the child gets every
// name's fence, and a held name keeps the whole set from running.
func TestRunMulti(t *testing.T) {
	a, b := lockName(t)+"-a", lockName(t)+"-b"
	code, stdout, stderr := runCLI(t, "run", "--nodes", nodesFlag(t), "-m", a, b, "--", "sh", "-c",
		`echo "$REDLOCK_NAMES $REDLOCK_FENCES $REDLOCK_FENCE_0 $REDLOCK_FENCE_1 $REDLOCK_FENCE"`)
	if code != 0 {
		t.Fatalf("run -m = %d; want 0; stderr:\n%s", code, stderr)
	}
	f := strings.Fields(stdout)
	if len(f) != 5 || f[0] != a+","+b {
		t.Fatalf("child printed %q; want NAMES FENCES FENCE_0 FENCE_1 FENCE, names %s,%s", stdout, a, b)
	}
	if want := a + "=" + f[2] + "," + b + "=" + f[3]; f[1] != want {
		t.Errorf("REDLOCK_FENCES = %q; want %q", f[1], want)
	}
	for _, s := range f[2:] {
		if n, err := strconv.ParseUint(s, 10, 64); err != nil || n == 0 {
			t.Errorf("fence %q; want a positive integer", s)
		}
	}

	holdLock(t, b, time.Minute)
	code, stdout, stderr = execCLI(t, "run", "--nodes", nodesFlag(t), "--wait", "0", "-m", b, a, "--", "echo", "ran")
	if code != exitTempFail || stdout != "" {
		t.Errorf("run -m with a held name = %d, %q; want %d and nothing run; stderr:\n%s", code, stdout, exitTempFail, stderr)
	}

	for _, args := range [][]string{{"-m", a, a}, {"-n", "2", "-m", b, a}} {
		if code, _, stderr := runCLI(t, append(append([]string{"run", "--nodes", nodesFlag(t)}, args...), "--", "true")...); code != exitUsage {
			t.Errorf("run %v = %d; want %d (usage); stderr:\n%s", args, code, exitUsage, stderr)
		}
	}
}
