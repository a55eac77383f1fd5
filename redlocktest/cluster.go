package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock/redlocktest/history"
	"golang.org/x/sync/errgroup"
)

const (
	redisPort   = "6379/tcp"
	labelKey    = "redlocktest"
	labelExpiry = "redlocktest.expires" // Unix seconds
	labelNode   = "redlocktest.node"
	labelPID    = "redlocktest.pid"

	readyWait     = 30 * time.Second // pool.MaxWait
	pingTimeout   = 2 * time.Second  // per readiness attempt
	dockerTimeout = 30 * time.Second // single Docker API calls
	stopGrace     = 5 * time.Second  // SIGTERM to SIGKILL in Stop
	reapGrace     = time.Minute      // slack before removing expired leftovers
	armWait       = 10 * time.Second // for the expiry timer's stop signal
	portAttempts  = 3
)

// Cluster is a set of independent Redis masters running in Docker
// containers, created by New or Start. Its methods are safe for concurrent
// use; operations on the same node are serialized. Node indexes run from 0
// to Len()-1; the methods taking an index panic if it is out of range.
type Cluster struct {
	pool     *dockertest.Pool
	nodes    []*node
	clients  []*redis.Client
	deadline time.Time
	repo     string   // image repository, for RestartEmpty
	tag      string   // image tag
	args     []string // redis-server arguments

	netsMu sync.Mutex        // protects nets
	nets   map[*Net]struct{} // open Nets, closed by Close

	closed    atomic.Bool
	closeOnce sync.Once
	stopExp   context.CancelFunc // ends the expiry goroutines
	expCtx    context.Context
	expWG     sync.WaitGroup
	log       faultLog // records the faults of the nodes
}

type node struct {
	index  int
	name   string
	addr   string // "127.0.0.1:PORT"
	client *redis.Client

	mu      sync.Mutex // serializes Docker operations on this node
	id      string     // container ID; empty if never created
	running bool
	paused  bool              // docker pause; implies running
	out     history.FaultKind // while not running: FaultKill or FaultStop
}

// New starts n independent Redis masters, each in its own container with
// port 6379 published on a free port of 127.0.0.1, and waits until every
// node answers PING. The nodes start in parallel. opts may be nil.
//
// If the image is not present locally, New makes it once per machine (see
// Images in the package doc). New fails if n < 1, if Docker is
// unreachable, if the image is missing and cannot be made, or if a node
// does not become ready within 30s (the error then includes the tail of the
// container's log). On failure every container already started is removed.
// On success the caller must call Close.
func New(n int, opts *Options) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redlocktest: need at least 1 node, got %d", n)
	}
	o, pool, repo, tag, err := prepare(opts)
	if err != nil {
		return nil, err
	}

	expCtx, stopExp := context.WithCancel(context.Background())
	c := &Cluster{
		pool:     pool,
		nodes:    make([]*node, n),
		clients:  make([]*redis.Client, n),
		deadline: time.Now().Add(o.Expire),
		repo:     repo,
		tag:      tag,
		nets:     make(map[*Net]struct{}),
		log:      faultLog{rec: o.Recorder},
		expCtx:   expCtx,
		stopExp:  stopExp,
	}
	args := []string{"--protected-mode", "no"}
	if o.NoPersistence {
		args = append(args, "--appendonly", "no", "--save", "")
	} else {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	args = append(args, o.Args...)
	c.args = args

	prefix := "redlocktest-" + randomHex(4)
	var g errgroup.Group
	for i := range c.nodes {
		nd := &node{index: i, name: fmt.Sprintf("%s-%d", prefix, i)}
		c.nodes[i] = nd
		g.Go(func() error { return c.create(nd) })
	}
	if err := g.Wait(); err != nil {
		c.Close()
		return nil, err
	}
	for i, nd := range c.nodes {
		c.clients[i] = nd.client
		c.arm(nd.id)
	}
	return c, nil
}

// started is what every Start function does with what its New returned:
// tb.Fatalf if it failed, and Close registered with tb.Cleanup, a Close
// error reported with tb.Errorf.
func started[T interface{ Close() error }](tb testing.TB, c T, err error) T {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return c
}

// Start is New for tests: it skips tb if Docker is unreachable (see
// [RequireDocker]), calls tb.Fatalf if New fails and registers Close with
// tb.Cleanup, reporting a Close error with tb.Errorf.
func Start(tb testing.TB, n int, opts *Options) *Cluster {
	tb.Helper()
	RequireDocker(tb)
	c, err := New(n, opts)
	return started(tb, c, err)
}

// FlushAll runs FLUSHALL on every running node (stopped, killed and paused
// nodes are skipped) and returns the errors joined. It fails after Close.
func (c *Cluster) FlushAll(ctx context.Context) error {
	if c.closed.Load() {
		return errClosed
	}
	var errs []error
	for _, nd := range c.nodes {
		nd.mu.Lock()
		running := nd.running && !nd.paused
		nd.mu.Unlock()
		if !running {
			continue
		}
		if err := nd.client.FlushAll(ctx).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redlocktest: FLUSHALL on node %d (%s): %w", nd.index, nd.addr, err))
		}
	}
	return errors.Join(errs...)
}

// Close removes all containers together with their volumes and closes the
// shared clients. It waits for running operations on the nodes to finish.
// Calling Close more than once is safe; later calls do nothing and return
// nil.
func (c *Cluster) Close() error {
	var err error
	c.closeOnce.Do(func() { err = c.close() })
	return err
}

var errClosed = errors.New("redlocktest: cluster is closed")

func (c *Cluster) close() error {
	c.closed.Store(true)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	c.netsMu.Lock()
	nets := make([]*Net, 0, len(c.nets))
	for n := range c.nets {
		nets = append(nets, n)
	}
	c.netsMu.Unlock()
	for _, n := range nets {
		if err := n.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, nd := range c.nodes {
		if nd == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd.mu.Lock()
			defer nd.mu.Unlock()
			if err := c.remove(nd); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("redlocktest: removing node %d (%s): %w", nd.index, nd.name, err))
				mu.Unlock()
			}
			nd.running = false
			nd.paused = false
			nd.id = ""
		}()
	}
	wg.Wait()
	c.stopExp()
	c.expWG.Wait()
	for _, nd := range c.nodes {
		if nd != nil && nd.client != nil {
			if err := nd.client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
				errs = append(errs, fmt.Errorf("redlocktest: closing client of node %d: %w", nd.index, err))
			}
		}
	}
	return errors.Join(errs...)
}
