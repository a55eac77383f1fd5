package redlocktest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestTLSCluster(t *testing.T) {
	c := redlocktest.StartTLS(t, 1, &redlocktest.TLSOptions{ClientAuth: true, Plain: true})
	ctx := ctxT(t)
	if err := c.Clients()[0].Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	if got := c.URLs()[0]; got != "rediss://"+c.Addrs()[0] {
		t.Errorf("URLs()[0] = %q; want rediss://%s", got, c.Addrs()[0])
	}
	ping := func(opt *redis.Options) error {
		opt.MaxRetries = -1
		cl := redis.NewClient(opt)
		defer cl.Close()
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return cl.Ping(ctx).Err()
	}
	addr := c.Addrs()[0]
	// The TLS port does not speak plain RESP, and it wants a client
	// certificate.
	if err := ping(&redis.Options{Addr: addr}); err == nil {
		t.Errorf("plain PING on the TLS port succeeded; want a failure")
	}
	if err := ping(&redis.Options{Addr: addr, TLSConfig: c.Certs().ClientConfig(false)}); err == nil {
		t.Errorf("PING without a client certificate succeeded; want a failure (tls-auth-clients yes)")
	}
	// Plain keeps the plain port, with the same data.
	plain := redis.NewClient(&redis.Options{Addr: c.PlainAddrs()[0]})
	defer plain.Close()
	if got, err := plain.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k on the plain port = %q, %v; want \"v\"", got, err)
	}
}

func TestTLSClusterPlainOff(t *testing.T) {
	c := redlocktest.StartTLS(t, 1, nil)
	ctx := ctxT(t)
	if err := c.Clients()[0].Ping(ctx).Err(); err != nil {
		t.Fatalf("PING over TLS: %v", err)
	}
	if c.PlainAddrs() != nil {
		t.Errorf("PlainAddrs() = %v; want nil without TLSOptions.Plain", c.PlainAddrs())
	}
	info, err := c.Clients()[0].ConfigGet(ctx, "port").Result()
	if err != nil || info["port"] != "0" {
		t.Errorf("CONFIG GET port = %v, %v; want 0 (TLS only)", info, err)
	}
	// A client that trusts another CA refuses the server.
	other, err := redlocktest.NewCerts("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cl := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], TLSConfig: other.ClientConfig(false), MaxRetries: -1})
	defer cl.Close()
	if err := cl.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("PING with another CA = %v; want a certificate error", err)
	}
	if cfg := c.TLSConfig(); cfg.RootCAs == nil || len(cfg.Certificates) != 0 {
		t.Errorf("TLSConfig() = %+v; want the CA and no client certificate", cfg)
	}
}

func TestRedisCluster(t *testing.T) {
	c := redlocktest.StartRedisCluster(t, 3, nil)
	ctx := ctxT(t)
	shards, err := c.Client().ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	covered := 0
	for _, s := range shards {
		for _, r := range s.Slots {
			covered += int(r.End - r.Start + 1)
		}
	}
	if len(shards) != 3 || covered != 16384 {
		t.Errorf("%d shards covering %d slots; want 3 covering 16384", len(shards), covered)
	}
	// Keys of different slots land on different masters, and the cluster
	// client follows the redirections.
	for i := range 30 {
		k := "key" + string(rune('a'+i))
		if err := c.Client().Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	holding := 0
	for i := range 3 {
		n, err := c.Master(i).DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("master %d: DBSIZE: %v", i, err)
		}
		if n > 0 {
			holding++
		}
	}
	if holding != 3 {
		t.Errorf("%d of 3 masters hold keys after 30 SETs; want all", holding)
	}
	if len(c.Addrs()) != 3 {
		t.Errorf("Addrs() = %v; want 3", c.Addrs())
	}
}

func TestSentinel(t *testing.T) {
	s := redlocktest.StartSentinel(t, nil)
	ctx := ctxT(t)
	cl := s.Client()
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n, err := cl.Wait(ctx, 1, 5000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want the replica to have the write", n, err)
	}
	before, err := s.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("Failover() = %s; want a master other than %s", after, before)
	}
	if got, err := s.MasterAddr(ctx); err != nil || got != after {
		t.Errorf("MasterAddr() = %s, %v; want %s", got, err, after)
	}
	// The failover client now writes to the promoted replica, which has
	// the replicated key.
	if got, err := cl.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k after the failover = %q, %v; want \"v\"", got, err)
	}
	if err := cl.Set(ctx, "k2", "v", 0).Err(); err != nil {
		t.Errorf("SET after the failover = %v; want nil (the client follows the new master)", err)
	}
	if role, err := cl.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Errorf("ROLE through the failover client = %v, %v; want master", role, err)
	}
}
