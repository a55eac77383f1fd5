package redlocktest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

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
