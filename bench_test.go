package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// References for the lock's cost, measured in the same run on the same
// nodes: a parallel PING round (one round trip, no write), and the bare
// writes any Redis lock must make, a parallel SET NX PX round followed by a
// parallel DEL round. The shared test nodes run with appendfsync always, so
// every write waits for an fsync: compare acquire+release with the second.

func BenchmarkPingRound(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ns := nodes(b, n)
			ctx := context.Background()
			for b.Loop() {
				var g errgroup.Group
				for _, nd := range ns {
					g.Go(func() error { return nd.Ping(ctx).Err() })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSetNXDelRounds(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ns := nodes(b, n)
			ctx := context.Background()
			key := fmt.Sprintf("bench-setnx-%d", n)
			for b.Loop() {
				var g errgroup.Group
				for _, nd := range ns {
					g.Go(func() error { return nd.SetNX(ctx, key, "token", 10*time.Second).Err() })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				for _, nd := range ns {
					g.Go(func() error { return nd.Del(ctx, key).Err() })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, fenced := range []bool{true, false} {
		for _, n := range []int{1, 3, 5} {
			b.Run(fmt.Sprintf("fence=%v/N=%d", fenced, n), func(b *testing.B) {
				c := newTestClient(b, nodes(b, n), nil)
				ctx := context.Background()
				opts := &AcquireOptions{NoFence: !fenced, Retry: NoRetry()}
				name := fmt.Sprintf("bench-%v-%d", fenced, n)
				for b.Loop() {
					l, err := c.Acquire(ctx, name, 10*time.Second, opts)
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
