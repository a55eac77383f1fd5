package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock/redlocktest/history"
	"golang.org/x/sync/errgroup"
)

const (
	// DefaultImage is the image used when neither Options.Image nor the
	// REDLOCK_REDIS_IMAGE environment variable is set.
	DefaultImage = "redis:7"

	// DefaultExpire is the container lifetime used when Options.Expire is
	// zero.
	DefaultExpire = 30 * time.Minute

	// ImageEnv is the environment variable that overrides DefaultImage.
	ImageEnv = "REDLOCK_REDIS_IMAGE"
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

// Options configures New. A nil *Options means defaults; so does the zero
// value of every field.
type Options struct {
	// Image is the Redis image, "repository[:tag]" (tag defaults to
	// "latest"). It must be present locally; it is never pulled.
	// Default: $REDLOCK_REDIS_IMAGE, else "redis:7". The image must accept
	// redis-server options as its command, as both the official image and
	// the one built by scripts/redis-image.sh do.
	Image string

	// NoPersistence, if true, runs the nodes without any persistence
	// (--appendonly no --save ""), so a restarted node comes back empty.
	// Default false: nodes run with --appendonly yes --appendfsync always,
	// so every acknowledged write (fencing counters in particular) survives
	// Stop, Kill and Restart.
	NoPersistence bool

	// Recorder, if set, records every fault of the Cluster and of its Nets
	// as it begins and ends: a history.Fault and a history.Heal event with
	// the fault's kind (history.FaultKill ... history.FaultHold), for the
	// checker's report and the timeline's fault lanes.
	Recorder *history.Recorder

	// Args are extra redis-server arguments, such as
	// []string{"--maxmemory", "64mb"}. They come after the arguments
	// redlocktest sets (--protected-mode no and the persistence options),
	// so they can override them.
	Args []string

	// Expire bounds the lifetime of the containers, counted from New:
	// Docker kills them after this long even if the test process died
	// without calling Close. It is rounded up to whole seconds and is not
	// extended by Restart. Default 30m; negative is an error.
	Expire time.Duration
}

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
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Image == "" {
		o.Image = os.Getenv(ImageEnv)
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	switch {
	case o.Expire == 0:
		o.Expire = DefaultExpire
	case o.Expire < 0:
		return nil, fmt.Errorf("redlocktest: negative Options.Expire %v", o.Expire)
	}
	repo, tag, err := splitImage(o.Image)
	if err != nil {
		return nil, err
	}

	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("redlocktest: cannot create a Docker client (check DOCKER_HOST): %w", err)
	}
	pool.MaxWait = readyWait
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = pool.Client.PingWithContext(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("redlocktest: Docker is not reachable at %s (is the Docker daemon running? set DOCKER_HOST to use another one): %w",
			pool.Client.Endpoint(), err)
	}
	ref := repo + ":" + tag
	if err := ensureImage(pool, ref); err != nil {
		return nil, err
	}
	reapExpired(pool)

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

// Start is New for tests: it calls tb.Fatalf if New fails and registers
// Close with tb.Cleanup, reporting a Close error with tb.Errorf.
func Start(tb testing.TB, n int, opts *Options) *Cluster {
	tb.Helper()
	c, err := New(n, opts)
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

// Len returns the number of nodes.
func (c *Cluster) Len() int { return len(c.nodes) }

// Addr returns the address of node i, "127.0.0.1:PORT". It does not change
// when the node is stopped and restarted.
func (c *Cluster) Addr(i int) string { return c.nodes[i].addr }

// Addrs returns the addresses of all nodes, in node order, as a new slice.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		addrs[i] = nd.addr
	}
	return addrs
}

// Client returns the go-redis client of node i. There is one client per
// node, created by New and shared by all callers; it is safe for concurrent
// use, survives Stop/Restart of the node, and is closed by Close, so
// callers must not close it. While the node is down commands fail with a
// "connection refused" error within about 100ms. The client uses the
// go-redis defaults except: ContextTimeoutEnabled is true, so context
// deadlines bound every command; DialerRetries is 1, so a down node fails
// fast (commands are still retried MaxRetries times); maintenance
// notifications are off.
func (c *Cluster) Client(i int) *redis.Client { return c.clients[i] }

// Clients returns the shared clients of all nodes (see Client), in node
// order, as a new slice.
func (c *Cluster) Clients() []redis.UniversalClient {
	clients := make([]redis.UniversalClient, len(c.clients))
	for i, cl := range c.clients {
		clients[i] = cl
	}
	return clients
}

// Stop shuts node i down cleanly, keeping its data: it sends SIGTERM, lets
// Redis finish writing, and sends SIGKILL if the container has not exited
// after 5s. When Stop returns the node no longer accepts connections.
// Stopping a node that is not running does nothing. Stop fails after Close.
func (c *Cluster) Stop(i int) error {
	return c.halt(i, dc.SIGTERM)
}

// Kill kills node i with SIGKILL, simulating a crash. With the default
// persistence (appendfsync always) no acknowledged write is lost. When Kill
// returns the node no longer accepts connections. Killing a node that is
// not running does nothing. Kill fails after Close.
func (c *Cluster) Kill(i int) error {
	return c.halt(i, dc.SIGKILL)
}

// Restart starts node i again after Stop or Kill, with the same data (unless
// Options.NoPersistence) and on the same host port, and waits until it
// answers PING. It fails if the node is running, if the port has been taken
// by another process in the meantime, or after Close.
func (c *Cluster) Restart(i int) error {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if c.closed.Load() {
		return errClosed
	}
	if nd.running {
		return fmt.Errorf("redlocktest: Restart(%d): node is running; Stop or Kill it first", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	err := c.pool.Client.StartContainerWithContext(nd.id, nil, ctx)
	cancel()
	var already *dc.ContainerAlreadyRunning
	if err != nil && !errors.As(err, &already) {
		if portTaken(err) {
			return fmt.Errorf("redlocktest: Restart(%d): host port of %s has been taken by another process: %w", i, nd.addr, err)
		}
		return fmt.Errorf("redlocktest: Restart(%d): %w", i, err)
	}
	nd.running = true
	c.arm(nd.id)
	if err := c.waitReady(nd); err != nil {
		return fmt.Errorf("redlocktest: Restart(%d): %w", i, err)
	}
	c.back(nd, "restart")
	return nil
}

// back records the end of nd's outage (Kill or Stop), if any; nd.mu must
// be held.
func (c *Cluster) back(nd *node, how string) {
	if nd.out != "" {
		c.log.ended(nd.index, nd.out, how)
		nd.out = ""
	}
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
