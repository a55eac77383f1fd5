package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func TestRunUsageErrors(t *testing.T) {
	t.Setenv(nodesEnv, "")
	nodes := "--nodes=" + nodesFlag(t)
	tests := []struct {
		name string
		args []string
		want string // in the one-line error
		code int
	}{
		{"no command", nil, "usage: redlock COMMAND", exitUsage},
		{"unknown command", []string{"lock"}, `unknown command "lock"`, exitUsage},
		{"missing name", []string{"run", nodes}, "missing lock NAME", exitUsage},
		{"flag after name without dashdash", []string{"run", nodes, "job", "-v", "true"}, `"-v" after NAME "job": is it redlock's flag or the command's?`, exitUsage},
		{"missing command", []string{"run", nodes, "job", "--"}, `missing COMMAND after NAME "job"`, exitUsage},
		{"missing command after flags", []string{"run", nodes, "job", "--ttl", "5s"}, `missing COMMAND after NAME "job"`, exitUsage},
		{"shell and command", []string{"run", nodes, "-c", "true", "job", "true"}, "both -c and a COMMAND", exitUsage},
		{"timeout is not wait", []string{"run", nodes, "--timeout", "5s", "job", "true"}, "--wait is how long to wait for the lock", exitUsage},
		{"bad ttl", []string{"run", nodes, "--ttl", "soon", "job", "--", "true"}, `invalid value "soon" for flag --ttl`, exitUsage},
		{"zero ttl", []string{"run", nodes, "--ttl", "0", "job", "--", "true"}, "--ttl 0s: want a positive duration", exitUsage},
		{"negative wait", []string{"run", nodes, "--wait", "-1s", "job", "--", "true"}, `invalid value "-1s" for flag --wait`, exitUsage},
		{"negative grace", []string{"run", nodes, "--grace", "-1s", "job", "--", "true"}, "--grace -1s", exitUsage},
		{"unknown flag", []string{"run", nodes, "--tll", "1s", "job", "--", "true"}, "flag provided but not defined: --tll", exitUsage},
		{"unknown status flag", []string{"status", nodes, "--jsn", "job"}, "flag provided but not defined: --jsn", exitUsage},
		{"short flag value", []string{"run", nodes, "-v=maybe", "job", "--", "true"}, `invalid boolean value "maybe" for -v: want 1, true, yes or on; or 0, false, no or off`, exitUsage},
		{"no nodes", []string{"run", "job", "--", "true"}, "no nodes: give --nodes", exitUsage},
		{"bad node url", []string{"run", "--nodes", "redis://u:secret@[::1", "job", "--", "true"}, "node 0", exitUsage},
		{"bad db", []string{"run", "--nodes", "redis://127.0.0.1:6379/x", "job", "--", "true"}, "node 0", exitUsage},
		{"ttl below drift", []string{"run", nodes, "--ttl", "1ms", "job", "--", "true"}, "redlock: ", exitUsage},
		{"unreachable", []string{"run", "--nodes", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "job", "--", "true"}, "only 0 of 3 nodes reachable", exitUnavailable},
		{"status no name", []string{"status", nodes}, "missing lock NAME", exitUsage},
		{"status two names", []string{"status", nodes, "a", "b"}, `unexpected argument "b"`, exitUsage},
		{"status no nodes", []string{"status", "job"}, "no nodes", exitUsage},
		{"help unknown", []string{"help", "frob"}, `no help for "frob"`, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("run(%q) = %d; want %d; stderr:\n%s", tt.args, code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("run(%q) stderr = %q; want it to contain %q", tt.args, stderr, tt.want)
			}
			first, _, _ := strings.Cut(stderr, "\n")
			if !strings.HasPrefix(first, "redlock: ") && !strings.HasPrefix(first, "usage: ") {
				t.Errorf("run(%q) stderr first line = %q; want it to start with \"redlock: \"", tt.args, first)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("run(%q) stderr has a stack trace:\n%s", tt.args, stderr)
			}
			if tt.code == exitUsage && len(tt.args) > 0 && !strings.Contains(stderr, "redlock help") {
				t.Errorf("run(%q) stderr = %q; want a usage hint naming 'redlock help'", tt.args, stderr)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; tt.code != exitUsage && lines != 1 {
				t.Errorf("run(%q) stderr has %d lines; want 1:\n%s", tt.args, lines, stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"run", "status"} {
		code, stdout, _ := runCLI(t, "help", cmd)
		if code != 0 || !strings.Contains(stdout, "usage: redlock "+cmd) || !strings.Contains(stdout, "-nodes") {
			t.Errorf("help %s = %d, %q; want 0 and the usage with its flags", cmd, code, stdout)
		}
	}
	_, stdout, _ := runCLI(t, "help", "run")
	for _, code := range []string{"64", "69", "75", "76", "REDLOCK_FENCE", "REDLOCK_SLOT", "REDLOCK_LIMIT"} {
		if !strings.Contains(stdout, code) {
			t.Errorf("help run does not mention %s:\n%s", code, stdout)
		}
	}
	if code, stdout, _ := runCLI(t, "run", "-h"); code != 0 || !strings.Contains(stdout, "usage: redlock run") {
		t.Errorf("run -h = %d, %q; want 0 and the usage", code, stdout)
	}
}

func TestRunExitCode(t *testing.T) {
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"exit 75", 75},
		{"kill -KILL $$", 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			code, _, stderr := execCLI(t, "run", "--nodes", nodesFlag(t), lockName(t), "--", "sh", "-c", tt.script)
			if code != tt.want {
				t.Errorf("redlock run -- sh -c %q = %d; want %d; stderr:\n%s", tt.script, code, tt.want, stderr)
			}
			if n := lockKeyCount(t, lockName(t)); n != 0 {
				t.Errorf("lock key on %d nodes after the command exited; want 0 (released)", n)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		code, _, stderr := execCLI(t, "run", "--nodes", nodesFlag(t), lockName(t), "--", "no-such-command-redlock")
		if code != exitNotFound || !strings.Contains(stderr, "redlock: cannot run") {
			t.Errorf("run -- no-such-command = %d, %q; want %d and a clear error", code, stderr, exitNotFound)
		}
		if n := lockKeyCount(t, lockName(t)); n != 0 {
			t.Errorf("lock key on %d nodes; want 0 (released)", n)
		}
	})
}

func TestRunEnv(t *testing.T) {
	name := lockName(t)
	var fences []uint64
	var tokens []string
	for range 2 {
		// In-process: the environment comes through run itself.
		code, stdout, stderr := runCLI(t, "run", "--nodes", nodesFlag(t), name, "--", "sh", "-c", `echo "$REDLOCK_NAME $REDLOCK_TOKEN $REDLOCK_FENCE"`)
		if code != 0 {
			t.Fatalf("run = %d; want 0; stderr:\n%s", code, stderr)
		}
		f := strings.Fields(stdout)
		if len(f) != 3 {
			t.Fatalf("child printed %q; want NAME TOKEN FENCE", stdout)
		}
		if f[0] != name {
			t.Errorf("REDLOCK_NAME = %q; want %q", f[0], name)
		}
		if len(f[1]) < 16 {
			t.Errorf("REDLOCK_TOKEN = %q; want at least 16 characters", f[1])
		}
		fence, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil || fence == 0 {
			t.Errorf("REDLOCK_FENCE = %q; want a positive integer", f[2])
		}
		fences = append(fences, fence)
		tokens = append(tokens, f[1])
	}
	if fences[1] <= fences[0] {
		t.Errorf("fences of two runs = %v; want strictly increasing", fences)
	}
	if tokens[0] == tokens[1] {
		t.Errorf("tokens of two runs are both %q; want a new token per acquisition", tokens[0])
	}

	code, stdout, _ := execCLI(t, "run", "--nodes", nodesFlag(t), "--no-fence", name+"-nofence", "--", "sh", "-c", `echo "$REDLOCK_FENCE"`)
	if code != 0 || strings.TrimSpace(stdout) != "0" {
		t.Errorf("run --no-fence: exit %d, REDLOCK_FENCE = %q; want 0 and \"0\"", code, stdout)
	}
}

func TestRunNodesFromEnv(t *testing.T) {
	p := startCLIEnv(t, []string{nodesEnv + "=" + nodesFlag(t)}, "run", lockName(t), "--", "sh", "-c", "exit 3")
	if code := p.wait(t); code != 3 {
		t.Errorf("run with $REDLOCK_NODES = %d; want 3; stderr:\n%s", code, p.stderr.String())
	}
}

func TestRunHeldElsewhere(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	for _, wait := range []string{"0", "300ms"} {
		t.Run("wait="+wait, func(t *testing.T) {
			code, stdout, stderr := execCLI(t, "run", "--nodes", nodesFlag(t), "--wait", wait, name, "--", "echo", "ran")
			if code != exitTempFail {
				t.Errorf("run --wait %s on a held lock = %d; want %d; stderr:\n%s", wait, code, exitTempFail, stderr)
			}
			if stdout != "" {
				t.Errorf("the command ran (stdout %q) although the lock was held", stdout)
			}
			if !strings.HasPrefix(stderr, "redlock: ") || !strings.Contains(stderr, "not acquired") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr = %q; want one line saying the lock was not acquired", stderr)
			}
		})
	}
}

func TestRunMinorityDown(t *testing.T) {
	// Two real nodes and one that does not answer: a quorum of 2 is still
	// reachable, so the command runs, with a warning.
	nodes := "redis://" + cluster(t).Addr(0) + ",redis://" + cluster(t).Addr(1) + ",redis://127.0.0.1:1"
	code, stdout, stderr := execCLI(t, "run", "--nodes", nodes, "--wait", "5s", lockName(t), "--", "echo", "ran")
	if code != 0 || stdout != "ran\n" {
		t.Errorf("run with 1 of 3 nodes down = %d, %q; want 0 and the command's output; stderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: 1 of 3 nodes unreachable") || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("stderr = %q; want a warning naming the unreachable node", stderr)
	}
}

func TestRunMutualExclusion(t *testing.T) {
	name := lockName(t)
	log := filepath.Join(t.TempDir(), "log")
	const procs = 3
	var ps []*proc
	for i := range procs {
		script := `echo "start $0" >> "$LOG"; sleep 0.2; echo "end $0" >> "$LOG"`
		ps = append(ps, startCLIEnv(t, []string{"LOG=" + log},
			"run", "--nodes", nodesFlag(t), "--ttl", "5s", name, "--", "sh", "-c", script, strconv.Itoa(i)))
	}
	for i, p := range ps {
		if code := p.wait(t); code != 0 {
			t.Errorf("redlock %d = %d; want 0; stderr:\n%s", i, code, p.stderr.String())
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2*procs {
		t.Fatalf("log has %d lines; want %d:\n%s", len(lines), 2*procs, b)
	}
	for i := 0; i < len(lines); i += 2 {
		s, e := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if s[0] != "start" || e[0] != "end" || s[1] != e[1] {
			t.Fatalf("critical sections overlap; log:\n%s", b)
		}
	}
}

func TestRunKillOnLoss(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string // in the marker file
		stderr string
	}{
		{"child stops on SIGTERM", `trap 'echo term >> "$M"; exit 3' TERM; echo started >> "$M"; sleep 30 & wait`, "term", "sending SIGTERM"},
		{"child ignores SIGTERM", `trap '' TERM; echo started >> "$M"; sleep 30; echo survived >> "$M"`, "started", "sending SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := lockName(t)
			marker := filepath.Join(t.TempDir(), "marker")
			p := startCLIEnv(t, []string{"M=" + marker}, "run", "--nodes", nodesFlag(t), "--ttl", "3s", "--grace", "500ms", name, "--", "sh", "-c", tt.script)
			waitFile(t, marker, "started", p)
			deleteLockKeys(t, name, 2)
			code := p.wait(t)
			t.Logf("redlock stderr:\n%s", p.stderr.String())
			if code != exitLost {
				t.Errorf("redlock = %d after the lock was lost; want %d; stderr:\n%s", code, exitLost, p.stderr.String())
			}
			b, _ := os.ReadFile(marker)
			if !strings.Contains(string(b), tt.want) || strings.Contains(string(b), "survived") {
				t.Errorf("marker = %q; want it to contain %q and not \"survived\"", b, tt.want)
			}
			if !strings.Contains(p.stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q; want it to contain %q", p.stderr.String(), tt.stderr)
			}
		})
	}
}

func TestRunForwardsSignals(t *testing.T) {
	name := lockName(t)
	marker := filepath.Join(t.TempDir(), "marker")
	script := `trap 'echo usr1 >> "$M"' USR1; trap 'echo term >> "$M"; exit 5' TERM; echo started >> "$M"; while :; do sleep 0.05; done`
	p := startCLIEnv(t, []string{"M=" + marker}, "run", "--nodes", nodesFlag(t), name, "--", "sh", "-c", script)
	waitFile(t, marker, "started", p)
	if n := lockKeyCount(t, name); n != 3 {
		t.Fatalf("lock key on %d nodes while the command runs; want 3", n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFile(t, marker, "usr1", p)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 5 {
		t.Errorf("redlock = %d after SIGTERM; want the command's 5; stderr:\n%s", code, p.stderr.String())
	}
	b, _ := os.ReadFile(marker)
	if got := strings.Count(string(b), "term"); got != 1 {
		t.Errorf("marker = %q; want exactly one \"term\" (the forwarded SIGTERM, delivered once)", b)
	}
	if n := lockKeyCount(t, name); n != 0 {
		t.Errorf("lock key on %d nodes after the command exited; want 0 (released)", n)
	}
}

func TestRunSignalWhileWaiting(t *testing.T) {
	name := lockName(t)
	holdLock(t, name, time.Minute)
	p := startCLI(t, "run", "--nodes", nodesFlag(t), "-v", name, "--", "echo", "ran")
	waitStderr(t, p, "waiting for lock")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 128+int(syscall.SIGTERM) {
		t.Errorf("redlock = %d after SIGTERM while waiting; want %d; stderr:\n%s", code, 128+int(syscall.SIGTERM), p.stderr.String())
	}
	if p.stdout.String() != "" {
		t.Errorf("the command ran (stdout %q); want nothing run", p.stdout.String())
	}
}

func TestRunACLUser(t *testing.T) {
	ctx := t.Context()
	for i, c := range cluster(t).Clients() {
		if err := c.Do(ctx, "ACL", "SETUSER", "cli-test", "on", ">s3cret-pw", "~*", "&*", "+@all").Err(); err != nil {
			t.Fatalf("node %d: ACL SETUSER: %v", i, err)
		}
	}
	urls := func(pass string) string {
		var us []string
		for _, a := range cluster(t).Addrs() {
			us = append(us, "redis://cli-test:"+pass+"@"+a)
		}
		return strings.Join(us, ",")
	}
	code, stdout, stderr := execCLI(t, "run", "--nodes", urls("s3cret-pw"), lockName(t), "--", "echo", "ran")
	if code != 0 || stdout != "ran\n" {
		t.Errorf("run as ACL user = %d, %q; want 0 and the command's output; stderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = execCLI(t, "run", "--nodes", urls("wrong-pw"), lockName(t), "--", "echo", "ran")
	if code != exitUnavailable || !strings.Contains(stderr, "WRONGPASS") {
		t.Errorf("run with a wrong password = %d, %q; want %d and WRONGPASS", code, stderr, exitUnavailable)
	}
	if strings.Contains(stderr, "wrong-pw") {
		t.Errorf("stderr shows the password: %q", stderr)
	}
}

func TestRunTLSURL(t *testing.T) {
	// rediss:// is accepted (TLS); nothing listens there, so the nodes are
	// unreachable, which is reported as such rather than as a bad URL.
	code, _, stderr := runCLI(t, "run", "--nodes", "rediss://127.0.0.1:1", "--wait", "0", lockName(t), "--", "true")
	if code != exitUnavailable || !strings.Contains(stderr, "only 0 of 1 node reachable") {
		t.Errorf("run with rediss:// to a closed port = %d, %q; want %d and the node unreachable", code, stderr, exitUnavailable)
	}
}

func TestRunOwnProcessGroup(t *testing.T) {
	// The command leads a process group of its own, so a terminal's Ctrl-C
	// reaches it once, forwarded by redlock, and not a second time directly.
	code, stdout, stderr := execCLI(t, "run", "--nodes", nodesFlag(t), lockName(t), "--", "sh", "-c", `echo $$ $(cut -d' ' -f5 /proc/$$/stat)`)
	f := strings.Fields(stdout)
	if code != 0 || len(f) != 2 {
		t.Fatalf("run = %d, %q; want 0 and \"PID PGID\"; stderr:\n%s", code, stdout, stderr)
	}
	if f[0] != f[1] {
		t.Errorf("command pid %s, process group %s; want it to lead its own group", f[0], f[1])
	}
}

// TestRunMetadataFlags: --metadata TEXT stores TEXT, --no-metadata nothing,
// both at once is bad usage; the lock stays plain and leaves no key
// behind (the built binary).
func TestRunMetadataFlags(t *testing.T) {
	tests := []struct {
		flag []string
		want string
	}{
		{[]string{"--metadata", "nightly backup #7"}, "nightly backup #7"},
		{[]string{"--no-metadata"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.flag[0], func(t *testing.T) {
			name := lockName(t)
			marker := t.TempDir() + "/marker"
			args := append(append([]string{"run", "--nodes", nodesFlag(t)}, tt.flag...), name, "--", "sh", "-c", `echo started > "$M"; sleep 30`)
			p := startCLIEnv(t, []string{"M=" + marker}, args...)
			waitFile(t, marker, "started", p)
			_, st := statusJSONOf(t, name)
			for _, n := range st.Nodes {
				if !n.Held || n.Reentrant || n.Metadata != tt.want {
					t.Errorf("node %d: %+v; want the plain lock with metadata %q", n.Node, n, tt.want)
				}
			}
			if err := p.cmd.Process.Signal(sigterm); err != nil {
				t.Fatal(err)
			}
			p.wait(t)
			assertNoKey(t, lockKey(t, name))
			assertNoKey(t, lockKey(t, name)+":meta")
		})
	}
	code, _, stderr := execCLI(t, "run", "--nodes", nodesFlag(t), "--metadata", "x", "--no-metadata", "job", "--", "true")
	if code != exitUsage || !strings.Contains(stderr, "--metadata and --no-metadata") {
		t.Errorf("run --metadata x --no-metadata = %d, %q; want %d, give one of them", code, stderr, exitUsage)
	}
	code, _, stderr = execCLI(t, "run", "--nodes", nodesFlag(t), "--metadata", strings.Repeat("x", 257), "job", "--", "true")
	if code != exitUsage || !strings.Contains(stderr, "at most 256 bytes") {
		t.Errorf("run --metadata of 257 bytes = %d, %q; want %d, at most 256 bytes", code, stderr, exitUsage)
	}
}

func TestHolderMetadataCut(t *testing.T) {
	m := holderMetadata([]string{"echo", strings.Repeat("é", 300)})
	if len(m) > 256 || !strings.HasSuffix(m, "…") || !strings.Contains(m, "pid "+strconv.Itoa(os.Getpid())+": echo é") || !utf8.ValidString(m) {
		t.Errorf("holderMetadata of a long command = %q (%d bytes); want at most 256 bytes of UTF-8, cut with …", m, len(m))
	}
}
