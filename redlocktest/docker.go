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
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/redlock-go/redlock/redlocktest/history"
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
