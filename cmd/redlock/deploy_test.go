package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// TestSentinelClusterRun runs the built binary over a Sentinel-managed
// master, a Redis Cluster and a plain master, given as
// redis+sentinel://, redis+cluster:// and redis:// URLs.
func TestSentinelClusterRun(t *testing.T) {
	s := redlocktest.StartSentinel(t, nil)
	rc := redlocktest.StartRedisCluster(t, 3, nil)
	addrs := rc.Addrs()
	nodes := strings.Join([]string{
		"redis+sentinel://" + s.SentinelAddr() + "?master_name=" + redlocktest.SentinelMaster + "&max_retries=2",
		"redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2],
		"redis://" + cluster(t).Addr(0),
	}, ",")
	name := lockName(t)
	// A generous node timeout: a node answering late under load would
	// leave its counter behind, which is not what this test looks at.
	code, stdout, stderr := execCLI(t, "run", "--nodes", nodes, "--node-timeout", "5s", name, "--", "sh", "-c", `echo "$REDLOCK_FENCE"`)
	fence, err := strconv.ParseUint(strings.TrimSpace(stdout), 10, 64)
	if code != 0 || err != nil || fence == 0 {
		t.Fatalf("run over Sentinel and Cluster URLs = %d, REDLOCK_FENCE %q; want 0 and a fence; stderr:\n%s", code, stdout, stderr)
	}
	// Each node's fence counter saw this acquisition (the Sentinel set and
	// the Redis Cluster are new: only this run wrote to them).
	key := lockKey(t, name)
	for _, n := range []struct {
		what string
		cl   redis.UniversalClient
	}{{"Sentinel master", s.Client()}, {"Redis Cluster", rc.Client()}, {"plain master", cluster(t).Client(0)}} {
		got, err := n.cl.Get(context.Background(), key+":fence").Uint64()
		if err != nil || got < 1 || got > fence {
			t.Errorf("%s: fence counter = %d, %v; want 1..%d", n.what, got, err, fence)
		}
		if e, err := n.cl.Exists(context.Background(), key).Result(); err != nil || e != 0 {
			t.Errorf("%s: EXISTS %s = %d, %v; want 0 (released)", n.what, key, e, err)
		}
	}
}
