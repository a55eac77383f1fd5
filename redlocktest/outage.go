package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redlock-go/redlock/redlocktest/history"
)

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
	nd.out = history.FaultStop
	if sig == dc.SIGKILL {
		nd.out = history.FaultKill
	}
	c.log.began(i, nd.out, "")
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
