package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"golang.org/x/sync/errgroup"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// RedisCluster is a Redis Cluster of masters without replicas, each in its
// own container on the Docker bridge network, the hash slots split evenly
// among them. The addresses are the containers' bridge addresses, which is
// what the cluster announces: the test process must reach that network, as
// it does on Linux. As a lock node it is one node, reached through the
// cluster client Client returns. (Not to be confused with Cluster, a set of
// independent masters.)
type RedisCluster struct {
	d      *deployment
	addrs  []string
	admin  []*redis.Client
	client *redis.ClusterClient
}

// NewRedisCluster starts masters Redis servers with cluster-enabled, gives
// each an even share of the slots (CLUSTER ADDSLOTSRANGE), introduces them
// (CLUSTER MEET) and waits until every one reports the cluster ok and the
// cluster client answers. opts may be nil; Image, NoPersistence, Args and
// Expire apply as for New. On failure every container already started is
// removed; on success the caller must call Close.
func NewRedisCluster(masters int, opts *Options) (*RedisCluster, error) {
	if masters < 1 {
		return nil, fmt.Errorf("redlocktest: need at least 1 master, got %d", masters)
	}
	d, err := newDeployment("cluster", opts)
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{d: d}
	if err := c.start(masters); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

func (c *RedisCluster) start(masters int) error {
	args := append(append([]string{}, c.d.args...),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
	c.addrs = make([]string, masters)
	c.admin = make([]*redis.Client, masters)
	var g errgroup.Group
	for i := 0; i < masters; i++ {
		g.Go(func() error {
			srv, err := c.d.start(serverSpec{args: args})
			if err != nil {
				return fmt.Errorf("redlocktest: Redis Cluster master %d: %w", i, err)
			}
			c.addrs[i] = srv.ip + ":6379"
			c.admin[i] = newClient(c.addrs[i])
			return c.d.waitReady(srv, func(ctx context.Context) error { return c.admin[i].Ping(ctx).Err() })
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	for i, cl := range c.admin {
		lo, hi := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("redlocktest: Redis Cluster master %d: CLUSTER ADDSLOTSRANGE %d %d: %w", i, lo, hi, err)
		}
		if i > 0 {
			host, port, _ := strings.Cut(c.addrs[i], ":")
			if err := c.admin[0].ClusterMeet(ctx, host, port).Err(); err != nil {
				return fmt.Errorf("redlocktest: Redis Cluster: CLUSTER MEET %s: %w", c.addrs[i], err)
			}
		}
	}
	want := fmt.Sprintf("cluster_known_nodes:%d", masters)
	for {
		ok := true
		for _, cl := range c.admin {
			info, err := cl.ClusterInfo(ctx).Result()
			ok = ok && err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: Redis Cluster not ok within %v", readyWait)
		case <-time.After(50 * time.Millisecond):
		}
	}
	c.client = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                    c.addrs,
		DialerRetries:            1,
		ContextTimeoutEnabled:    true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	return c.client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Ping(ctx).Err()
	})
}

// StartRedisCluster is NewRedisCluster for tests: it skips tb if Docker
// is unreachable (see [RequireDocker]), calls tb.Fatalf if NewRedisCluster
// fails and registers Close with tb.Cleanup, reporting a Close error with
// tb.Errorf.
func StartRedisCluster(tb testing.TB, masters int, opts *Options) *RedisCluster {
	tb.Helper()
	RequireDocker(tb)
	c, err := NewRedisCluster(masters, opts)
	return started(tb, c, err)
}

// Client returns the cluster client (go-redis NewClusterClient) of the
// cluster: one lock node. It is shared and closed by Close; callers must
// not close it.
func (c *RedisCluster) Client() *redis.ClusterClient { return c.client }

// Addrs returns the masters' addresses, "IP:6379", in start order, as a
// new slice.
func (c *RedisCluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Master returns a client of master i alone (no redirections), for
// inspecting what it holds. It is shared and closed by Close.
func (c *RedisCluster) Master(i int) *redis.Client { return c.admin[i] }

// Close removes the containers and closes the clients.
func (c *RedisCluster) Close() error {
	errs := []error{c.d.close()}
	if c.client != nil {
		errs = append(errs, c.client.Close())
	}
	for _, cl := range c.admin {
		if cl == nil {
			continue
		}
		if err := cl.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
	}
	c.client, c.admin = nil, nil
	return errors.Join(errs...)
}
