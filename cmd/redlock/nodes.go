package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/redlock-go/redlock"
)

// nodesEnv is the environment variable --nodes falls back to.
const nodesEnv = "REDLOCK_NODES"

// nodeFlags are the flags shared by every command that talks to nodes.
type nodeFlags struct {
	nodes       string
	prefix      string
	nodeTimeout time.Duration
	tls         tlsFlags
}

// register adds --nodes, --prefix and, for commands that take locks,
// --node-timeout.
func (n *nodeFlags) register(fs *flag.FlagSet, locks bool) {
	fs.StringVar(&n.nodes, "nodes", "", "node `URLs`, separated by commas or spaces (see 'Nodes' above); keep passwords in $"+nodesEnv+", not here")
	fs.StringVar(&n.prefix, "prefix", "", "key prefix, as in redlock.Options.KeyPrefix (default \"redlock:\")")
	if locks {
		fs.DurationVar(&n.nodeTimeout, "node-timeout", 0, "per-node round-trip timeout (default ttl/50, within 100ms..500ms)")
	}
	n.tls.register(fs)
}

// urls returns the node URLs of --nodes (or $REDLOCK_NODES, which the
// flag falls back to).
func (n *nodeFlags) urls(cmd string) ([]string, error) {
	urls, err := splitNodes(n.nodes)
	if err != nil {
		return nil, usagef(cmd, "redlock: --nodes/$%s: %v", nodesEnv, err)
	}
	if len(urls) == 0 {
		return nil, usagef(cmd, "redlock: no nodes: give --nodes redis://host:port,... or set %s", nodesEnv)
	}
	return urls, nil
}

// splitNodes splits a node list at whitespace and commas. A comma inside a
// URL (in a password or an option) must be percent-encoded: a piece after a
// comma that is neither the next URL nor a bare host[:port] (it has an @,
// say), or any piece after a URL with options, means a raw comma split a
// URL, and is an error that shows no part of the list.
func splitNodes(list string) ([]string, error) {
	var out []string
	for _, field := range strings.Fields(list) {
		prev := ""
		for j, part := range strings.Split(field, ",") {
			if part == "" {
				prev = ""
				continue
			}
			if j > 0 && prev != "" && !startsWithScheme(part) && (!bareHost(part) || strings.Contains(prev, "?")) {
				return nil, fmt.Errorf("node %d has a raw comma in its user, password or options: percent-encode it as %%2C", len(out)-1)
			}
			out = append(out, part)
			prev = part
		}
	}
	return out, nil
}

// bareHost reports whether s could be a host[:port] given without scheme.
func bareHost(s string) bool {
	return !strings.ContainsAny(s, "@/?#=&%")
}

// startsWithScheme reports whether s starts with "scheme://".
func startsWithScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return false
	}
	for i, r := range scheme {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// node is one Redis node named on the command line: a standalone master, a
// Sentinel-managed master or a Redis Cluster.
type node struct {
	addr   string // for messages: host:port and kind, never a password
	client redis.UniversalClient
}

// Defaults the CLI sets where a node URL does not give the option: one
// retry and a one second dial, so an unreachable node costs a command line
// tool little.
const (
	defaultMaxRetries  = 1
	defaultDialTimeout = time.Second
)

// urlHint is how node URLs are written, for error messages.
const urlHint = "use redis://[user:password@]host:port[/db], rediss:// for TLS, redis+sentinel://host:port?master_name=NAME or redis+cluster://host:port, with , / # ? @ % in a password percent-encoded (%2C %2F %23 %3F %40 %25)"

// parseNode parses one node URL (a bare host:port means redis://) and
// creates its client; nothing is dialled yet. Options given in the URL's
// query are kept; the CLI's defaults fill only those it does not give. Its
// errors never contain the URL's password. tc holds the TLS files of the
// command line (nil if none), for rediss:// nodes.
func parseNode(raw string, tc *tls.Config) (node, error) {
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL, password and all.
		return node{}, fmt.Errorf("not a valid URL")
	}
	if strings.Contains(raw, "@") && (u.User == nil || strings.Contains(u.Path+u.RawQuery, "@")) || u.Fragment != "" || u.RawFragment != "" {
		return node{}, fmt.Errorf("the user and password do not parse as such (a raw , / # ? or @ in them?)")
	}
	q := u.Query()
	base, kind, _ := strings.Cut(u.Scheme, "+")
	if base != "redis" && base != "rediss" {
		return node{}, fmt.Errorf("unknown scheme %q", u.Scheme)
	}
	u.Scheme = base
	std := u.String()
	switch kind {
	case "":
		opt, err := redis.ParseURL(std)
		if err != nil {
			return node{}, err
		}
		if err := withTLS(opt.TLSConfig, tc); err != nil {
			return node{}, err
		}
		opt.ContextTimeoutEnabled = true
		fillDefaults(q, &opt.DialerRetries, &opt.MaxRetries, &opt.DialTimeout)
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return node{addr: opt.Addr, client: redis.NewClient(opt)}, nil
	case "sentinel":
		opt, err := redis.ParseFailoverURL(std)
		if err != nil {
			return node{}, err
		}
		if opt.MasterName == "" {
			return node{}, fmt.Errorf("a Sentinel node needs ?master_name=NAME")
		}
		if err := withTLS(opt.TLSConfig, tc); err != nil {
			return node{}, err
		}
		if !q.Has("context_timeout_enabled") {
			opt.ContextTimeoutEnabled = true
		}
		fillDefaults(q, &opt.DialerRetries, &opt.MaxRetries, &opt.DialTimeout)
		addr := fmt.Sprintf("sentinel %s master %s", strings.Join(opt.SentinelAddrs, ","), opt.MasterName)
		return node{addr: addr, client: redis.NewFailoverClient(opt)}, nil
	case "cluster":
		opt, err := redis.ParseClusterURL(std)
		if err != nil {
			return node{}, err
		}
		if err := withTLS(opt.TLSConfig, tc); err != nil {
			return node{}, err
		}
		opt.ContextTimeoutEnabled = true
		fillDefaults(q, &opt.DialerRetries, &opt.MaxRetries, &opt.DialTimeout)
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return node{addr: "cluster " + strings.Join(opt.Addrs, ","), client: redis.NewClusterClient(opt)}, nil
	default:
		return node{}, fmt.Errorf("unknown scheme %q", u.Scheme)
	}
}

// fillDefaults sets the CLI's defaults for the options the URL's query q
// does not give (a standalone URL cannot give dialer_retries).
func fillDefaults(q url.Values, dialerRetries, maxRetries *int, dialTimeout *time.Duration) {
	if !q.Has("dialer_retries") {
		*dialerRetries = 1
	}
	if !q.Has("max_retries") {
		*maxRetries = defaultMaxRetries
	}
	if !q.Has("dial_timeout") {
		*dialTimeout = defaultDialTimeout
	}
}

// safeURL is raw for messages: the scheme and what follows the last "@"
// up to any query, so neither a password nor a password= option shows.
func safeURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "redis", raw
	}
	userinfo := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest, userinfo = rest[at+1:], "…@"
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest = rest[:q] + "?…"
	}
	return scheme + "://" + userinfo + rest
}

// dialNodes parses urls and creates one client per node. Nothing is
// dialled yet. The caller closes the clients with closeNodes.
func dialNodes(cmd string, urls []string, tc *tls.Config) ([]node, error) {
	nodes := make([]node, 0, len(urls))
	for i, u := range urls {
		n, err := parseNode(u, tc)
		if err != nil {
			closeNodes(nodes)
			return nil, usagef(cmd, "redlock: node %d %s: %s: %s", i, safeURL(u), redact(unwrapAll(err).Error(), u), urlHint)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// redact removes raw's password from msg, should a parser have quoted it.
func redact(msg, raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
	}
	return msg
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
			parts = append(parts, fmt.Sprintf("node %d (%s): %v%s", i, nodes[i].addr, oneLine(err), tlsHint(err)))
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
	tc, err := nf.tls.config(cmd)
	if err != nil {
		return nil, reportUsage(stderr, err)
	}
	nodes, err := dialNodes(cmd, urls, tc)
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
