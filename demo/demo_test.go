package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestMain(m *testing.M) {
	redis.SetLogger(silentLogger{})
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runDemo runs the demo in-process and returns its exit code and output.
func runDemo(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = demoCmd(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// nodesFlag starts 3 Redis nodes for the test and returns their URLs for --nodes.
func nodesFlag(t testing.TB) string {
	t.Helper()
	var urls []string
	for _, a := range redlocktest.Start(t, 3, nil).Addrs() {
		urls = append(urls, "redis://"+a)
	}
	return strings.Join(urls, ",")
}

func TestDemo(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		faults string // in the output when node faults are injected
	}{
		{"local nodes with faults", nil, "FAULT  killed node(s) [1 2]"},
		{"given nodes", []string{"--nodes", nodesFlag(t)}, "no node faults"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeline := filepath.Join(t.TempDir(), "timeline.html")
			args := append([]string{"--duration", "6s", "--timeline", timeline}, tt.args...)
			code, stdout, stderr := runDemo(t, args...)
			if code != 0 {
				t.Fatalf("demo = %d; want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, want := range []string{
				tt.faults,
				"pauses (as in a GC pause)",
				"REJECTED: the store has seen fence",
				"= accepted increments: nothing lost",
				"stale writes accepted  0\n",
				"  checker  ",
				"timeline               " + timeline,
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("demo output does not contain %q:\n%s", want, stdout)
				}
			}
			for _, bad := range []string{"overlap:", "fence-order:", "stale-write:", "lost-increment:"} {
				if strings.Contains(stdout, bad) {
					t.Errorf("demo checker reports a %s violation:\n%s", bad, stdout)
				}
			}
			m := regexp.MustCompile(`stale writes rejected  (\d+)`).FindStringSubmatch(stdout)
			if m == nil || m[1] == "0" {
				t.Errorf("demo summary: stale writes rejected = %v; want at least 1 (the paused worker)", m)
			}
			b, err := os.ReadFile(timeline)
			if err != nil || !strings.Contains(string(b), "<svg") {
				t.Errorf("timeline %s: %v, %d bytes; want an HTML file with an SVG chart", timeline, err, len(b))
			}
		})
	}
}

// TestDemoUsage: a bad command line or node list is refused with exit 64 on
// one line and a usage hint, before any node is dialled, and never shows a
// node's user or password.
func TestDemoUsage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	trap := l.Addr().String()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"stray argument", []string{"now"}, `unexpected argument "now"`},
		{"one worker", []string{"--workers", "1"}, "--workers 1: want at least 2"},
		{"short duration", []string{"--duration", "1s"}, "--duration 1s: want at least 3s"},
		{"short ttl", []string{"--ttl", "10ms"}, "--ttl 10ms: want at least 100ms"},
		{"no timeline", []string{"--timeline", ""}, "--timeline: want a file name"},
		{"unknown flag", []string{"--tll", "1s"}, "flag provided but not defined: --tll"},
		{"no host", []string{"--nodes", trap + ",redis://lockuser:secretpw@:6379"}, "node 1 is not a standalone node with a host and port"},
		{"sentinel", []string{"--nodes", "redis+sentinel://" + trap + "?master_name=m"}, "node 0 is not a standalone node"},
		{"same server twice", []string{"--nodes", trap + ",redis://lockuser:secretpw@" + trap}, "node 0 and node 1 are the same server (" + trap + ")"},
		{"bad option", []string{"--nodes", "redis://lockuser:secretpw@" + trap + "?frob=1"}, "node 0 (" + trap + "): "},
		{"only commas", []string{"--nodes", ", ,"}, "--nodes: no nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runDemo(t, tt.args...)
			first, rest, _ := strings.Cut(stderr, "\n")
			if code != exitUsage || !strings.HasPrefix(first, "redlock: demo: ") || !strings.Contains(first, tt.want) {
				t.Errorf("demo %q = %d, stderr:\n%s\nwant %d and a first line \"redlock: demo: ...\" containing %q", tt.args, code, stderr, exitUsage, tt.want)
			}
			if !strings.HasPrefix(rest, "usage: see 'make demo DEMO_FLAGS=-h'") {
				t.Errorf("demo %q: stderr = %q; want a usage hint on its second line", tt.args, stderr)
			}
			if strings.Contains(stdout+stderr, "secretpw") || strings.Contains(stdout+stderr, "lockuser") {
				t.Errorf("demo %q: the output shows the user or password:\n%s%s", tt.args, stdout, stderr)
			}
		})
	}
	_ = l.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Millisecond))
	if c, err := l.Accept(); err == nil {
		c.Close()
		t.Errorf("a node was dialled; want every list refused first")
	}
}

// TestDemoUnreachable: with fewer nodes reachable than a quorum the demo
// exits 69 before starting the workers.
func TestDemoUnreachable(t *testing.T) {
	code, stdout, stderr := runDemo(t, "--nodes", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--duration", "3s")
	if code != exitUnavailable || !strings.Contains(stderr, "only 0 of 3 nodes reachable, a lock needs 2") || strings.Contains(stdout, "workers on lock") {
		t.Errorf("demo on unreachable nodes = %d, stdout:\n%s\nstderr:\n%s\nwant %d and no workers", code, stdout, stderr, exitUnavailable)
	}
}

// TestDemoHelp: -h prints the usage with the flags on stdout, written as
// the docs write them (--duration, -q), and exits 0.
func TestDemoHelp(t *testing.T) {
	code, stdout, _ := runDemo(t, "-h")
	if code != 0 || !strings.Contains(stdout, "usage: make demo") || !strings.Contains(stdout, "\n  --nodes URLs\n") ||
		!strings.Contains(stdout, "\n  --duration duration\n") || !strings.Contains(stdout, "\n  -q\n") {
		t.Errorf("demo -h = %d, %q; want 0 and the usage with its flags", code, stdout)
	}
}
