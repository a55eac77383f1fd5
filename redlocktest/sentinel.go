package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name under which a Sentinel set's sentinel
// monitors its master (FailoverOptions.MasterName).
const SentinelMaster = "redlock"

// failoverWait bounds Sentinel.Failover.
const failoverWait = 30 * time.Second

// Sentinel is a Sentinel-managed Redis master: a master, one replica of it
// and one sentinel, each in its own container on the Docker bridge
// network. The addresses are the containers' bridge addresses, which is
// what the sentinel announces: the test process must reach that network,
// as it does on Linux. As a lock node it is one node, reached through the
// failover client Client returns.
type Sentinel struct {
	d        *deployment
	sentinel *redis.SentinelClient
	client   *redis.Client // failover client
	admin    map[string]*redis.Client
	addr     string // the sentinel's
}

// NewSentinel starts the master, its replica (--replicaof) and a sentinel
// monitoring it as SentinelMaster with quorum 1, and waits until the
// replica is in sync, the sentinel knows it and the failover client
// answers. opts may be nil; Image, NoPersistence, Args (for the master and
// the replica) and Expire apply as for New. On failure every container
// already started is removed; on success the caller must call Close.
func NewSentinel(opts *Options) (*Sentinel, error) {
	d, err := newDeployment("sentinel", opts)
	if err != nil {
		return nil, err
	}
	s := &Sentinel{d: d, admin: map[string]*redis.Client{}}
	if err := s.start(); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

func (s *Sentinel) start() error {
	master, err := s.server(nil)
	if err != nil {
		return fmt.Errorf("redlocktest: Sentinel master: %w", err)
	}
	replica, err := s.server([]string{"--replicaof", master.ip, "6379"})
	if err != nil {
		return fmt.Errorf("redlocktest: Sentinel replica: %w", err)
	}
	if err := s.until("the replica is in sync with the master", func(ctx context.Context) bool {
		info, err := s.admin[replica.ip+":6379"].Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}); err != nil {
		return err
	}
	conf := "port 26379\nprotected-mode no\n" +
		"sentinel monitor " + SentinelMaster + " " + master.ip + " 6379 1\n" +
		"sentinel down-after-milliseconds " + SentinelMaster + " 2000\n" +
		"sentinel failover-timeout " + SentinelMaster + " 10000\n"
	sen, err := s.d.start(serverSpec{
		args:  []string{"/data/sentinel.conf", "--sentinel"},
		files: map[string][]byte{"/data/sentinel.conf": []byte(conf)},
	})
	if err != nil {
		return fmt.Errorf("redlocktest: sentinel: %w", err)
	}
	s.addr = sen.ip + ":26379"
	s.sentinel = redis.NewSentinelClient(&redis.Options{Addr: s.addr, DialerRetries: 1, ContextTimeoutEnabled: true})
	if err := s.d.waitReady(sen, func(ctx context.Context) error { return s.sentinel.Ping(ctx).Err() }); err != nil {
		return err
	}
	if err := s.until("the sentinel knows the replica", func(ctx context.Context) bool {
		rs, err := s.sentinel.Replicas(ctx, SentinelMaster).Result()
		return err == nil && len(rs) == 1 && rs[0]["master-link-status"] == "ok" && !strings.Contains(rs[0]["flags"], "down")
	}); err != nil {
		return err
	}
	s.client = redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            SentinelMaster,
		SentinelAddrs:         []string{s.addr},
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redlocktest: the failover client does not answer PING: %w", err)
	}
	return nil
}

// server starts a data node with the deployment's arguments and extra, and
// waits until it answers PING.
func (s *Sentinel) server(extra []string) (*server, error) {
	srv, err := s.d.start(serverSpec{args: append(append([]string{}, s.d.args...), extra...)})
	if err != nil {
		return nil, err
	}
	cl := newClient(srv.ip + ":6379")
	s.admin[srv.ip+":6379"] = cl
	return srv, s.d.waitReady(srv, func(ctx context.Context) error { return cl.Ping(ctx).Err() })
}

// until polls cond every 50ms until it holds, for at most readyWait.
func (s *Sentinel) until(what string, cond func(ctx context.Context) bool) error {
	deadline := time.Now().Add(readyWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		ok := cond(ctx)
		cancel()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redlocktest: Sentinel: timed out after %v waiting until %s", readyWait, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartSentinel is NewSentinel for tests: it skips tb if Docker is
// unreachable (see [RequireDocker]), calls tb.Fatalf if NewSentinel fails
// and registers Close with tb.Cleanup, reporting a Close error with
// tb.Errorf.
func StartSentinel(tb testing.TB, opts *Options) *Sentinel {
	tb.Helper()
	RequireDocker(tb)
	c, err := NewSentinel(opts)
	return started(tb, c, err)
}

// Client returns the failover client (go-redis NewFailoverClient) of the
// master: one lock node. It follows failovers. It is shared and closed by
// Close; callers must not close it.
func (s *Sentinel) Client() *redis.Client { return s.client }

// SentinelAddr returns the sentinel's address, "IP:26379".
func (s *Sentinel) SentinelAddr() string { return s.addr }

// MasterAddr returns the master's address as the sentinel reports it now.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	a, err := s.sentinel.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return "", fmt.Errorf("redlocktest: SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
	}
	return a[0] + ":" + a[1], nil
}

// Failover forces a failover (SENTINEL FAILOVER): the replica becomes the
// master and the old master its replica. It returns the new master's
// address once the sentinel reports it, the new master has taken the role
// and the failover client writes to it. What the replica had not received
// from the old master is lost, as in any asynchronous failover.
func (s *Sentinel) Failover(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	if err := s.sentinel.Failover(ctx, SentinelMaster).Err(); err != nil {
		return "", fmt.Errorf("redlocktest: SENTINEL FAILOVER: %w", err)
	}
	for {
		if now, err := s.MasterAddr(ctx); err == nil && now != old && s.serves(ctx, now) {
			return now, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("redlocktest: failover from %s not complete within %v: %w", old, failoverWait, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// serves reports whether the node at addr is a master and the failover
// client's commands reach it (same run_id).
func (s *Sentinel) serves(ctx context.Context, addr string) bool {
	admin := s.admin[addr]
	if admin == nil {
		return false
	}
	role, err := admin.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		return false
	}
	want, err := admin.Info(ctx, "server").Result()
	if err != nil {
		return false
	}
	got, err := s.client.Info(ctx, "server").Result()
	return err == nil && runID(got) != "" && runID(got) == runID(want)
}

// runID is the run_id field of INFO server.
func runID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// Close removes the containers and closes the clients.
func (s *Sentinel) Close() error {
	errs := []error{s.d.close()}
	closeAll := []interface{ Close() error }{}
	if s.client != nil {
		closeAll = append(closeAll, s.client)
	}
	if s.sentinel != nil {
		closeAll = append(closeAll, s.sentinel)
	}
	for _, cl := range s.admin {
		closeAll = append(closeAll, cl)
	}
	for _, cl := range closeAll {
		if err := cl.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.client, s.sentinel, s.admin = nil, nil, nil
	return errors.Join(errs...)
}
