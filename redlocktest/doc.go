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
// proxy to every node (in a toxiproxy-server process of its own, see
// Network faults below) and its own go-redis clients through them. [Net.Down] refuses and cuts
// connections, [Net.Blackhole] swallows every byte (a partition: no error,
// no answer), [Net.Latency] delays replies, [Net.DelayRequests] delays
// requests (so a command can run after the client gave up on it),
// [Net.HoldRequests] holds requests in the client so that later ones
// overtake them, [Net.Heal] undoes them. Two Nets on one Cluster are two clients on
// either side of a partition.
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
// # Network faults
//
// The proxies of a Net run in a toxiproxy-server process
// (github.com/Shopify/toxiproxy/v2, the version in redlock's go.mod),
// started by NewNet on free ports of 127.0.0.1 and driven through its HTTP
// API with package github.com/Shopify/toxiproxy/v2/client, which needs
// only the standard library: a module that imports redlock does not
// download the server's dependencies. Net.Close (so Cluster.Close too)
// kills the process; on Linux the kernel also kills it if the test process
// dies first.
//
// The first NewNet of a test process looks for the binary: a
// toxiproxy-server of that version on PATH, else the one cached under
// os.UserCacheDir()/redlocktest/, else it builds it there with
// `go install github.com/Shopify/toxiproxy/v2/cmd/server@VERSION`, once
// per machine (concurrent test processes wait for the first), saying so on
// stderr. That needs the go command on PATH and, the first time, the module
// proxy (GOPROXY) for the server's dependencies. Where neither is at hand,
// put a toxiproxy-server of that version on PATH.
//
// # Recording and checking a history
//
// With [Options].Recorder set, the Cluster and its Nets record every fault
// they inject, with its kind. Package
// [github.com/redlock-go/redlock/redlocktest/record] records what each
// redlock client does (it imports redlock, so it lives apart: redlock's own
// tests import this package). Package
// [github.com/redlock-go/redlock/redlocktest/history] holds the history,
// the checker, the HTML timeline and a JSON format to save a history; it
// needs no Docker.
//
// # Deployments
//
// Three more shapes start Redis as it is deployed, each one lock node (or
// a set of them) with a ready go-redis client, for tests of TLS, Sentinel
// and Redis Cluster nodes. They have no fault injection beyond a failover.
//
//   - [StartTLS] ([NewTLS]): independent masters with --tls-port (and
//     --port 0) and certificates made by [NewCerts] at test time, a server
//     certificate for 127.0.0.1; optionally requiring client certificates.
//   - [StartSentinel] ([NewSentinel]): a master, its replica and a
//     sentinel; [Sentinel.Client] is the failover client, and
//     [Sentinel.Failover] forces a failover and waits until the client
//     writes to the new master.
//   - [StartRedisCluster] ([NewRedisCluster]): masters of one Redis
//     Cluster, slots assigned and nodes introduced with CLUSTER commands;
//     [RedisCluster.Client] is the cluster client.
//
// Sentinel and Redis Cluster announce the containers' addresses on the
// Docker bridge network, which the test process must reach (it does on
// Linux, where Docker runs on the same host).
//
// # Without Docker
//
// [Start], [StartTLS], [StartSentinel], [StartRedisCluster] and
// [Shared.Cluster] skip the test when Docker is unreachable, with one line
// saying what it needs, so that `go test ./...` on a machine without
// Docker still runs every test that needs no container. With the
// environment variable CI set ([CIEnv]) they fail it instead: CI must never
// skip them. [RequireDocker] does the same for a test that calls New
// itself; [SkipExamplesWithoutDocker], called in TestMain, for the
// examples that start containers. [Shared] is a cluster that the tests of
// a package share, started by the first test that needs it.
//
// # Images and cleanup
//
// When the Redis image is missing, New makes it, once per machine (a lock
// file in the temporary directory makes concurrent test processes wait for
// the first): it pulls it or, where no registry is reachable, builds a
// FROM-scratch image around the host's redis-server binary (installed with
// apt-get when run as root), saying so on stderr. That is the script
// redis-image.sh of this package, which `make redis-image`
// (scripts/redis-image.sh) runs too.
//
// Containers are labelled redlocktest=1. Docker itself kills them after
// Options.Expire even if the test process dies without calling Close, and
// later calls to New remove such expired leftovers. To remove everything by
// hand:
//
//	docker rm -f -v $(docker ps -aq --filter label=redlocktest=1)
package redlocktest
