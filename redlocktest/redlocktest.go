// Package redlocktest starts independent Redis masters in Docker containers
// and injects faults into them, for tests and examples of package redlock
// and of code that runs critical sections under its locks, in the spirit
// of net/http/httptest.
//
// A Cluster is n unrelated Redis servers (no replication, no Redis Cluster),
// each in its own container with its port published on 127.0.0.1 only.
// Nodes can be stopped, killed and restarted to simulate failures; a
// restarted node keeps its host port, so addresses and the shared go-redis
// clients stay valid, and, unless Options.NoPersistence is set, keeps its
// data, because every node runs with an append-only file fsynced on every
// write.
//
// # Faults
//
// Faults of a node, seen by every client:
//
//   - [Cluster.Kill] (SIGKILL, a crash) and [Cluster.Stop] (clean
//     shutdown), then [Cluster.Restart]: the node comes back with its data.
//   - [Cluster.RestartEmpty]: the node comes back with no data (amnesia),
//     the one way to show what a lost lock key or fencing counter does;
//     a SIGKILL alone loses nothing, since the page cache survives it.
//   - [Cluster.Pause] and [Cluster.Unpause] (docker pause): the node
//     freezes; connections are accepted, nothing is answered.
//   - [Cluster.ClockJump]: a key expires now on one node, which is what a
//     forward jump of that node's clock does to Redis expiry.
//   - [Cluster.ClientPause] (CLIENT PAUSE): commands stall for a while on a
//     live node, so time passes for their sender, as when the lock holder
//     itself is paused past its validity.
//
// Faults of one client's network path, seen by that client only: each
// [Net] from [Cluster.NewNet] is a simulated client with its own TCP
// proxy to every node (an embedded github.com/Shopify/toxiproxy/v2 proxy)
// and its own go-redis clients through them. [Net.Down] refuses and cuts
// connections, [Net.Blackhole] swallows every byte (a partition: no error,
// no answer), [Net.Latency] delays replies, [Net.Heal] undoes them. Two
// Nets on one Cluster are two clients on either side of a partition.
//
// A typical chaos test acquires a lock through the clients of a Net,
// injects a fault partway through the lease, and checks what the holder
// and the other clients observed:
//
//	c := redlocktest.Start(t, 5, nil)
//	a, _ := c.NewNet("a")
//	b, _ := c.NewNet("b")
//	// lock with a.Clients(), then:
//	a.Blackhole(0); a.Blackhole(1); a.Blackhole(2) // a loses its majority
//	c.ClockJump(3, "lock-key")                     // and a node forgets early
//	// lock with b.Clients() and check that a was told before b got it.
//
// # Images and cleanup
//
// The Redis image is never pulled implicitly: it must be present locally.
// Run `make redis-image` (scripts/redis-image.sh) once to pull it or, where
// no registry is reachable, to build it from the host's redis-server binary.
//
// Containers are labelled redlocktest=1. Docker itself kills them after
// Options.Expire even if the test process dies without calling Close, and
// later calls to New remove such expired leftovers. To remove everything by
// hand:
//
//	docker rm -f -v $(docker ps -aq --filter label=redlocktest=1)
package redlocktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
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
}

type node struct {
	index  int
	name   string
	addr   string // "127.0.0.1:PORT"
	client *redis.Client

	mu      sync.Mutex // serializes Docker operations on this node
	id      string     // container ID; empty if never created
	running bool
	paused  bool // docker pause; implies running
}

// New starts n independent Redis masters, each in its own container with
// port 6379 published on a free port of 127.0.0.1, and waits until every
// node answers PING. The nodes start in parallel. opts may be nil.
//
// New fails if n < 1, if Docker is unreachable, if the image is not present
// locally (it is never pulled; see scripts/redis-image.sh), or if a node
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
	if _, err := pool.Client.InspectImage(ref); err != nil {
		if errors.Is(err, dc.ErrNoSuchImage) {
			return nil, fmt.Errorf("redlocktest: image %q is not present locally and cannot be pulled here; run 'make redis-image' (scripts/redis-image.sh) to build it", ref)
		}
		return nil, fmt.Errorf("redlocktest: cannot inspect image %q: %w", ref, err)
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
	return nil
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

// create starts the container of nd, retrying with another port if the
// chosen one was grabbed in between, and waits until it answers PING.
func (c *Cluster) create(nd *node) error {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("redlocktest: node %d: finding a free port on 127.0.0.1: %w", nd.index, err)
		}
		if err := c.run(nd, port); err != nil {
			if portTaken(err) {
				lastErr = err
				continue
			}
			return fmt.Errorf("redlocktest: node %d: starting container: %w", nd.index, err)
		}
		nd.addr = net.JoinHostPort("127.0.0.1", port)
		nd.client = newClient(nd.addr)
		if err := c.waitReady(nd); err != nil {
			return fmt.Errorf("redlocktest: node %d: %w", nd.index, err)
		}
		return nil
	}
	return fmt.Errorf("redlocktest: node %d: no free port on 127.0.0.1 after %d attempts: %w", nd.index, portAttempts, lastErr)
}

// run creates and starts a fresh container for nd, named nd.name, with
// Redis published on 127.0.0.1:port. It does not wait for PING. On failure
// no container is left behind.
func (c *Cluster) run(nd *node, port string) error {
	res, err := c.pool.RunWithOptions(&dockertest.RunOptions{
		Name:         nd.name,
		Repository:   c.repo,
		Tag:          c.tag,
		Cmd:          c.args,
		ExposedPorts: []string{redisPort},
		PortBindings: map[dc.Port][]dc.PortBinding{
			redisPort: {{HostIP: "127.0.0.1", HostPort: port}},
		},
		Labels: map[string]string{
			labelKey:    "1",
			labelExpiry: strconv.FormatInt(c.deadline.Unix(), 10),
			labelNode:   strconv.Itoa(nd.index),
			labelPID:    strconv.Itoa(os.Getpid()),
		},
	}, func(hc *dc.HostConfig) {
		// dockertest sets PublishAllPorts, which would publish any
		// other port the image exposes on 0.0.0.0.
		hc.PublishAllPorts = false
		hc.RestartPolicy = dc.NeverRestart()
	})
	if err != nil {
		// A failed start leaves the created container behind.
		_ = c.pool.RemoveContainerByName(nd.name)
		return err
	}
	nd.id = res.Container.ID
	nd.running = true
	nd.paused = false
	return nil
}

func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     addr,
		DialerRetries:            1,
		ContextTimeoutEnabled:    true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// waitReady PINGs nd with pool.Retry until it answers, giving up early with
// the container's log if the container has exited.
func (c *Cluster) waitReady(nd *node) error {
	var pingErr, exitErr error
	err := c.pool.Retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		defer cancel()
		if pingErr = nd.client.Ping(ctx).Err(); pingErr == nil {
			return nil
		}
		ctr, err := c.pool.Client.InspectContainerWithContext(nd.id, ctx)
		if err == nil && !ctr.State.Running {
			exitErr = fmt.Errorf("redis-server in container %s exited with code %d; log: %s",
				nd.name, ctr.State.ExitCode, c.logTail(nd.id))
			return backoff.Permanent(exitErr)
		}
		return pingErr
	})
	switch {
	case err == nil:
		return nil
	case exitErr != nil:
		return exitErr
	default:
		return fmt.Errorf("%s (container %s) did not answer PING within %v: %v; log: %s",
			nd.addr, nd.name, c.pool.MaxWait, pingErr, c.logTail(nd.id))
	}
}

// logTail returns the last lines of the container's output, for errors.
func (c *Cluster) logTail(id string) string {
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.pool.Client.Logs(dc.LogsOptions{
		Context:      ctx,
		Container:    id,
		OutputStream: &buf,
		ErrorStream:  &buf,
		Stdout:       true,
		Stderr:       true,
		Tail:         "10",
	})
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return strings.TrimSpace(buf.String())
}

// halt sends sig to node i and waits until its container has exited. For
// SIGTERM it falls back to SIGKILL after stopGrace.
func (c *Cluster) halt(i int, sig dc.Signal) error {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	op := "Kill"
	if sig != dc.SIGKILL {
		op = "Stop"
	}
	if c.closed.Load() {
		return errClosed
	}
	if !nd.running {
		return nil
	}
	if err := c.haltLocked(nd, sig); err != nil {
		return fmt.Errorf("redlocktest: %s(%d): %w", op, i, err)
	}
	return nil
}

// haltLocked does the work of halt; nd.mu must be held and nd running.
func (c *Cluster) haltLocked(nd *node, sig dc.Signal) error {
	if nd.paused && sig != dc.SIGKILL {
		// A frozen process cannot handle SIGTERM: thaw it first.
		if err := c.unpause(nd); err != nil {
			return err
		}
	}
	if err := c.signal(nd, sig); err != nil {
		return err
	}
	if nd.paused {
		// Docker thaws a paused container after sending it SIGKILL;
		// other engines may not. The kill is already pending, so the
		// node cannot answer anything in between.
		_ = c.unpause(nd)
	}
	wait := dockerTimeout
	if sig != dc.SIGKILL {
		wait = stopGrace
	}
	err := c.wait(nd, wait)
	if err != nil && sig != dc.SIGKILL {
		if err = c.signal(nd, dc.SIGKILL); err == nil {
			err = c.wait(nd, dockerTimeout)
		}
	}
	if err != nil {
		return fmt.Errorf("waiting for the container to exit: %w", err)
	}
	nd.running = false
	nd.paused = false
	return nil
}

func (c *Cluster) signal(nd *node, sig dc.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	err := c.pool.Client.KillContainer(dc.KillContainerOptions{ID: nd.id, Signal: sig, Context: ctx})
	var notRunning *dc.ContainerNotRunning
	if errors.As(err, &notRunning) {
		return nil
	}
	return err
}

func (c *Cluster) wait(nd *node, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := c.pool.Client.WaitContainerWithContext(nd.id, ctx)
	return err
}

// remove force-removes the container of nd with its volumes.
func (c *Cluster) remove(nd *node) error {
	if nd.id == "" {
		return nil
	}
	if nd.paused {
		// Some engines cannot kill a frozen container cleanly.
		_ = c.unpause(nd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	err := c.pool.Client.RemoveContainer(dc.RemoveContainerOptions{
		ID: nd.id, Force: true, RemoveVolumes: true, Context: ctx,
	})
	var noSuch *dc.NoSuchContainer
	if errors.As(err, &noSuch) {
		return nil
	}
	return err
}

// arm asks Docker to stop (kill, since dockertest gives containers an
// ignored stop signal) container id when the cluster's deadline passes. The
// daemon keeps the timer even if this process dies. The request returns
// early when the container exits (Stop, Kill, Close), so Restart re-arms
// it. This is dockertest's Resource.Expire, but with a goroutine that Close
// can cancel and wait for, so that no goroutine outlives the Cluster.
//
// arm returns once the daemon has sent the container that stop signal:
// Docker thaws a paused container when it sends it its stop signal, so a
// request still in flight would undo a Pause that follows.
func (c *Cluster) arm(id string) {
	secs := math.Ceil(time.Until(c.deadline).Seconds())
	if secs < 1 {
		secs = 1
	}
	since := time.Now()
	ctx, cancel := context.WithTimeout(c.expCtx, armWait)
	defer cancel()
	c.expWG.Add(1)
	go func() {
		defer c.expWG.Done()
		defer cancel() // the container has exited: no signal to wait for
		_ = c.pool.Client.StopContainerWithContext(id, uint(secs), c.expCtx)
	}()
	c.waitKillEvent(ctx, id, since)
}

// waitKillEvent waits until the Docker daemon reports a "kill" event (a
// signal sent) for container id at or after since, or ctx ends. It is best
// effort: errors end the wait.
func (c *Cluster) waitKillEvent(ctx context.Context, id string, since time.Time) {
	filters, _ := json.Marshal(map[string][]string{
		"type":      {"container"},
		"container": {id},
		"event":     {"kill"},
	})
	q := url.Values{}
	q.Set("since", fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()))
	q.Set("filters", string(filters))
	base := c.pool.Client.Endpoint()
	if strings.HasPrefix(base, "unix://") {
		base = "http://unix.sock" // the client's transport dials the socket
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/events?"+q.Encode(), nil)
	if err != nil {
		return
	}
	resp, err := c.pool.Client.HTTPClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Action string
			Actor  struct{ ID string }
		}
		if err := dec.Decode(&ev); err != nil {
			return
		}
		if ev.Action == "kill" && ev.Actor.ID == id {
			return
		}
	}
}

// reapExpired removes, best effort, redlocktest containers whose lifetime
// ended more than reapGrace ago: leftovers of test processes that died
// without calling Close (Docker killed them but keeps them and their
// volumes).
func reapExpired(pool *dockertest.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	list, err := pool.Client.ListContainers(dc.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {labelKey + "=1"}},
		Context: ctx,
	})
	if err != nil {
		return
	}
	now := time.Now()
	for _, ctr := range list {
		exp, err := strconv.ParseInt(ctr.Labels[labelExpiry], 10, 64)
		if err != nil || now.Before(time.Unix(exp, 0).Add(reapGrace)) {
			continue
		}
		_ = pool.Client.RemoveContainer(dc.RemoveContainerOptions{
			ID: ctr.ID, Force: true, RemoveVolumes: true, Context: ctx,
		})
	}
}

// splitImage splits "repository[:tag]" as dockertest.RunOptions wants it.
func splitImage(image string) (repo, tag string, err error) {
	if strings.Contains(image, "@") {
		return "", "", fmt.Errorf("redlocktest: image %q: digest references are not supported; tag the image and use the tag", image)
	}
	repo, tag = image, "latest"
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, tag = image[:i], image[i+1:]
	}
	if repo == "" || tag == "" {
		return "", "", fmt.Errorf("redlocktest: invalid image reference %q", image)
	}
	return repo, tag, nil
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// portTaken reports whether err is Docker failing to publish a port that
// is already in use.
func portTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
