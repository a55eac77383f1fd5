package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// faultTimeout bounds the Redis commands that ClockJump and ClientPause
// send to a node.
const faultTimeout = 5 * time.Second

// Pause freezes node i with docker pause (the cgroup freezer: SIGSTOP for
// every process of the container). The node keeps its TCP port and
// connections: new connections are still accepted by the kernel, but
// nothing is answered until Unpause, when every command sent in between
// is executed and answered. This is a process pause (GC, swapping, a
// stopped VM) as seen by the clients: commands stall rather than fail, so
// only the clients' own timeouts bound them.
//
// Pausing a paused node does nothing. Stop, Kill, RestartEmpty and Close
// work on a paused node. FlushAll skips it. Pause fails if the node is not
// running (Restart it first) and after Close.
func (c *Cluster) Pause(i int) error {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if c.closed.Load() {
		return errClosed
	}
	if !nd.running {
		return fmt.Errorf("redlocktest: Pause(%d): node is not running; Restart it first", i)
	}
	if nd.paused {
		return nil
	}
	if err := c.pool.Client.PauseContainer(nd.id); err != nil {
		return fmt.Errorf("redlocktest: Pause(%d): docker pause: %w", i, err)
	}
	nd.paused = true
	c.log.began(i, history.FaultPause, "")
	return nil
}

// Unpause thaws node i after Pause. The node then answers the commands it
// received while paused, in order. Unpausing a node that is not paused does
// nothing. Unpause fails after Close.
func (c *Cluster) Unpause(i int) error {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if c.closed.Load() {
		return errClosed
	}
	if !nd.paused {
		return nil
	}
	if err := c.unpause(nd); err != nil {
		return fmt.Errorf("redlocktest: Unpause(%d): docker unpause: %w", i, err)
	}
	c.log.ended(i, history.FaultPause, "")
	return nil
}

// unpause thaws the container of nd; nd.mu must be held. A container that
// is not paused (Docker thaws a container it kills) is not an error.
func (c *Cluster) unpause(nd *node) error {
	err := c.pool.Client.UnpauseContainer(nd.id)
	if err != nil && !strings.Contains(err.Error(), "not paused") {
		return err
	}
	nd.paused = false
	return nil
}

// RestartEmpty simulates a node that loses its data (amnesia): node i is
// killed if it is running (or paused), its container is removed with its
// data and append-only file, and a fresh container is started on the same
// host port, so Addr(i), Client(i) and every Net keep working. It returns
// when the new node answers PING.
//
// Kill followed by Restart cannot show data loss: with appendfsync always
// every acknowledged write survives, and even without persistence a
// SIGKILL leaves the page cache intact. RestartEmpty is how a test shows
// what a node restarting empty does to mutual exclusion and fencing.
//
// It fails if the port has been taken by another process in the meantime
// (the node is then down; call RestartEmpty again or Close) and after
// Close.
func (c *Cluster) RestartEmpty(i int) error {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if c.closed.Load() {
		return errClosed
	}
	start := c.log.now()
	if nd.running {
		if err := c.haltLocked(nd, dc.SIGKILL); err != nil {
			return fmt.Errorf("redlocktest: RestartEmpty(%d): killing the node: %w", i, err)
		}
	}
	if err := c.remove(nd); err != nil {
		return fmt.Errorf("redlocktest: RestartEmpty(%d): removing the old container: %w", i, err)
	}
	nd.id = ""
	_, port, err := net.SplitHostPort(nd.addr)
	if err != nil {
		return fmt.Errorf("redlocktest: RestartEmpty(%d): %w", i, err)
	}
	if err := c.run(nd, port); err != nil {
		if portTaken(err) {
			return fmt.Errorf("redlocktest: RestartEmpty(%d): host port of %s has been taken by another process: %w", i, nd.addr, err)
		}
		return fmt.Errorf("redlocktest: RestartEmpty(%d): starting a fresh container: %w", i, err)
	}
	c.arm(nd.id)
	if err := c.waitReady(nd); err != nil {
		return fmt.Errorf("redlocktest: RestartEmpty(%d): %w", i, err)
	}
	c.back(nd, "restart-empty")
	c.log.span(i, history.FaultAmnesia, "", start, c.log.now())
	return nil
}

// ClockJump makes key expire now on node i, and on no other node: if the
// key has a time to live, it is cut to 1ms (PEXPIRE key 1 XX) and
// ClockJump waits until what it held is gone (the key is absent, or already
// holds something else: a lock handed on in one step, as a release that
// grants the next waiter does, is never absent). This is what a forward jump of
// node i's clock does, since Redis expires keys by wall-clock time: the
// lock key vanishes from that node while its holder still counts on it.
// As with a real clock jump, a key without a TTL (a fencing counter) is
// left alone, and ClockJump on a key that does not exist on node i does
// nothing. It needs Redis 7 (the XX option).
//
// ClockJump fails if node i does not answer within 5s (it is down or
// paused) and after Close.
func (c *Cluster) ClockJump(i int, key string) error {
	if c.closed.Load() {
		return errClosed
	}
	start := c.log.now()
	err := c.clockJump(i, key)
	if err == nil {
		c.log.span(i, history.FaultClockJump, "", start, c.log.now())
	}
	return err
}

// clockJump does the work of ClockJump.
func (c *Cluster) clockJump(i int, key string) error {
	nd := c.nodes[i]
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	// What the key holds now (its serialized value), cut to 1ms in the same
	// step.
	pipe := nd.client.TxPipeline()
	was := pipe.Dump(ctx, key)
	exp := pipe.Do(ctx, "PEXPIRE", key, 1, "XX")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redlocktest: ClockJump(%d, %q): PEXPIRE on %s: %w; is the node running and not paused?", i, key, nd.addr, err)
	}
	if set, _ := exp.Bool(); !set {
		return nil // no such key, or no TTL
	}
	for {
		// On a master, reading an expired key deletes it.
		now, err := nd.client.Dump(ctx, key).Result()
		if errors.Is(err, redis.Nil) || err == nil && now != was.Val() {
			return nil
		}
		if err != nil {
			return fmt.Errorf("redlocktest: ClockJump(%d, %q): DUMP on %s: %w", i, key, nd.addr, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: ClockJump(%d, %q): key still exists on %s 5s after PEXPIRE 1: %w", i, key, nd.addr, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// ClientPause runs CLIENT PAUSE d ALL on node i: for d (rounded up to whole
// milliseconds) the node accepts commands from every client but executes
// none, then executes them in order. Unlike Pause, the node is alive and
// its clock runs: a lock holder whose extend or release stalls past its
// validity sees the time pass. ClientPause returns at once, without waiting
// for the pause to end.
//
// ClientPause fails if d <= 0, if node i does not answer within 5s and
// after Close.
func (c *Cluster) ClientPause(i int, d time.Duration) error {
	nd := c.nodes[i]
	if d <= 0 {
		return fmt.Errorf("redlocktest: ClientPause(%d, %v): the pause must be positive", i, d)
	}
	if c.closed.Load() {
		return errClosed
	}
	millis := int64((d + time.Millisecond - 1) / time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	start := c.log.now()
	if err := nd.client.Do(ctx, "CLIENT", "PAUSE", millis, "ALL").Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (is the node paused?)", err)
		}
		return fmt.Errorf("redlocktest: ClientPause(%d, %v): CLIENT PAUSE on %s: %w", i, d, nd.addr, err)
	}
	c.log.span(i, history.FaultClientPause, ms(d), start, start+d)
	return nil
}
