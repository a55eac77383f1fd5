package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/redlock-go/redlock"
)

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

// oneLine is err's text on one line: the lines of a joined error (one per
// error) are separated by "; ", each without the "redlock: " it starts
// with, since the message that shows it has one of its own.
func oneLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "redlock: ")
	}
	return strings.Join(lines, "; ")
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
		fmt.Fprintf(stderr, "redlock: only %d of %s reachable, a lock needs %d: %s; check --nodes/$%s and that the servers are up\n",
			up, nodesN(len(s.nodes)), s.client.Quorum(), desc, nodesEnv)
		return exitUnavailable, false
	}
	if down > 0 {
		fmt.Fprintf(stderr, "redlock: warning: %d of %s unreachable (%s); going on with the other %d\n", down, nodesN(len(s.nodes)), desc, up)
	}
	return exitOK, true
}
