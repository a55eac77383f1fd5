package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func ExampleNew() {
	// Three independent Redis masters (containers, for the example; the
	// package's Example runs on miniredis).
	nodes, err := redlocktest.New(3, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()

	client, err := redlock.New(nodes.Clients(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx := context.Background()
	lock, err := client.Acquire(ctx, "invoice:42", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Send lock.Fence() with every write the lock protects: the store
	// rejects a write whose fence is lower than one it has seen.
	fmt.Println("fence:", lock.Fence())
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}

	again, err := client.Acquire(ctx, "invoice:42", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer again.Release(ctx)
	fmt.Println("next fence:", again.Fence())
	// Output:
	// fence: 1
	// next fence: 2
}

func ExampleNoRetry() {
	nodes, err := redlocktest.New(3, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	client, err := redlock.New(nodes.Clients(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx := context.Background()
	held, err := client.Acquire(ctx, "report", time.Minute, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer held.Release(ctx)

	// A try-lock: one attempt, no waiting.
	_, err = client.Acquire(ctx, "report", time.Minute, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	fmt.Println("busy:", errors.Is(err, redlock.ErrNotAcquired))
	// Output:
	// busy: true
}

func ExampleLock_Context() {
	nodes, err := redlocktest.New(3, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	client, err := redlock.New(nodes.Clients(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// The watchdog extends the lease every TTL/3 while the work runs.
	ctx := context.Background()
	lock, err := client.Acquire(ctx, "nightly-job", 300*time.Millisecond, &redlock.AcquireOptions{AutoExtend: true})
	if err != nil {
		log.Fatal(err)
	}
	work := lock.Context(ctx) // cancelled if the lock is lost
	select {
	case <-time.After(time.Second): // the work: longer than the TTL
		fmt.Println("work done, still held:", lock.Err() == nil)
	case <-work.Done():
		fmt.Println("lost the lock:", context.Cause(work))
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}
	<-work.Done()
	fmt.Println("after release:", context.Cause(work))
	// Output:
	// work done, still held: true
	// after release: redlock: lock released
}
