package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The README opens with this program, and shows examples/mininodes for
// nodes without Redis: both are checked against the README here, and the
// program is run on the nodes the README says how to start.

// TestReadmeShowsThePrograms: README.md's copies of the programs are the
// programs (so that the README cannot rot).
func TestReadmeShowsThePrograms(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"examples/quickstart/main.go", "examples/mininodes/main.go"} {
		src, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Fatal(err)
		}
		shown, err := readmeBlock(string(readme), path)
		if err != nil {
			t.Errorf("README.md: %v", err)
			continue
		}
		if shown != string(src) {
			t.Errorf("README.md's copy of %s differs from the file: copy the one you changed into the other\nREADME:\n%s", path, shown)
		}
	}
}

// readmeBlock returns the code block of readme right after the line
// "<!-- program: PATH -->".
func readmeBlock(readme, path string) (string, error) {
	marker := "<!-- program: " + path + " -->\n"
	_, after, ok := strings.Cut(readme, marker)
	if !ok {
		return "", fmt.Errorf("no %q line", strings.TrimSpace(marker))
	}
	body, ok := strings.CutPrefix(after, "```go\n")
	if !ok {
		return "", fmt.Errorf("no ```go block right after %q", strings.TrimSpace(marker))
	}
	code, _, ok := strings.Cut(body, "```\n")
	if !ok {
		return "", fmt.Errorf("the block after %q does not end", strings.TrimSpace(marker))
	}
	return code, nil
}

// TestQuickstartOnMiniredis runs the program on the README's nodes for
// those with nothing but Go: examples/mininodes, built and started as a
// process of its own.
func TestQuickstartOnMiniredis(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mininodes")
	if out, err := exec.Command("go", "build", "-o", bin, "../mininodes").CombinedOutput(); err != nil {
		t.Fatalf("go build ../mininodes: %v\n%s", err, out)
	}
	addrs := freeAddrs(t, 3)
	start(t, exec.Command(bin, addrs...), addrs)
	runTwice(t, addrs)
}

// TestQuickstartOnRedisServer runs the program on three redis-server
// processes, started as the README says. Without redis-server the test is
// skipped, or fails when $CI is set: 'make redis-server' installs it.
func TestQuickstartOnRedisServer(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found (make redis-server installs Debian's): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	addrs := freeAddrs(t, 3)
	for _, addr := range addrs {
		_, port, _ := net.SplitHostPort(addr)
		start(t, exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()), []string{addr})
	}
	runTwice(t, addrs)
}

// runTwice runs the program twice on addrs and checks what it left on
// every node: no lock, and the fence counter at 2.
func runTwice(t *testing.T, addrs []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2 {
		if err := run(ctx, addrs); err != nil {
			t.Fatalf("run #%d on %v = %v", i+1, addrs, err)
		}
	}
	for _, addr := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		lock, lerr := rdb.Exists(ctx, "redlock:{invoice:42}").Result()
		fence, ferr := rdb.Get(ctx, "redlock:{invoice:42}:fence").Result()
		rdb.Close()
		if lerr != nil || ferr != nil || lock != 0 || fence != "2" {
			t.Errorf("node %s after two runs: lock key %d (%v), fence counter %q (%v); want no lock and fence 2", addr, lock, lerr, fence, ferr)
		}
	}
}

// freeAddrs returns n addresses on 127.0.0.1 with ports free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close()
	}
	return addrs
}

// start starts cmd, which serves addrs, and waits until every address
// answers PING; the test's cleanup stops it (SIGTERM) and waits for it.
func start(t *testing.T, cmd *exec.Cmd, addrs []string) {
	t.Helper()
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	var output strings.Builder
	done := make(chan struct{})
	go func() { // ends when the process does: its output pipe closes
		defer close(done)
		for s := bufio.NewScanner(out); s.Scan(); {
			output.WriteString(s.Text() + "\n")
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
	})
	for _, addr := range addrs {
		if err := waitPing(addr); err != nil {
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%v: %v; its output:\n%s", cmd.Args, err, output.String())
		}
	}
}

// waitPing waits up to 10s for addr to answer PING.
func waitPing(addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
	}
	return errors.Join(fmt.Errorf("%s did not answer PING within 10s", addr), err)
}
