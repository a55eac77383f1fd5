package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
	"unicode"
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

// register adds --nodes, --prefix, --node-timeout and the TLS flags. For
// the commands that take locks (run, elect: look 0) --node-timeout's
// default follows --ttl; for those that only look at them (status, leader,
// break) it is look, and --timeout, its old name, is an alias.
func (n *nodeFlags) register(fs *flag.FlagSet, look time.Duration) {
	fs.StringVar(&n.nodes, "nodes", "", "node `URLs`, separated by commas or spaces (see 'Nodes' above); keep passwords in $"+nodesEnv+", not here")
	fs.StringVar(&n.prefix, "prefix", "", "key prefix, as in redlock.Options.KeyPrefix (default \"redlock:\")")
	if look == 0 {
		fs.DurationVar(&n.nodeTimeout, "node-timeout", 0, "per-node round-trip timeout (default ttl/50, within 100ms..500ms)")
	} else {
		fs.DurationVar(&n.nodeTimeout, "node-timeout", look, "how long to wait for each node's answer")
		fs.DurationVar(&n.nodeTimeout, "timeout", look, "--node-timeout's old name ($REDLOCK_TIMEOUT): the same flag")
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

// splitNodes splits a node list at whitespace and commas. A comma inside a
// URL (in a password or an option) must be percent-encoded: a piece right
// after a comma that is neither the next URL nor a bare host[:port] (it has
// an @, say), or any piece right after a URL with options, means a raw
// comma split a URL, and is an error that shows no part of the list. A
// comma with no node before the next one, before the list's first node or
// at its end leaves a node empty (an unset variable in "$A,$B,$C"?): an
// error naming its index.
func splitNodes(list string) ([]string, error) {
	isSep := func(r rune) bool { return r == ',' || unicode.IsSpace(r) }
	var out []string
	for {
		// The separators up to the next node, then the node.
		start := strings.IndexFunc(list, func(r rune) bool { return !isSep(r) })
		if start < 0 {
			start = len(list)
		}
		sep := list[:start]
		commas := strings.Count(sep, ",")
		list = list[start:]
		end := strings.IndexFunc(list, isSep)
		if end < 0 {
			end = len(list)
		}
		part := list[:end]
		list = list[end:]
		switch {
		case part == "" && commas > 0:
			return nil, emptyNode(len(out), "the list ends with a comma")
		case part == "":
			return out, nil
		case len(out) == 0 && commas > 0:
			return nil, emptyNode(0, "the list starts with a comma")
		case len(out) > 0 && commas == len(sep) && commas > 0:
			prev := out[len(out)-1]
			if !startsWithScheme(part) && (!bareHost(part) || strings.Contains(prev, "?")) {
				return nil, fmt.Errorf("node %d has a raw comma in its user, password or options: percent-encode it as %%2C", len(out)-1)
			}
		}
		if commas > 1 {
			return nil, emptyNode(len(out), fmt.Sprintf("two commas after node %d", len(out)-1))
		}
		out = append(out, part)
	}
}

// emptyNode is the error for an empty node i of a list, found where.
func emptyNode(i int, where string) error {
	return fmt.Errorf("node %d is empty (%s; an unset variable?): give HOST:PORT or redis://HOST:PORT there, or remove the comma", i, where)
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
