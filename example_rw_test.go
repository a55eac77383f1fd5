package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// A read-write lock on three miniredis nodes: two readers at once, a
// writer refused while they read and let in once they released, with a
// fence above theirs.
func Example_readWrite() {
	var nodes []redis.UniversalClient
	for range 3 {
		s, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer c.Close()
		nodes = append(nodes, c)
	}
	client, err := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()

	r1, err := client.AcquireShared(ctx, "catalog", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := client.AcquireShared(ctx, "catalog", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("two readers:", r1.Shared() && r2.Shared())

	_, err = client.TryAcquire(ctx, "catalog", 10*time.Second, nil)
	fmt.Println("writer while they read:", errors.Is(err, redlock.ErrHeld))

	r1.Release(ctx)
	r2.Release(ctx)
	w, err := client.TryAcquire(ctx, "catalog", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Release(ctx)
	fmt.Println("writer's fence above the readers':", w.Fence() > r1.Fence() && w.Fence() > r2.Fence())
	// Output:
	// two readers: true
	// writer while they read: true
	// writer's fence above the readers': true
}
