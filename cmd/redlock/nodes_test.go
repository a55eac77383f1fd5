package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// trapNode listens where a node could be and returns its host:port and a
// func that reports whether anything connected to it since. A node list the
// CLI refuses must be refused before any of its nodes is dialled.
func trapNode(t testing.TB) (addr string, dialled func() bool) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), func() bool {
		// A dial that succeeded waits in the backlog until accepted, even
		// if its client has closed it since: no need to wait long.
		_ = l.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Millisecond))
		c, err := l.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
}

// badNodeLists are node lists every command refuses with exit 64 before
// dialling any node. TRAP stands for the address of a trapNode, in nodes
// and want (what the first line of stderr must contain).
var badNodeLists = []struct {
	name  string
	nodes string
	want  []string
}{
	{"URL without host", "TRAP,redis://", []string{`node 1 "redis://"`, "host is missing", "redis://HOST:PORT or HOST:PORT"}},
	{"URL with port only", "TRAP,redis://:6379", []string{`node 1 "redis://:6379"`, "host is missing"}},
	{"TLS URL with password, no host", "TRAP,rediss://lockuser:secretpw@:6379", []string{`node 1 "rediss://…@:6379"`, "host is missing"}},
	{"bare password, no host", "lockuser:secretpw@:6379,TRAP", []string{`node 0 "…@:6379"`, "host is missing"}},
	{"colons only", "TRAP,::::", []string{`node 1 "::::"`, "not a host name", "[::1]:6379"}},
	{"IPv6 without brackets", "TRAP,::1", []string{`node 1 "::1"`, "an IPv6 address goes in brackets"}},
	{"character no host name has", "TRAP,red!s:6379", []string{`node 1 "red!s:6379"`, "characters a host name cannot have"}},
	{"port out of range", "TRAP,127.0.0.1:65536", []string{`node 1 "127.0.0.1:65536"`, "port 65536 is not in 1..65535"}},
	{"port 0", "TRAP,127.0.0.1:0", []string{`node 1 "127.0.0.1:0"`, "port 0 is not in 1..65535"}},
	{"empty port", "TRAP,127.0.0.1:", []string{`node 1 "127.0.0.1:"`, "port after ':' is empty"}},
	{"path not a DB", "TRAP,redis://127.0.0.1:1/locks", []string{`node 1 "redis://127.0.0.1:1/locks"`, "not a database number", "redis://HOST:PORT/DB"}},
	{"negative DB", "TRAP,redis://127.0.0.1:1/-1", []string{`node 1 "redis://127.0.0.1:1/-1"`, "not a database number"}},
	{"cluster with a path", "TRAP,redis+cluster://127.0.0.1:1/locks", []string{`node 1 "redis+cluster://127.0.0.1:1/locks"`, "only database 0"}},
	{"unknown scheme", "TRAP,http://127.0.0.1:1", []string{`node 1 "http://127.0.0.1:1"`, `unknown scheme "http"`, "redis://"}},
	{"unix socket", "TRAP,unix:///tmp/redis.sock", []string{`node 1 "unix:///tmp/redis.sock"`, `unknown scheme "unix"`}},
	{"sentinel without host", "TRAP,redis+sentinel://:26379?master_name=m", []string{`node 1 "redis+sentinel://:26379?…"`, "host is missing"}},
	{"cluster addr= without host", "TRAP,redis+cluster://127.0.0.1:1?addr=:2", []string{"node 1", "addr=:2", "host is missing", "addr=HOST:PORT"}},
	{"two commas", "TRAP,,127.0.0.1:1", []string{"node 1 is empty", "two commas after node 0"}},
	{"comma, space, comma", "TRAP, ,127.0.0.1:1", []string{"node 1 is empty", "two commas after node 0"}},
	{"trailing comma", "TRAP,127.0.0.1:1,", []string{"node 2 is empty", "ends with a comma"}},
	{"leading comma", ",TRAP", []string{"node 0 is empty", "starts with a comma"}},
	{"same node twice", "TRAP,TRAP", []string{`node 0 "TRAP" and node 1 "TRAP" are the same server (TRAP)`, "list each Redis server once"}},
	{"same node as URL and bare", "redis://TRAP 127.0.0.1:1 TRAP", []string{`node 0 "redis://TRAP" and node 2 "TRAP" are the same server`}},
	{"two DBs of one server", "redis://TRAP/0,redis://TRAP/1", []string{`node 0 "redis://TRAP/0" and node 1 "redis://TRAP/1" are the same server`}},
	{"same node with password", "redis://lockuser:secretpw@TRAP,TRAP", []string{`node 0 "redis://…@TRAP" and node 1 "TRAP" are the same server`}},
	{"same IPv6 node, two spellings", "TRAP,[::1]:7000,redis://[0:0::1]:7000", []string{`node 1 "[::1]:7000" and node 2 "redis://[0:0::1]:7000" are the same server`}},
}

func TestBadNodeListsRefused(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	commands := []struct {
		args []string
		env  bool // whether $REDLOCK_NODES is read too
	}{
		{[]string{"run", "--wait", "0", "lock", "--", "touch", marker}, true},
		{[]string{"status", "lock"}, true},
		{[]string{"break", "--yes", "lock"}, true},
	}
	for _, tt := range badNodeLists {
		t.Run(tt.name, func(t *testing.T) {
			trap, dialled := trapNode(t)
			nodes := strings.ReplaceAll(tt.nodes, "TRAP", trap)
			for _, c := range commands {
				vias := []string{"flag", "env"}
				if !c.env {
					vias = vias[:1]
				}
				for _, via := range vias {
					t.Setenv(nodesEnv, "")
					args := c.args
					if via == "flag" {
						args = append([]string{c.args[0], "--nodes", nodes}, c.args[1:]...)
					} else {
						t.Setenv(nodesEnv, nodes)
					}
					code, stdout, stderr := runCLI(t, args...)
					first, _, _ := strings.Cut(stderr, "\n")
					if code != exitUsage {
						t.Errorf("%s with %q via %s = %d; want %d; stderr:\n%s", c.args[0], nodes, via, code, exitUsage, stderr)
					}
					for _, w := range tt.want {
						if w = strings.ReplaceAll(w, "TRAP", trap); !strings.Contains(first, w) {
							t.Errorf("%s with %q via %s: message %q; want it to contain %q", c.args[0], nodes, via, first, w)
						}
					}
					if strings.Contains(stdout+stderr, "secretpw") || strings.Contains(stdout+stderr, "lockuser") {
						t.Errorf("%s with %q via %s: the output shows the user or password:\n%s%s", c.args[0], nodes, via, stdout, stderr)
					}
					if dialled() {
						t.Errorf("%s with %q via %s: a node was dialled; want the list refused first", c.args[0], nodes, via)
					}
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("run with %q ran the command", nodes)
			}
		})
	}
}

// TestBadNodesEnvBinary runs the built binary with a $REDLOCK_NODES that
// names no host (once read as localhost:6379).
func TestBadNodesEnvBinary(t *testing.T) {
	trap, dialled := trapNode(t)
	marker := filepath.Join(t.TempDir(), "ran")
	nodes := trap + ",redis://lockuser:secretpw@:6379," + trap
	p := startCLIEnv(t, []string{nodesEnv + "=" + nodes}, "run", "--wait", "0", lockName(t), "--", "touch", marker)
	code := p.wait(t)
	stderr := p.stderr.String()
	want := `redlock: node 1 "redis://…@:6379": the host is missing (an empty host does not mean localhost): write redis://HOST:PORT or HOST:PORT`
	if code != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("redlock run with %s=%q = %d, stderr:\n%s\nwant %d and stderr starting %q", nodesEnv, nodes, code, stderr, exitUsage, want)
	}
	if strings.Contains(stderr, "secretpw") || strings.Contains(stderr, "lockuser") {
		t.Errorf("stderr shows the user or password:\n%s", stderr)
	}
	if dialled() {
		t.Errorf("a node was dialled; want the list refused first")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}

	// The server listed twice (the first error above hides it).
	nodes = trap + ",redis://" + trap
	p = startCLIEnv(t, []string{nodesEnv + "=" + nodes}, "run", "--wait", "0", lockName(t), "--", "touch", marker)
	code = p.wait(t)
	want = `redlock: node 0 "` + trap + `" and node 1 "redis://` + trap + `" are the same server`
	if code != exitUsage || !strings.HasPrefix(p.stderr.String(), want) {
		t.Errorf("redlock run with %s=%q = %d, stderr:\n%s\nwant %d and stderr starting %q", nodesEnv, nodes, code, p.stderr.String(), exitUsage, want)
	}
	if dialled() {
		t.Errorf("a node was dialled; want the list refused first")
	}
}
