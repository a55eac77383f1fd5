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
	"github.com/redlock-go/redlock/guard"
)

// A lock on three nodes, a fenced write to the store it protects, and a
// stale holder refused: without Docker, on miniredis, which runs the
// library's Lua scripts in process (as unit tests of code that takes locks
// can). Three miniredis servers stand for three Redis masters, a fourth for
// the store. See the README, "Testing code that takes these locks", for
// what miniredis does not model.
func Example() {
	var nodes []redis.UniversalClient
	for range 3 {
		s, err := miniredis.Run() // in a test: miniredis.RunT(t)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer c.Close()
		nodes = append(nodes, c)
	}
	// miniredis compiles a script on its first call, which can take longer
	// than the default 100ms node timeout (under -race on a busy machine).
	client, err := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	store, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	rdb := redis.NewClient(&redis.Options{Addr: store.Addr()})
	defer rdb.Close()
	g := guard.NewRedis(rdb)

	ctx := context.Background()
	lock, err := client.Acquire(ctx, "invoice:42", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	// The write carries the lock's fence: the store refuses an older one.
	if err := g.Set(ctx, "invoice:42", "{invoice:42}:status", "paid", lock); err != nil {
		log.Fatal(err)
	}
	fmt.Println("fence:", lock.Fence())
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}

	next, err := client.TryAcquire(ctx, "invoice:42", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer next.Release(ctx)
	if err := g.Set(ctx, "invoice:42", "{invoice:42}:status", "shipped", next); err != nil {
		log.Fatal(err)
	}
	// A holder that did not notice it lost the lock comes back too late.
	err = g.Set(ctx, "invoice:42", "{invoice:42}:status", "void", lock)
	fmt.Println("next fence:", next.Fence(), "old holder refused:", errors.Is(err, guard.ErrStaleFence))
	status, _ := store.Get("{invoice:42}:status")
	fmt.Println("status:", status)
	// Output:
	// fence: 1
	// next fence: 2 old holder refused: true
	// status: shipped
}
