package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// shared is three Redis masters shared by the tests, started by the first
// test that needs them; each test uses lock names of its own.
var shared = redlocktest.Shared{N: 3}

// cluster returns the shared cluster, starting it on first use; without
// Docker the test is skipped (failed with CI set).
func cluster(t testing.TB) *redlocktest.Cluster {
	t.Helper()
	return shared.Cluster(t)
}

// binary is the redlock command, built once for the tests that exec it.
var binary string

func TestMain(m *testing.M) {
	redis.SetLogger(silentLogger{})
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redlock-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "redlock")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	code := shared.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	return code
}

// nodesFlag is the --nodes value for the shared cluster.
func nodesFlag(t testing.TB) string {
	t.Helper()
	var urls []string
	for _, a := range cluster(t).Addrs() {
		urls = append(urls, "redis://"+a)
	}
	return strings.Join(urls, ",")
}

// lockName returns a lock name unique to the test.
func lockName(t testing.TB) string {
	t.Helper()
	return strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
}

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// proc is the redlock binary running as a child process of the test.
type proc struct {
	cmd    *exec.Cmd
	stdout lockedBuffer
	stderr lockedBuffer
	done   chan struct{}
}

// startCLI starts the built binary with args; the test's cleanup kills it
// if it still runs.
func startCLI(t testing.TB, args ...string) *proc {
	t.Helper()
	return startCLIEnv(t, nil, args...)
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("redlock %v still running after 90s; stderr:\n%s", p.cmd.Args[1:], p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// execCLI runs the built binary to completion.
func execCLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startCLI(t, args...)
	code = p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

// waitFile polls until path exists and contains want, or fails the test.
func waitFile(t testing.TB, path, want string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("redlock exited (%v) before %s contained %q; stderr:\n%s", p.cmd.ProcessState, path, want, p.stderr.String())
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s = %q after 60s; want it to contain %q", path, b, want)
}

// holdLock acquires name on the shared cluster with the library itself and
// releases it when the test ends.
func holdLock(t testing.TB, name string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	c := sharedClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, name, ttl, nil)
	if err != nil {
		t.Fatalf("Acquire(%q) = %v; want the lock", name, err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}

// sharedClient returns a library Client over the shared cluster, closed
// when the test ends.
func sharedClient(t testing.TB) *redlock.Client {
	t.Helper()
	c, err := redlock.New(cluster(t).Clients(), nil)
	if err != nil {
		t.Fatalf("redlock.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lockKeyCount returns on how many nodes of the shared cluster the lock key
// of name exists.
func lockKeyCount(t testing.TB, name string) int {
	t.Helper()
	key := lockKey(t, name)
	n := 0
	for i, cl := range cluster(t).Clients() {
		got, err := cl.Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("node %d: EXISTS %s: %v", i, key, err)
		}
		n += int(got)
	}
	return n
}

// startCLIEnv is startCLI with extra environment variables.
func startCLIEnv(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	return startCLIWith(t, nil, env, args...)
}

// startCLIWith is startCLIEnv with setup called on the command before it
// starts (to give it a terminal, say).
func startCLIWith(t testing.TB, setup func(*exec.Cmd), env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), nodesEnv+"="), env...)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	if setup != nil {
		setup(p.cmd)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", binary, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// deleteLockKeys deletes the lock key of name on the first n nodes of the
// shared cluster, as if they had lost it: the holder's next extend fails.
func deleteLockKeys(t testing.TB, name string, n int) {
	t.Helper()
	key := lockKey(t, name)
	for i := range n {
		if err := cluster(t).Client(i).Del(context.Background(), key).Err(); err != nil {
			t.Fatalf("node %d: DEL %s: %v", i, key, err)
		}
	}
}

// lockedBuffer is a bytes.Buffer that a child's output can be written to
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitStderr polls until the process's stderr contains want.
func waitStderr(t testing.TB, p *proc, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(p.stderr.String(), want) {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("redlock exited before printing %q; stderr:\n%s", want, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("stderr = %q after 60s; want it to contain %q", p.stderr.String(), want)
}

const sigterm = syscall.SIGTERM

func readFile(t testing.TB, path string) (string, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	return string(b), err
}

// lockKey returns the lock key of name under the default key prefix.
func lockKey(t testing.TB, name string) string {
	t.Helper()
	c, err := redlock.New(cluster(t).Clients(), nil)
	if err != nil {
		t.Fatalf("redlock.New: %v", err)
	}
	defer c.Close()
	key, _ := c.Keys(name)
	return key
}

// assertNoKey fails unless no node has key.
func assertNoKey(t testing.TB, key string) {
	t.Helper()
	for i, cl := range cluster(t).Clients() {
		if n, err := cl.Exists(context.Background(), key).Result(); err != nil || n != 0 {
			t.Errorf("node %d: EXISTS %s = %d, %v; want 0 (no stray key)", i, key, n, err)
		}
	}
}
