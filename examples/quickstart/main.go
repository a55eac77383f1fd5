// Command quickstart takes a lock on three Redis masters, works under it
// and releases it: the README's first program.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
)

func main() {
	addrs := os.Args[1:] // independent Redis masters, not replicas of each other
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	}
	if err := run(context.Background(), addrs); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addrs []string) error {
	var nodes []redis.UniversalClient
	for _, addr := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		nodes = append(nodes, rdb)
	}
	client, err := redlock.New(nodes, nil) // nil: the defaults
	if err != nil {
		return err
	}
	defer client.Close() // waits for the calls still running on slow nodes

	// Acquire waits until the lock is free or ctx ends: bound the wait.
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lock, err := client.Acquire(wait, "invoice:42", 30*time.Second, nil)
	if err != nil {
		return fmt.Errorf("not acquired: %w", err) // matches redlock.ErrHeld if another owner holds it
	}
	fmt.Printf("holding %s with fence %d\n", lock.Name(), lock.Fence())
	// lock.Context is cancelled if the lock is lost; send the fence with
	// every write, so that the store can refuse a holder that came late.
	workErr := work(lock.Context(ctx), lock.Fence())

	err = lock.Release(ctx)
	if errors.Is(err, redlock.ErrLost) {
		// The lease ran out before the work was done: another holder
		// may have run at the same time. Check or redo the work.
		return fmt.Errorf("critical section may have overlapped another holder: %w", err)
	}
	if err != nil { // some nodes did not answer: their keys expire with the TTL
		log.Printf("release: %v", err)
	}
	return workErr
}

// work is the critical section: it stops when ctx does.
func work(ctx context.Context, fence uint64) error {
	select {
	case <-time.After(100 * time.Millisecond):
		fmt.Printf("wrote invoice 42 at fence %d\n", fence)
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
