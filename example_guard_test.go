package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func ExampleFenceGuard() {
	// An in-memory store shared by the goroutines of one program, each of
	// which writes only while holding the lock "account:7" (fences from
	// Lock.Fence).
	var guard redlock.FenceGuard
	balance := 0
	deposit := func(fence uint64, amount int) error {
		return guard.Do("account:7", fence, func() error {
			balance += amount
			return nil
		})
	}

	fmt.Println(deposit(33, 10)) // the holder with fence 33
	fmt.Println(deposit(34, 5))  // a newer holder: its lock came later
	// The first holder wakes up from a long pause, still believing it
	// holds the lock. Its write is rejected.
	err := deposit(33, 100)
	fmt.Println(errors.Is(err, redlock.ErrStaleFence))
	fmt.Println(err)
	fmt.Println("balance:", balance, "highest fence:", guard.Highest("account:7"))
	// Output:
	// <nil>
	// <nil>
	// true
	// redlock: stale fence: "account:7": fence 33 is below 34, the highest fence accepted: a newer holder has taken the lock, so stop and acquire it again before retrying
	// balance: 15 highest fence: 34
}

func ExampleRedisGuard() {
	// A Redis that stores the data the lock protects (a container, for the
	// example).
	store, err := redlocktest.New(1, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	guard := redlock.NewRedisGuard(store.Client(0))
	ctx := context.Background()

	// Data keys carry the resource's hash tag, so the guard works on Redis
	// Cluster too.
	const resource, key = "report:9", "{report:9}:status"

	// The holder with fence 7 reads, and so records its fence; an older
	// holder (fence 6) that now writes is rejected.
	_, ok, err := guard.Get(ctx, resource, key, 7)
	fmt.Println("exists:", ok, err)
	err = guard.Set(ctx, resource, key, "done by 6", 6)
	fmt.Println(errors.Is(err, redlock.ErrStaleFence))
	fmt.Println(guard.Set(ctx, resource, key, "done by 7", 7))
	v, _, _ := guard.Get(ctx, resource, key, 7)
	fmt.Println(v)
	// Output:
	// exists: false <nil>
	// true
	// <nil>
	// done by 7
}
