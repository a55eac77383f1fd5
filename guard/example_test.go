package guard_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest"
)

func ExampleInProcess() {
	// An in-memory store shared by the goroutines of one program, each of
	// which writes only while holding the lock "account:7". A holder is
	// the *redlock.Lock itself; here, fences and tokens made up for the
	// example.
	var g guard.InProcess
	balance := 0
	deposit := func(h guard.Holder, amount int) error {
		return g.Do("account:7", h, func() error {
			balance += amount
			return nil
		})
	}
	first := guard.HolderOf(33, "token-of-the-first-holder")
	newer := guard.HolderOf(34, "token-of-a-newer-holder")
	overlapping := guard.HolderOf(34, "token-of-an-overlapping-holder")

	fmt.Println(deposit(first, 10)) // the holder with fence 33
	fmt.Println(deposit(newer, 5))  // a newer holder: its lock came later
	fmt.Println(deposit(newer, 1))  // it writes again at its own fence
	// The first holder wakes up from a long pause, still believing it
	// holds the lock. Its write is rejected.
	err := deposit(first, 100)
	fmt.Println(errors.Is(err, guard.ErrStaleFence))
	fmt.Println(err)
	// A hold that overlapped the newer one got the same fence (Redlock's
	// timing assumptions broke): the newer holder reached the store first
	// and keeps it.
	err = deposit(overlapping, 1000)
	fmt.Println(errors.Is(err, guard.ErrStaleFence))
	fmt.Println("balance:", balance, "highest fence:", g.Highest("account:7"))
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// true
	// redlock: stale fence: "account:7": fence 33 is below 34, the highest fence accepted: a newer holder has taken the lock, so stop and acquire it again before retrying
	// true
	// balance: 16 highest fence: 34
}

func ExampleRedis() {
	// A Redis that stores the data the lock protects (a container, for the
	// example).
	store, err := redlocktest.New(1, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	g := guard.NewRedis(store.Client(0))
	ctx := context.Background()

	// Data keys carry the resource's hash tag, so the guard works on Redis
	// Cluster too.
	const resource, key = "report:9", "{report:9}:status"
	// Holders are *redlock.Lock values, or, in a process given a fence and
	// a token by the holder (the CLI's REDLOCK_FENCE and REDLOCK_TOKEN),
	// made with HolderOf.
	older := guard.HolderOf(6, "token-6")
	holder := guard.HolderOf(7, "token-7")

	// The holder with fence 7 reads, and so records its fence; an older
	// holder (fence 6) that now writes is rejected.
	_, ok, err := g.Get(ctx, resource, key, holder)
	fmt.Println("exists:", ok, err)
	err = g.Set(ctx, resource, key, "done by 6", older)
	fmt.Println(errors.Is(err, guard.ErrStaleFence))
	fmt.Println(g.Set(ctx, resource, key, "done by 7", holder))
	v, _, _ := g.Get(ctx, resource, key, holder)
	fmt.Println(v)
	// A lock taken with NoFence (fence 0) cannot be fenced.
	err = g.Set(ctx, resource, key, "unfenced", guard.HolderOf(0, "token-0"))
	fmt.Println(errors.Is(err, guard.ErrNoFence))
	// Output:
	// exists: false <nil>
	// true
	// <nil>
	// done by 7
	// true
}
