package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The re-entrant form next to BenchmarkAcquireRelease: one hash instead of
// a string per node, and a nested hold's round trip.
func BenchmarkAcquireReleaseReentrant(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			c := newTestClient(b, nodes(b, n), nil)
			ctx := context.Background()
			opts := &AcquireOptions{Reentrant: true, Retry: NoRetry()}
			name := fmt.Sprintf("bench-reentrant-%d", n)
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

func BenchmarkReenterRelease(b *testing.B) {
	c := newTestClient(b, nodes(b, 3), nil)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "bench-reenter", time.Minute, &AcquireOptions{Reentrant: true, Retry: NoRetry()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Release(ctx)
	for b.Loop() {
		in, err := l.Reenter(ctx, 10*time.Second, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := in.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
