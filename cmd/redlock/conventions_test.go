package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of the command line's conventions that need no Redis: one name for
// the per-node timeout, yes-or-no variables, flock's command forms, and
// messages that read right for one node.

// unreachableNode is a node nobody listens on: a command that gets past its
// flags reports it (exit 69) instead of a usage error (64).
const unreachableNode = "redis://127.0.0.1:1"

// TestNodeTimeoutEverywhere: every command takes --node-timeout and
// $REDLOCK_NODE_TIMEOUT; status, leader and break also take --timeout and
// $REDLOCK_TIMEOUT, its old name, with the new name winning.
func TestNodeTimeoutEverywhere(t *testing.T) {
	t.Setenv(nodesEnv, "")
	for _, args := range [][]string{
		{"run", "--node-timeout", "300ms", "--nodes", unreachableNode, "job", "true"},
		{"elect", "--node-timeout", "300ms", "--nodes", unreachableNode, "job", "true"},
		{"status", "--node-timeout", "300ms", "--nodes", unreachableNode, "job"},
		{"leader", "--node-timeout", "300ms", "--nodes", unreachableNode, "job"},
		{"break", "--yes", "--node-timeout", "300ms", "--nodes", unreachableNode, "job"},
		{"status", "--timeout", "300ms", "--nodes", unreachableNode, "job"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code == exitUsage {
			t.Errorf("redlock %q = %d, %q; want the flag taken (the unreachable node reported)", args, code, stderr)
		}
	}
	for _, cmd := range []string{"run", "elect", "status", "leader", "break"} {
		var out strings.Builder
		helpCmd([]string{cmd}, &out, io.Discard)
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "--node-timeout $REDLOCK_NODE_TIMEOUT") || !strings.Contains(out.String(), "\n  --node-timeout duration\n") {
			t.Errorf("redlock help %s does not list --node-timeout and $REDLOCK_NODE_TIMEOUT", cmd)
		}
	}

	look := func(env map[string]string, args ...string) (time.Duration, int) {
		t.Helper()
		for _, v := range []string{"REDLOCK_NODE_TIMEOUT", "REDLOCK_TIMEOUT"} {
			t.Setenv(v, env[v])
		}
		fs, o := statusFlags(io.Discard)
		_, _, code := parseNameCmd("status", fs, append(args, "job"), &o.nodeTimeout, io.Discard, io.Discard)
		return o.nodeTimeout, code
	}
	for _, tt := range []struct {
		env  map[string]string
		args []string
		want time.Duration
	}{
		{nil, nil, time.Second},
		{map[string]string{"REDLOCK_NODE_TIMEOUT": "3s"}, nil, 3 * time.Second},
		{map[string]string{"REDLOCK_TIMEOUT": "2s"}, nil, 2 * time.Second},
		{map[string]string{"REDLOCK_NODE_TIMEOUT": "3s", "REDLOCK_TIMEOUT": "2s"}, nil, 3 * time.Second},
		{map[string]string{"REDLOCK_NODE_TIMEOUT": "3s"}, []string{"--timeout", "4s"}, 4 * time.Second},
		{map[string]string{"REDLOCK_TIMEOUT": "2s"}, []string{"--node-timeout", "5s"}, 5 * time.Second},
	} {
		if got, code := look(tt.env, tt.args...); got != tt.want || code != exitOK {
			t.Errorf("status %q with %v: node timeout %v (exit %d); want %v", tt.args, tt.env, got, code, tt.want)
		}
	}
	if _, code := look(nil, "--timeout", "1s", "--node-timeout", "2s"); code != exitUsage {
		t.Errorf("status with --timeout and --node-timeout = %d; want %d", code, exitUsage)
	}
}

// TestBoolEnvSpellings: a yes-or-no variable takes the usual spellings,
// and one it refuses is a usage error that says which it takes (as the
// help does).
func TestBoolEnvSpellings(t *testing.T) {
	t.Setenv(nodesEnv, "")
	for _, v := range []string{"yes", "Y", "on", "1", "TRUE"} {
		t.Setenv("REDLOCK_JSON", v)
		code, stdout, stderr := runCLI(t, "status", "--nodes", unreachableNode, "job")
		var j map[string]any
		if code != exitUnavailable || json.Unmarshal([]byte(stdout), &j) != nil {
			t.Errorf("REDLOCK_JSON=%s status = %d, stdout %q, stderr %q; want %d and JSON", v, code, stdout, stderr, exitUnavailable)
		}
	}
	t.Setenv("REDLOCK_JSON", "maybe")
	const words = "1, true, yes or on; or 0, false, no or off"
	if code, _, stderr := runCLI(t, "status", "--nodes", unreachableNode, "job"); code != exitUsage || !strings.Contains(stderr, `$REDLOCK_JSON: invalid value "maybe" for --json: want `+words) {
		t.Errorf("REDLOCK_JSON=maybe status = %d, %q; want %d naming the values taken", code, stderr, exitUsage)
	}
	for _, cmd := range []string{"", "run", "status", "leader", "break"} {
		var out strings.Builder
		helpCmd(strings.Fields(cmd), &out, io.Discard)
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), words) {
			t.Errorf("redlock help %s does not say what a yes-or-no variable takes (%s)", cmd, words)
		}
	}
}

// TestLeaderErrorOnePrefix: leader's error says "redlock:" once, at its
// start, however many node errors it joins.
func TestLeaderErrorOnePrefix(t *testing.T) {
	t.Setenv(nodesEnv, "")
	code, _, stderr := runCLI(t, "leader", "--nodes", unreachableNode, "job")
	if n := strings.Count(stderr, "redlock:"); code != exitUnavailable || n != 1 || !strings.HasPrefix(stderr, "redlock: ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("leader with its node down = %d, %q; want %d and one line with one \"redlock:\", at its start", code, stderr, exitUnavailable)
	}
}

// TestStatusOneNode: status on one node says "1 node", not "1 nodes".
func TestStatusOneNode(t *testing.T) {
	t.Setenv(nodesEnv, "")
	_, stdout, stderr := runCLI(t, "status", "--nodes", unreachableNode, "job")
	if !strings.Contains(stdout, `lock "job" on 1 node (quorum 1)`) || strings.Contains(stdout+stderr, "1 nodes") {
		t.Errorf("status on one node: stdout %q, stderr %q; want \"on 1 node\" and no \"1 nodes\"", stdout, stderr)
	}
}

// TestRunCommandForms: run (and elect) take NAME COMMAND ARGS... without
// "--", as flock, consul lock and etcdctl lock do; -c 'SHELL COMMAND' as
// flock -c; the "--" form as before; and refuse what could be read two
// ways.
func TestRunCommandForms(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		name    string
		command []string
		ttl     time.Duration
	}{
		{[]string{"job", "echo", "hi"}, "job", []string{"echo", "hi"}, 30 * time.Second},
		{[]string{"job", "ls", "-l", "--ttl", "1s"}, "job", []string{"ls", "-l", "--ttl", "1s"}, 30 * time.Second},
		{[]string{"--ttl", "5s", "job", "git", "diff", "--", "f.go"}, "job", []string{"git", "diff", "--", "f.go"}, 5 * time.Second},
		{[]string{"--ttl", "5s", "job", "--", "echo", "hi"}, "job", []string{"echo", "hi"}, 5 * time.Second},
		{[]string{"job", "--ttl", "5s", "--", "echo"}, "job", []string{"echo"}, 5 * time.Second},
		{[]string{"-c", "make && make install", "job"}, "job", []string{"/bin/sh", "-c", "make && make install"}, 30 * time.Second},
		{[]string{"job", "-c", "echo $REDLOCK_FENCE", "--ttl=5s"}, "job", []string{"/bin/sh", "-c", "echo $REDLOCK_FENCE"}, 5 * time.Second},
	} {
		o, name, command, err := parseRun(tt.args, io.Discard)
		if err != nil || name != tt.name || !slices.Equal(command, tt.command) || o.ttl != tt.ttl {
			var ttl time.Duration
			if o != nil {
				ttl = o.ttl
			}
			t.Errorf("run %q = %q, %q, ttl %v, %v; want %q, %q, ttl %v", tt.args, name, command, ttl, err, tt.name, tt.command, tt.ttl)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"job", "-v", "echo"}, `"-v" after NAME "job": is it redlock's flag or the command's?`},
		{[]string{"job"}, `missing COMMAND after NAME "job"`},
		{[]string{"job", "-c", "true", "--", "echo"}, "both -c and a COMMAND"},
		{[]string{"-c", " ", "job"}, "-c with an empty command"},
		{[]string{"--ttl", "5s"}, "missing lock NAME"},
	} {
		if _, _, _, err := parseRun(tt.args, io.Discard); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run %q = %v; want an error saying %q", tt.args, err, tt.want)
		}
	}
	t.Setenv("REDLOCK_C", "rm -rf /tmp/nothing")
	if _, _, command, err := parseRun([]string{"job", "true"}, io.Discard); err != nil || !slices.Equal(command, []string{"true"}) {
		t.Errorf("run job true with $REDLOCK_C set = %q, %v; want [true]: -c has no variable", command, err)
	}
	if _, name, command, err := parseElect([]string{"job", "./serve", "-p", "80"}, io.Discard); err != nil || name != "job" || !slices.Equal(command, []string{"./serve", "-p", "80"}) {
		t.Errorf("elect job ./serve -p 80 = %q, %q, %v; want job, [./serve -p 80]", name, command, err)
	}
}
