package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redlock-go/redlock/internal/cliflags"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
	"github.com/redlock-go/redlock/redlocktest/record"
)

// The downstream resource the workers increment.
const demoResource = "counter"

// demo is one run of the demo workload.
type demo struct {
	o      *demoOptions
	client *redlock.Client // for the quorum; the workers have their own
	name   string
	nodes  *redlocktest.Cluster // nil with --nodes: no node faults
	rec    *history.Recorder    // the workers and the nodes record into it
	out    *printer

	// Each worker is a client of its own over these, recording its
	// history through record.As.
	nodeClients []redis.UniversalClient
	opts        redlock.Options

	guard guard.InProcess
	// counter is the downstream store: read and written only inside
	// guard.Do(demoResource, ...), which serializes the accesses.
	counter int64
	seq     int64 // order of accepted writes; under guard.Do like counter

	pauseNext atomic.Bool  // the next worker to read pauses past its lease
	pausing   atomic.Bool  // from pauseNext until the paused worker wrote
	nodesUp   atomic.Int32 // for the progress line
	acquired  atomic.Int64
	accepted  atomic.Int64
	rejected  atomic.Int64

	mu        sync.Mutex // protects rejection and faultLog
	rejection string     // who was rejected, for the summary
	faultLog  []string   // the faults injected, for the summary
}

// printer serializes progress lines from the workers.
type printer struct {
	mu    sync.Mutex // protects w
	w     io.Writer
	start time.Time
	quiet bool
}

func (p *printer) event(important bool, format string, a ...any) {
	if p.quiet && !important {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%5.1fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, a...))
}

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, o := demoFlags(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	case err != nil:
		return reportUsage(stderr, usagef("%s", cliflags.FlagError(err)))
	case fs.NArg() > 0:
		return reportUsage(stderr, usagef("unexpected argument %q: the demo takes flags only", fs.Arg(0)))
	case o.workers < 2:
		return reportUsage(stderr, usagef("--workers %d: want at least 2, so that someone can take over from a paused worker", o.workers))
	case o.duration < 3*time.Second:
		return reportUsage(stderr, usagef("--duration %v: want at least 3s", o.duration))
	case o.ttl < 100*time.Millisecond:
		return reportUsage(stderr, usagef("--ttl %v: want at least 100ms", o.ttl))
	case o.timeline == "":
		return reportUsage(stderr, usagef("--timeline: want a file name"))
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	d := &demo{o: o, rec: history.NewRecorder(), out: &printer{w: stdout, start: time.Now(), quiet: o.quiet}}
	d.opts = redlock.Options{NodeTimeout: o.timeoutFor(), KeyPrefix: o.prefix}
	if strings.TrimSpace(o.nodes) == "" {
		fmt.Fprintln(stdout, "starting 5 local Redis nodes in Docker (redlocktest)...")
		c, err := redlocktest.New(5, &redlocktest.Options{Recorder: d.rec}) // kills and restarts record themselves
		if err != nil {
			fmt.Fprintf(stderr, "redlock: demo: cannot start local Redis nodes: %s; run 'make redis-image' once, or give --nodes\n", oneLine(err))
			return exitUnavailable
		}
		defer c.Close()
		d.nodes, d.name, d.nodeClients = c, "demo", c.Clients()
		fmt.Fprintf(stdout, "nodes: %s\n", strings.Join(c.Addrs(), " "))
	} else {
		clients, err := parseNodes(o.nodes)
		if err != nil {
			return reportUsage(stderr, err)
		}
		defer func() {
			for _, c := range clients {
				_ = c.Close()
			}
		}()
		d.name, d.nodeClients = "redlock-demo", clients
	}
	client, err := redlock.New(d.nodeClients, &d.opts)
	if err != nil {
		return reportUsage(stderr, usagef("%s", trimPrefix(err)))
	}
	defer client.Close()
	d.client = client
	d.nodesUp.Store(int32(len(d.nodeClients)))
	if d.nodes == nil {
		if code, ok := checkQuorum(ctx, d.nodeClients, client.Quorum(), stderr); !ok {
			return code
		}
		fmt.Fprintf(stdout, "nodes: %d given with --nodes (no node faults: the demo cannot kill them)\n", len(d.nodeClients))
	}
	fmt.Fprintf(stdout, "%d workers on lock %q for %v, lease %v, quorum %d; the store rejects fences below the highest it has seen\n",
		o.workers, d.name, o.duration, o.ttl, d.client.Quorum())
	d.out.start = time.Now()
	return d.run(ctx, stdout, stderr)
}

// run runs the workers, the fault script and the progress line for the
// duration, then prints the summary and writes the timeline.
func (d *demo) run(ctx context.Context, stdout, stderr io.Writer) int {
	wctx, cancel := context.WithTimeout(ctx, d.o.duration)
	defer cancel()

	var wg sync.WaitGroup
	for w := range d.o.workers {
		name := fmt.Sprintf("worker %d", w+1)
		c, err := record.As(d.rec, name).New(d.nodeClients, &d.opts)
		if err != nil {
			fmt.Fprintf(stderr, "redlock: demo: %s\n", trimPrefix(err))
			return exitUsage
		}
		defer c.Close()
		wg.Go(func() { d.worker(wctx, ctx, name, c) })
	}
	wg.Go(func() { d.faults(wctx) })
	wg.Go(func() { d.progress(wctx) })
	wg.Wait()

	return d.summary(ctx, stdout, stderr)
}

// worker takes the lock and increments the counter until wctx ends. A
// paused worker finishes its increment (to show its rejection) unless ctx,
// the whole demo, ends.
func (d *demo) worker(wctx, ctx context.Context, name string, c *redlock.Client) {
	for {
		// After the duration, keep going only while a pause is in
		// progress: its stale write is rejected only once someone else
		// has taken the lock.
		parent := wctx
		if wctx.Err() != nil {
			if !d.pausing.Load() || ctx.Err() != nil {
				return
			}
			parent = ctx
		}
		// c records the acquisition, its loss and its release.
		actx, cancel := context.WithTimeout(parent, 5*d.o.ttl)
		l, err := c.Acquire(actx, d.name, d.o.ttl, nil)
		cancel()
		if err != nil {
			if parent.Err() == nil {
				d.out.event(true, "%s: acquire failed: %s", name, trimPrefix(err))
			}
			continue
		}
		d.acquired.Add(1)
		d.increment(ctx, name, l)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = l.Release(rctx) // a lost lease reports ErrLost here; the history has it already
		cancel()
	}
}

// increment is one fenced read-modify-write of the counter under lock l.
func (d *demo) increment(ctx context.Context, name string, l *redlock.Lock) {
	fence := l.Fence()
	var read int64
	if err := d.guard.Do(demoResource, l, func() error { read = d.counter; return nil }); err != nil {
		d.rejected.Add(1)
		d.out.event(true, "%s: fence %d: read REJECTED: %s", name, fence, trimPrefix(err))
		return
	}
	// A little work under the lock.
	sleep(ctx, time.Duration(20+rand.IntN(60))*time.Millisecond)

	if d.pauseNext.CompareAndSwap(true, false) {
		d.pause(ctx, name, l)
		defer d.pausing.Store(false)
	}

	err := record.As(d.rec, name).Write(demoResource, l, read+1, func() (seq int64, err error) {
		err = d.guard.Do(demoResource, l, func() error {
			d.counter = read + 1
			d.seq++
			seq = d.seq
			return nil
		})
		return seq, err
	})
	if err != nil {
		d.rejected.Add(1)
		highest := d.guard.Highest(demoResource)
		d.mu.Lock()
		d.rejection = fmt.Sprintf("%s, fence %d < %d", name, fence, highest)
		d.mu.Unlock()
		d.out.event(true, "%s: fence %d: write %d REJECTED: the store has seen fence %d (stale holder stopped)", name, fence, read+1, highest)
		return
	}
	d.accepted.Add(1)
	d.out.event(false, "%s: fence %d: counter %d -> %d accepted", name, fence, read, read+1)
}

// pause stops worker name between its read and its write, past the end of
// its lease and until another worker has read the counter with a higher
// fence (bounded, in case nobody comes).
func (d *demo) pause(ctx context.Context, name string, l *redlock.Lock) {
	d.rec.Record(history.Event{Kind: history.Fault, Node: -1, Client: name, Fault: history.FaultProcessPause})
	d.logFault(fmt.Sprintf("paused %s past its lease", name))
	d.out.event(true, "FAULT  %s pauses (as in a GC pause) holding fence %d, past its lease ending in %v",
		name, l.Fence(), time.Until(l.ValidUntil()).Round(time.Millisecond))
	sleep(ctx, time.Until(l.ValidUntil())+d.o.ttl/5)
	deadline := time.Now().Add(5 * d.o.ttl)
	for d.guard.Highest(demoResource) <= l.Fence() && time.Now().Before(deadline) && ctx.Err() == nil {
		sleep(ctx, 10*time.Millisecond)
	}
	d.rec.Record(history.Event{Kind: history.Heal, Node: -1, Client: name, Fault: history.FaultProcessPause})
	d.out.event(true, "HEAL   %s resumes %v after its lease ended and writes with fence %d",
		name, time.Since(l.ValidUntil()).Round(time.Millisecond), l.Fence())
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
