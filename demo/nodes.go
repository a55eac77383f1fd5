package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// nodesHint is how the demo's --nodes are written, for error messages.
const nodesHint = "give redis://[user:password@]host:port[/db] or rediss:// URLs, or host:port, separated by commas or spaces, each server once (for Sentinel or Cluster nodes use the redlock command's run)"

// parseNodes makes a client for every node of list. It accepts standalone
// masters only: redis:// and rediss:// URLs and bare host:port. Its errors
// name a node by index and never show its user or password.
func parseNodes(list string) ([]redis.UniversalClient, error) {
	parts := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(parts) == 0 {
		return nil, usagef("--nodes: no nodes: %s", nodesHint)
	}
	var clients []redis.UniversalClient
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	seen := map[string]int{}
	for i, raw := range parts {
		if !strings.Contains(raw, "://") {
			raw = "redis://" + raw
		}
		u, err := url.Parse(raw) // its error quotes the URL, password and all: not shown
		if err != nil || u.Scheme != "redis" && u.Scheme != "rediss" || u.Hostname() == "" || u.Port() == "" {
			closeAll()
			return nil, usagef("--nodes: node %d is not a standalone node with a host and port: %s", i, nodesHint)
		}
		addr := net.JoinHostPort(u.Hostname(), u.Port())
		if j, ok := seen[addr]; ok {
			closeAll()
			return nil, usagef("--nodes: node %d and node %d are the same server (%s): %s", j, i, addr, nodesHint)
		}
		seen[addr] = i
		opt, err := redis.ParseURL(raw)
		if err != nil {
			closeAll()
			return nil, usagef("--nodes: node %d (%s): %s: %s", i, addr, redact(err.Error(), u), nodesHint)
		}
		if !strings.Contains(u.RawQuery, "max_retries") {
			opt.MaxRetries = 1
		}
		if !strings.Contains(u.RawQuery, "dial_timeout") {
			opt.DialTimeout = time.Second
		}
		clients = append(clients, redis.NewClient(opt))
	}
	return clients, nil
}

// redact removes u's user and password from msg.
func redact(msg string, u *url.URL) string {
	if u.User == nil {
		return msg
	}
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "…")
	}
	if n := u.User.Username(); n != "" {
		msg = strings.ReplaceAll(msg, n, "…")
	}
	return msg
}

// checkQuorum PINGs every node at once. With fewer reachable than quorum it
// reports which and returns exitUnavailable and false.
func checkQuorum(ctx context.Context, clients []redis.UniversalClient, quorum int, stderr io.Writer) (int, bool) {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			errs[i] = c.Ping(ctx).Err()
		})
	}
	wg.Wait()
	var down []string
	for i, err := range errs {
		if err != nil {
			down = append(down, fmt.Sprintf("node %d: %s", i, oneLine(err)))
		}
	}
	if up := len(clients) - len(down); up < quorum {
		fmt.Fprintf(stderr, "redlock: demo: only %d of %d nodes reachable, a lock needs %d: %s; check --nodes and that the servers are up\n",
			up, len(clients), quorum, strings.Join(down, "; "))
		return exitUnavailable, false
	}
	if len(down) > 0 {
		fmt.Fprintf(stderr, "redlock: demo: warning: %d of %d nodes unreachable (%s); going on with the others\n", len(down), len(clients), strings.Join(down, "; "))
	}
	return exitOK, true
}
