package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redlock-go/redlock"
)

// A semaphore of two permits: two holders at once, a third refused while
// both hold one, and given the slot the first holder frees. Each permit's
// fence names its slot (fence mod MaxPermits) and grows with every permit
// taken.
func ExampleClient_AcquirePermit() {
	nodes, stop := exampleNodes(3)
	defer stop()
	client, err := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	const limit = 2

	a, err := client.AcquirePermit(ctx, "encoders", limit, 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	b, err := client.AcquirePermit(ctx, "encoders", limit, 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Release(ctx)
	fmt.Println("two permits, slots apart:", a.Slot() != b.Slot())
	fmt.Println("fences name the slots:", a.Fence()%redlock.MaxPermits == uint64(a.Slot()) && b.Fence()%redlock.MaxPermits == uint64(b.Slot()))

	// Both permits held: a third try is refused at once.
	_, err = client.TryAcquirePermit(ctx, "encoders", limit, 10*time.Second, nil)
	fmt.Println("third refused, all held:", errors.Is(err, redlock.ErrHeld))

	if err := a.Release(ctx); err != nil {
		log.Fatal(err)
	}
	c, err := client.TryAcquirePermit(ctx, "encoders", limit, 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Release(ctx)
	fmt.Println("third after a release: the freed slot:", c.Slot() == a.Slot())
	fmt.Println("its fence is the largest:", c.Fence() > a.Fence() && c.Fence() > b.Fence())
	// Output:
	// two permits, slots apart: true
	// fences name the slots: true
	// third refused, all held: true
	// third after a release: the freed slot: true
	// its fence is the largest: true
}
