package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

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
