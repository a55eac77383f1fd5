package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// cluster is the bench's five Redis nodes, each a local redis-server
// process without persistence, and one toxiproxy proxy per node, run in a
// child process so that the proxies' CPU and allocations stay out of the
// measured process's runtime.MemStats. Every library under test connects
// through the proxies, in every scenario.
type cluster struct {
	dir     string          // temp dir holding one dir per node
	servers []*exec.Cmd     // redis-server processes
	direct  []string        // the nodes' own addresses
	proxied []string        // the proxies' addresses, what the contenders dial
	admin   []*redis.Client // the bench's own connections to the nodes (INFO, FLUSHALL)
	idle    time.Duration   // the nodes' CPU per second doing nothing (idleServerCPU)
	child   *exec.Cmd       // the toxiproxy process
	childIn io.Closer       // its stdin: it exits when this closes
	api     *toxiclient.Client
	proxies []*toxiclient.Proxy
}

// startCluster starts n redis-server processes on free ports of
// 127.0.0.1 and a proxy in front of each. On error it stops what it started.
func startCluster(ctx context.Context, n int) (*cluster, error) {
	c, err := startNodes(ctx, n)
	if err != nil {
		return nil, err
	}
	if err := c.startProxies(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// startNodes starts n redis-server processes on free ports of 127.0.0.1,
// without proxies. On error it stops what it started.
func startNodes(ctx context.Context, n int) (c *cluster, err error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, errors.New("redlock bench: redis-server not found in PATH; install it (Debian: apt-get install redis-server) or run `make bench`, which does")
	}
	dir, err := os.MkdirTemp("", "redlock-bench-")
	if err != nil {
		return nil, fmt.Errorf("redlock bench: creating the nodes' temp dir: %w", err)
	}
	c = &cluster{dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	for i := range n {
		addr, err := c.startServer(i)
		if err != nil {
			return c, err
		}
		c.direct = append(c.direct, addr)
	}
	for i, addr := range c.direct {
		if err := waitPing(ctx, addr); err != nil {
			return c, fmt.Errorf("redlock bench: node %d (%s) did not answer PING (log in %s): %w", i, addr, c.dir, err)
		}
	}
	c.admin = defaultClients(c.direct)
	return c, nil
}

func (c *cluster) startServer(i int) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	nodeDir := filepath.Join(c.dir, fmt.Sprintf("node%d", i))
	if err := os.Mkdir(nodeDir, 0o755); err != nil {
		return "", fmt.Errorf("redlock bench: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command("redis-server",
		"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--protected-mode", "no",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", nodeDir, "--logfile", filepath.Join(nodeDir, "redis.log"))
	// The node dies with the bench even if the bench is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("redlock bench: starting redis-server for node %d: %w", i, err)
	}
	c.servers = append(c.servers, cmd)
	return addr, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redlock bench: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPing(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startProxies starts the toxiproxy child process and one proxy per node.
func (c *cluster) startProxies() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("redlock bench: locating the bench binary to start the proxy process: %w", err)
	}
	cmd := exec.Command(exe, "-proxy-child")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // the child exits when it closes
	if err != nil {
		return fmt.Errorf("redlock bench: %w", err)
	}
	c.childIn = stdin
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("redlock bench: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redlock bench: starting the proxy process: %w", err)
	}
	c.child = cmd
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("redlock bench: the proxy process did not report its address: %w", err)
	}
	c.api = toxiclient.NewClient(strings.TrimSpace(line))
	for i, up := range c.direct {
		p, err := c.api.CreateProxy(fmt.Sprintf("node%d", i), "127.0.0.1:0", up)
		if err != nil {
			return fmt.Errorf("redlock bench: creating the proxy of node %d: %w", i, err)
		}
		c.proxies = append(c.proxies, p)
		c.proxied = append(c.proxied, p.Listen)
	}
	return nil
}

// proxyChild is the main of the proxy process: the toxiproxy API on a free
// port of 127.0.0.1, whose address it prints on stdout. It exits when its
// stdin closes (the bench ended).
func proxyChild() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	fmt.Printf("http://%s\n", l.Addr())
	go func() { // owner: the process; ends it when the parent goes
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	return http.Serve(l, srv.Routes())
}

// fault names what a scenario injects.
type fault int

const (
	healthy   fault = iota
	slowNode        // S4: node 4 replies 50 ms late
	blackhole       // S5: nodes 3 and 4 drop every byte
)

// slowLatency is S4's added latency.
const slowLatency = 50 * time.Millisecond

// addrsFor is what the contenders dial in a scenario with fault f: the nodes
// themselves, except the faulted ones, which are reached through their
// proxies. A proxy is one more hop on the same cores; healthy nodes are
// dialled directly so that the healthy figures (S1's p99 included, which S4
// and S5 are compared with) measure the clients, not the proxy.
func (c *cluster) addrsFor(f fault) []string {
	addrs := append([]string(nil), c.direct...)
	switch f {
	case slowNode:
		addrs[4] = c.proxied[4]
	case blackhole:
		addrs[3], addrs[4] = c.proxied[3], c.proxied[4]
	}
	return addrs
}

func (c *cluster) inject(f fault) error {
	switch f {
	case slowNode:
		_, err := c.proxies[4].AddToxic("latency", "latency", "downstream", 1,
			toxiclient.Attributes{"latency": slowLatency.Milliseconds()})
		return err
	case blackhole:
		for _, i := range []int{3, 4} {
			for _, s := range []string{"downstream", "upstream"} {
				if _, err := c.proxies[i].AddToxic("hole_"+s, "timeout", s, 1,
					toxiclient.Attributes{"timeout": 0}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// heal undoes inject. After a blackhole the proxies are disabled first,
// which closes the connections that lost bytes (and frees the clients
// stuck reading them), then re-enabled on the same address.
func (c *cluster) heal(f fault) error {
	switch f {
	case slowNode:
		return c.proxies[4].RemoveToxic("latency")
	case blackhole:
		for _, i := range []int{3, 4} {
			p := c.proxies[i]
			if err := p.Disable(); err != nil {
				return err
			}
			for _, s := range []string{"downstream", "upstream"} {
				if err := p.RemoveToxic("hole_" + s); err != nil {
					return err
				}
			}
			if err := p.Enable(); err != nil {
				return err
			}
		}
	}
	return nil
}

// stop kills every process started and removes the temp dir.
func (c *cluster) stop() {
	if c.child != nil && c.child.Process != nil {
		_ = c.childIn.Close()
		_ = c.child.Process.Kill()
		_ = c.child.Wait()
	}
	closeClients(c.admin)
	for _, s := range c.servers {
		_ = s.Process.Kill()
		_ = s.Wait()
	}
	_ = os.RemoveAll(c.dir)
}

// redisVersion is the version redis-server reports.
func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}
