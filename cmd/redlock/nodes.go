package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/redlock-go/redlock"
)

// nodesEnv is the environment variable read when --nodes is not given.
const nodesEnv = "REDLOCK_NODES"

// nodeFlags are the flags shared by every command that talks to nodes.
type nodeFlags struct {
	nodes       string
	prefix      string
	nodeTimeout time.Duration
}

// register adds --nodes, --prefix and, for commands that take locks,
// --node-timeout.
func (n *nodeFlags) register(fs *flag.FlagSet, locks bool) {
	fs.StringVar(&n.nodes, "nodes", "", "comma-separated node `URLs` redis://[user:pass@]host:port[/db] or rediss:// (default $"+nodesEnv+")")
	fs.StringVar(&n.prefix, "prefix", "", "key prefix, as in redlock.Options.KeyPrefix (default \"redlock:\")")
	if locks {
		fs.DurationVar(&n.nodeTimeout, "node-timeout", 0, "per-node round-trip timeout (default ttl/50, within 100ms..500ms)")
	}
}

// nodeURLs returns the node URLs from --nodes, else $REDLOCK_NODES.
func (n *nodeFlags) urls(cmd string) ([]string, error) {
	src := n.nodes
	if strings.TrimSpace(src) == "" {
		src = os.Getenv(nodesEnv)
	}
	urls := strings.FieldsFunc(src, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(urls) == 0 {
		return nil, usagef(cmd, "redlock: no nodes: give --nodes redis://host:port,... or set %s", nodesEnv)
	}
	return urls, nil
}

// node is one Redis master named on the command line.
type node struct {
	addr   string
	client *redis.Client
}

// dialNodes parses urls and creates one client per node. Nothing is
// dialled yet. The caller closes the clients with closeNodes.
func dialNodes(cmd string, urls []string) ([]node, error) {
	nodes := make([]node, 0, len(urls))
	for i, u := range urls {
		if !strings.Contains(u, "://") {
			u = "redis://" + u
		}
		opt, err := redis.ParseURL(u)
		if err != nil {
			closeNodes(nodes)
			return nil, usagef(cmd, "redlock: node %d %q: %v: use redis://[user:password@]host:port[/db] or rediss://", i, maskURL(u), unwrapAll(err))
		}
		opt.ContextTimeoutEnabled = true
		opt.DialerRetries = 1
		opt.MaxRetries = 1
		opt.DialTimeout = time.Second
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		nodes = append(nodes, node{addr: opt.Addr, client: redis.NewClient(opt)})
	}
	return nodes, nil
}

func closeNodes(nodes []node) {
	for _, n := range nodes {
		_ = n.client.Close()
	}
}

func clientsOf(nodes []node) []redis.UniversalClient {
	cs := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		cs[i] = n.client
	}
	return cs
}

// maskURL hides the password in a node URL.
func maskURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return u
	}
	userinfo := rest[:at]
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":xxx@" + rest[at+1:]
	}
	return u
}

func unwrapAll(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// probe PINGs every node at once, each bounded by timeout, and returns the
// error of each (nil where the node answered).
func probe(ctx context.Context, nodes []node, timeout time.Duration) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = n.client.Ping(ctx).Err()
		})
	}
	wg.Wait()
	return errs
}

// unreachable describes the nodes whose probe failed, on one line.
func unreachable(nodes []node, errs []error) (n int, desc string) {
	var parts []string
	for i, err := range errs {
		if err != nil {
			n++
			parts = append(parts, fmt.Sprintf("node %d (%s): %v", i, nodes[i].addr, oneLine(err)))
		}
	}
	return n, strings.Join(parts, "; ")
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// session is a redlock.Client over the nodes of the command line.
type session struct {
	nodes  []node
	client *redlock.Client
}

// openSession builds the client from the node flags. On a bad configuration
// it reports the error and returns nil and the exit code.
func openSession(cmd string, nf *nodeFlags, ttl time.Duration, stderr io.Writer) (*session, int) {
	urls, err := nf.urls(cmd)
	if err != nil {
		return nil, reportUsage(stderr, err)
	}
	nodes, err := dialNodes(cmd, urls)
	if err != nil {
		return nil, reportUsage(stderr, err)
	}
	client, err := redlock.New(clientsOf(nodes), &redlock.Options{NodeTimeout: nf.timeoutFor(ttl), KeyPrefix: nf.prefix})
	if err != nil {
		closeNodes(nodes)
		return nil, reportUsage(stderr, usagef(cmd, "%s", trimPrefix(err)))
	}
	return &session{nodes: nodes, client: client}, exitOK
}

func (s *session) close() {
	_ = s.client.Close()
	closeNodes(s.nodes)
}

// probeTimeout bounds the reachability check of one node.
const probeTimeout = time.Second

// checkQuorum PINGs every node. With fewer reachable than a quorum it
// reports them and returns exitUnavailable and false; a reachable quorum
// with some nodes down only gets a warning.
func (s *session) checkQuorum(ctx context.Context, stderr io.Writer) (int, bool) {
	errs := probe(ctx, s.nodes, probeTimeout)
	down, desc := unreachable(s.nodes, errs)
	up := len(s.nodes) - down
	if up < s.client.Quorum() {
		fmt.Fprintf(stderr, "redlock: only %d of %d nodes reachable, a lock needs %d: %s; check --nodes/$%s and that the servers are up\n",
			up, len(s.nodes), s.client.Quorum(), desc, nodesEnv)
		return exitUnavailable, false
	}
	if down > 0 {
		fmt.Fprintf(stderr, "redlock: warning: %d of %d nodes unreachable (%s); going on with the other %d\n", down, len(s.nodes), desc, up)
	}
	return exitOK, true
}

// timeoutFor is the per-node timeout for locks of ttl: --node-timeout, else
// ttl/50 within 100ms..500ms. The library's 100ms is tight for a command
// line tool whose first round trip also dials the nodes and loads the
// scripts, on a 30s lease that can well afford more.
func (n *nodeFlags) timeoutFor(ttl time.Duration) time.Duration {
	if n.nodeTimeout > 0 {
		return n.nodeTimeout
	}
	return min(max(ttl/50, 100*time.Millisecond), 500*time.Millisecond)
}
