package redlocktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

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
	return waitPinged(c.pool, nd.id, fmt.Sprintf("%s (container %s)", nd.addr, nd.name),
		func(ctx context.Context) error { return nd.client.Ping(ctx).Err() })
}

// waitPinged calls ping until it answers, giving up early with the
// container's log if container id (described by what, in errors) has
// exited.
func waitPinged(pool *dockertest.Pool, id, what string, ping func(ctx context.Context) error) error {
	var pingErr, exitErr error
	err := pool.Retry(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		defer cancel()
		if pingErr = ping(ctx); pingErr == nil {
			return nil
		}
		ctr, err := pool.Client.InspectContainerWithContext(id, ctx)
		if err == nil && !ctr.State.Running {
			exitErr = fmt.Errorf("redlocktest: redis-server of %s exited with code %d; log: %s",
				what, ctr.State.ExitCode, logTail(pool, id))
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
		return fmt.Errorf("redlocktest: %s did not answer PING within %v: %v; log: %s",
			what, pool.MaxWait, pingErr, logTail(pool, id))
	}
}

// logTail returns the last lines of container id's log.
func logTail(pool *dockertest.Pool, id string) string {
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := pool.Client.Logs(dc.LogsOptions{
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
