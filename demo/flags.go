package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/redlock-go/redlock/internal/cliflags"
)

const demoUsage = `usage: make demo DEMO_FLAGS="[flags]"   (or, in demo/: go run . [flags])

Start 5 local Redis nodes in Docker (through redlocktest; the image redis:7,
or $REDLOCK_REDIS_IMAGE, must be present: make redis-image), then run
--workers workers on one lock. Each in turn acquires the lock, reads a
counter in a downstream store with its fence, works a little and writes
counter+1 with its fence; the store (guard.InProcess) rejects an access
whose fence is below the highest it has seen. Partway through, the demo
kills node 0 and restarts it, kills nodes 1 and 2 and restarts them, and
pauses one worker between its read and its write until its lease has
ended and another worker has taken the lock: that stale write is rejected.

At the end it prints a summary, checks the recorded history with
history.Check and writes an HTML timeline (--timeline).

With --nodes (not $REDLOCK_NODES) the same workload runs on those nodes,
without node faults: the demo cannot kill them. They are standalone
masters: redis://[user:password@]host:port[/db], rediss:// or host:port. The worker pause still
happens. The demo uses the lock name "redlock-demo" there.

Exit codes: 0 nothing lost and no stale write accepted; 1 otherwise (or the
checker found a violation); 64 bad usage; 69 the nodes could not be started
or reached.

Flags:
`

type demoOptions struct {
	nodes       string
	prefix      string
	nodeTimeout time.Duration
	workers     int
	duration    time.Duration
	ttl         time.Duration
	timeline    string
	quiet       bool
}

func demoFlags(out io.Writer) (*flag.FlagSet, *demoOptions) {
	o := &demoOptions{}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.nodes, "nodes", "", "run on these node `URLs` instead of 5 local nodes (no node faults then)")
	fs.StringVar(&o.prefix, "prefix", "", "key prefix (default \"redlock:\")")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", 0, "per-node round-trip timeout (default ttl/50, within 100ms..500ms)")
	fs.IntVar(&o.workers, "workers", 4, "number of workers competing for the lock")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long the workers run")
	fs.DurationVar(&o.ttl, "ttl", time.Second, "lease of each acquisition")
	fs.StringVar(&o.timeline, "timeline", filepath.Join(os.TempDir(), "redlock-demo-timeline.html"), "where to write the HTML timeline")
	fs.BoolVar(&o.quiet, "q", false, "print faults, rejections and the summary only, not every increment")
	cliflags.SetUsage(fs, demoUsage)
	return fs, o
}

// timeoutFor is the per-node timeout: --node-timeout, else ttl/50 within
// 100ms..500ms, as the redlock command's.
func (o *demoOptions) timeoutFor() time.Duration {
	if o.nodeTimeout > 0 {
		return o.nodeTimeout
	}
	return min(max(o.ttl/50, 100*time.Millisecond), 500*time.Millisecond)
}
