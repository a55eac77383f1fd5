package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

const statusUsage = `usage: redlock status [flags] NAME

Show lock NAME on every node: reachable or not, the holder's token
(shortened), the remaining TTL and the fence counter; then whether a quorum
of the nodes currently holds it, for whom.

Exit codes: 0 a quorum of the nodes answered (whether the lock is held or
not); 64 bad usage; 69 fewer nodes answered than a quorum.

` + nodesHelp + `
Every flag falls back to an environment variable: --timeout
$REDLOCK_TIMEOUT, --prefix $REDLOCK_PREFIX, --nodes $REDLOCK_NODES. The
command line wins.

Flags:
`

type statusOptions struct {
	nodeFlags
	timeout time.Duration
}

func statusFlags(out io.Writer) (*flag.FlagSet, *statusOptions) {
	o := &statusOptions{}
	fs := flag.NewFlagSet("redlock status", flag.ContinueOnError)
	fs.SetOutput(out)
	o.register(fs, false)
	fs.DurationVar(&o.timeout, "timeout", time.Second, "how long to wait for each node's answer")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), statusUsage)
		fs.PrintDefaults()
	}
	return fs, o
}

// nodeState is what one node says about a lock.
type nodeState struct {
	err   error
	token string        // "" when the lock key is absent
	ttl   time.Duration // -1: no expiry
	fence string        // "" when there is no counter
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := statusFlags(io.Discard)
	pos, err := parseInterspersed(fs, args)
	if err == nil {
		_, err = applyEnv("status", fs)
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		return reportUsage(stderr, err)
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	case err != nil:
		return reportUsage(stderr, usagef("status", "redlock: status: %v", err))
	case len(pos) == 0 || pos[0] == "":
		return reportUsage(stderr, usagef("status", "redlock: status: missing lock NAME: redlock status [flags] NAME"))
	case len(pos) > 1:
		return reportUsage(stderr, usagef("status", "redlock: status: unexpected argument %q after NAME %q", pos[1], pos[0]))
	case o.timeout <= 0:
		return reportUsage(stderr, usagef("status", "redlock: status: --timeout %v: want a positive duration such as 1s", o.timeout))
	}
	name := pos[0]
	s, code := openSession("status", &o.nodeFlags, 0, stderr)
	if s == nil {
		return code
	}
	defer s.close()

	lockKey, fenceKey := s.client.Keys(name)
	states := readStates(ctx, s.nodes, lockKey, fenceKey, o.timeout)

	fmt.Fprintf(stdout, "lock %q on %d nodes (quorum %d), key %s\n", name, len(s.nodes), s.client.Quorum(), lockKey)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tSTATE\tHOLDER\tTTL\tFENCE")
	up := 0
	for i, st := range states {
		addr := s.nodes[i].addr
		if st.err != nil {
			fmt.Fprintf(tw, "%d\t%s\tunreachable: %s\t-\t-\t-\n", i, addr, oneLine(unwrapAll(st.err)))
			continue
		}
		up++
		holder, ttl, fence := "free", "-", st.fence
		if st.token != "" {
			holder = short(st.token)
			ttl = formatTTL(st.ttl)
		}
		if fence == "" {
			fence = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\tup\t%s\t%s\t%s\n", i, addr, holder, ttl, fence)
	}
	tw.Flush()
	fmt.Fprintln(stdout, quorumLine(states, s.client.Quorum()))
	if up < s.client.Quorum() {
		fmt.Fprintf(stderr, "redlock: only %d of %d nodes answered, a lock needs %d: check --nodes/$%s and that the servers are up\n", up, len(s.nodes), s.client.Quorum(), nodesEnv)
		return exitUnavailable
	}
	return exitOK
}

// readStates asks every node at once for the lock key, its TTL and the
// fence counter, each bounded by timeout.
func readStates(ctx context.Context, nodes []node, lockKey, fenceKey string, timeout time.Duration) []nodeState {
	states := make([]nodeState, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			pipe := n.client.Pipeline()
			get := pipe.Get(ctx, lockKey)
			pttl := pipe.PTTL(ctx, lockKey)
			fence := pipe.Get(ctx, fenceKey)
			_, err := pipe.Exec(ctx)
			if err != nil && !errors.Is(err, redis.Nil) {
				states[i].err = err
				return
			}
			// The key holds "<token>.<attempt>": the owner is the token,
			// whichever attempt of its Acquire call reached this node.
			states[i].token, _, _ = strings.Cut(get.Val(), ".")
			states[i].ttl = pttl.Val()
			states[i].fence = fence.Val()
		})
	}
	wg.Wait()
	return states
}

func formatTTL(d time.Duration) string {
	switch {
	case d == -1:
		return "no expiry"
	case d < 0:
		return "expired"
	default:
		return d.Round(time.Millisecond).String()
	}
}

// quorumLine says whether a quorum of the nodes holds the lock, for whom.
func quorumLine(states []nodeState, quorum int) string {
	count := map[string]int{}
	minTTL := map[string]time.Duration{}
	for _, st := range states {
		if st.err != nil || st.token == "" {
			continue
		}
		count[st.token]++
		if t, ok := minTTL[st.token]; !ok || st.ttl < t {
			minTTL[st.token] = st.ttl
		}
	}
	tokens := make([]string, 0, len(count))
	for tok := range count {
		tokens = append(tokens, tok)
	}
	sort.Slice(tokens, func(i, j int) bool { return count[tokens[i]] > count[tokens[j]] })
	if len(tokens) > 0 && count[tokens[0]] >= quorum {
		tok := tokens[0]
		return fmt.Sprintf("held by quorum: yes (token %s, %d/%d nodes, %s left)", short(tok), count[tok], len(states), formatTTL(minTTL[tok]))
	}
	if len(tokens) == 0 {
		return "held by quorum: no (free on every node that answered)"
	}
	return fmt.Sprintf("held by quorum: no (best: token %s on %d/%d nodes, quorum %d)", short(tokens[0]), count[tokens[0]], len(states), quorum)
}
