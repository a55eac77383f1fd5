package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// node is one Redis node named on the command line: a standalone master, a
// Sentinel-managed master or a Redis Cluster.
type node struct {
	addr    string   // for messages: host:port and kind, never a password
	servers []string // what it names, to find a server listed twice: see serversOf
	client  redis.UniversalClient
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
// errors never contain the URL's password and say what to write instead.
// tc holds the TLS files of the command line (nil if none), for rediss://
// nodes.
func parseNode(raw string, tc *tls.Config) (node, error) {
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL, password and all.
		return node{}, fmt.Errorf("not a valid URL: %s", urlHint)
	}
	if strings.Contains(raw, "@") && (u.User == nil || strings.Contains(u.Path+u.RawQuery, "@")) || u.Fragment != "" || u.RawFragment != "" {
		return node{}, fmt.Errorf("the user and password do not parse as such (a raw , / # ? or @ in them?): %s", urlHint)
	}
	q := u.Query()
	base, kind, _ := strings.Cut(u.Scheme, "+")
	if base != "redis" && base != "rediss" || kind != "" && kind != "sentinel" && kind != "cluster" {
		return node{}, fmt.Errorf("unknown scheme %q: use redis://, rediss:// (TLS), redis+sentinel:// or redis+cluster://, or no scheme for HOST:PORT", u.Scheme)
	}
	servers, err := serversOf(u, kind)
	if err != nil {
		return node{}, err
	}
	u.Scheme = base
	std := u.String()
	// goRedis says what a go-redis parser refused, without the password.
	goRedis := func(err error) error {
		return fmt.Errorf("%s: %s", redact(unwrapAll(err).Error(), raw), urlHint)
	}
	switch kind {
	case "":
		opt, err := redis.ParseURL(std)
		if err != nil {
			return node{}, goRedis(err)
		}
		if err := withTLS(opt.TLSConfig, tc); err != nil {
			return node{}, err
		}
		opt.ContextTimeoutEnabled = true
		fillDefaults(q, &opt.DialerRetries, &opt.MaxRetries, &opt.DialTimeout)
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return node{addr: opt.Addr, servers: servers, client: redis.NewClient(opt)}, nil
	case "sentinel":
		opt, err := redis.ParseFailoverURL(std)
		if err != nil {
			return node{}, goRedis(err)
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
		for i, s := range servers {
			servers[i] = fmt.Sprintf("master %s of sentinel %s", opt.MasterName, s)
		}
		addr := fmt.Sprintf("sentinel %s master %s", strings.Join(opt.SentinelAddrs, ","), opt.MasterName)
		return node{addr: addr, servers: servers, client: redis.NewFailoverClient(opt)}, nil
	default: // cluster
		opt, err := redis.ParseClusterURL(std)
		if err != nil {
			return node{}, goRedis(err)
		}
		if err := withTLS(opt.TLSConfig, tc); err != nil {
			return node{}, err
		}
		opt.ContextTimeoutEnabled = true
		fillDefaults(q, &opt.DialerRetries, &opt.MaxRetries, &opt.DialTimeout)
		opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return node{addr: "cluster " + strings.Join(opt.Addrs, ","), servers: servers, client: redis.NewClusterClient(opt)}, nil
	}
}

// hostHint is how a node's host is written, for error messages.
const hostHint = "write redis://HOST:PORT or HOST:PORT, e.g. redis://10.0.0.1:6379 (an IPv6 address in brackets: [::1]:6379)"

// serversOf checks that u, a node URL of kind "", "sentinel" or "cluster",
// names each of its servers explicitly (go-redis would read a missing host
// as localhost) and that its path is a database number. It returns the
// servers (the URL's host and those of its addr= options) in the form of
// [checkAddr], to find a server listed twice.
func serversOf(u *url.URL, kind string) ([]string, error) {
	s, err := checkAddr(u.Host)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, hostHint)
	}
	servers := []string{s}
	if kind != "" {
		for _, a := range u.Query()["addr"] {
			s, err := checkAddr(a)
			if err != nil {
				return nil, fmt.Errorf("option addr=%s: %v: write addr=HOST:PORT", a, err)
			}
			servers = append(servers, s)
		}
	}
	if u.Path == "" || u.Path == "/" {
		return servers, nil
	}
	if kind == "cluster" {
		return nil, errors.New("a Redis Cluster has only database 0: drop the path after HOST:PORT")
	}
	db := u.Path[1:]
	if len(db) > 9 || strings.Trim(db, "0123456789") != "" {
		return nil, errors.New("its path is not a database number: write redis://HOST:PORT/DB with DB a number such as 0, or no path for 0")
	}
	return servers, nil
}

// checkAddr checks one host[:port] of a node, as a URL holds it or an
// addr= option gives it: a host name or IP address (IPv6 in brackets) must
// be given, and a port, if any, must be in 1..65535. It returns host:port
// as a server is compared with the others: the host in lower case, an IP
// address in its canonical form, the port 6379 if none is given. Aliases
// (localhost and 127.0.0.1) are not resolved.
func checkAddr(hostport string) (string, error) {
	host, port, hasPort := hostport, "", false
	if rest, ok := strings.CutPrefix(hostport, "["); ok {
		ip, after, ok := strings.Cut(rest, "]")
		addr, err := netip.ParseAddr(ip)
		if !ok || err != nil || !addr.Is6() || after != "" && after[0] != ':' {
			return "", errors.New("the host in brackets is not an IPv6 address")
		}
		host = addr.Unmap().String()
		if after != "" {
			port, hasPort = after[1:], true
		}
	} else {
		if i := strings.LastIndex(hostport, ":"); i >= 0 {
			host, port, hasPort = hostport[:i], hostport[i+1:], true
		}
		switch {
		case host == "":
			return "", errors.New("the host is missing (an empty host does not mean localhost)")
		case strings.Contains(host, ":"):
			return "", fmt.Errorf("host %q is not a host name (an IPv6 address goes in brackets)", host)
		case strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "":
			return "", fmt.Errorf("host %q has characters a host name cannot have (letters, digits, - . _)", host)
		}
		if addr, err := netip.ParseAddr(host); err == nil {
			host = addr.Unmap().String()
		} else {
			host = strings.ToLower(host)
		}
	}
	if !hasPort {
		return net.JoinHostPort(host, "6379"), nil
	}
	if port == "" {
		return "", errors.New("the port after ':' is empty (leave out the ':' for 6379)")
	}
	n, err := strconv.Atoi(port)
	if err != nil || strings.Trim(port, "0123456789") != "" || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %s is not in 1..65535", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
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

// safeURL is raw for messages: as written up to the last "@", then what
// follows up to any query, so neither a password nor a password= option
// shows.
func safeURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	} else {
		scheme += "://"
	}
	userinfo := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest, userinfo = rest[at+1:], "…@"
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		rest = rest[:q] + "?…"
	}
	return scheme + userinfo + rest
}

// dialNodes parses urls and creates one client per node. Nothing is
// dialled yet. The caller closes the clients with closeNodes. A URL that
// does not parse, or names a server an earlier one names too, is a usage
// error naming the node by its index and text, without a password.
func dialNodes(cmd string, urls []string, tc *tls.Config) ([]node, error) {
	nodes := make([]node, 0, len(urls))
	seen := map[string]int{} // server -> index of the first node naming it
	for i, u := range urls {
		n, err := parseNode(u, tc)
		if err != nil {
			closeNodes(nodes)
			return nil, usagef(cmd, "redlock: node %d %q: %v", i, safeURL(u), err)
		}
		nodes = append(nodes, n)
		for _, s := range n.servers {
			if j, ok := seen[s]; ok && j != i {
				closeNodes(nodes)
				return nil, usagef(cmd, "redlock: node %d %q and node %d %q are the same server (%s): one server would cast two votes toward a quorum; list each Redis server once",
					j, safeURL(urls[j]), i, safeURL(u), s)
			}
			seen[s] = i
		}
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
