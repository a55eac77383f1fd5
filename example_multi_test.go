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

// Two accounts locked at once for a transfer, all or nothing, on three
// miniredis nodes: a set of names in one call, whatever order the caller
// names them in, with a fence per name.
func ExampleClient_AcquireMulti() {
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

	// Another path of the code names them the other way round: the same set.
	m, err := client.AcquireMulti(ctx, []string{"account:9", "account:3"}, 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", m.Names())
	fmt.Println("fence of account:3:", m.Fence("account:3"))

	// A single name of the set is taken, and so is a set that shares one.
	_, err = client.TryAcquire(ctx, "account:9", 10*time.Second, nil)
	fmt.Println("account:9 alone:", errors.Is(err, redlock.ErrHeld))
	_, err = client.TryAcquireMulti(ctx, []string{"account:9", "account:5"}, 10*time.Second, nil)
	fmt.Println("{account:9, account:5}:", errors.Is(err, redlock.ErrHeld))

	if err := m.Release(ctx); err != nil {
		log.Fatal(err)
	}
	l, err := client.Acquire(ctx, "account:3", 10*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	fmt.Println("next fence of account:3:", l.Fence())
	// Output:
	// holding [account:3 account:9]
	// fence of account:3: 1
	// account:9 alone: true
	// {account:9, account:5}: true
	// next fence of account:3: 2
}
