package redlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// exampleNodes returns n miniredis servers as nodes, and a func that closes
// them: these examples need no Docker.
func exampleNodes(n int) ([]redis.UniversalClient, func()) {
	var (
		nodes   []redis.UniversalClient
		closers []func()
	)
	for range n {
		s, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		nodes = append(nodes, c)
		closers = append(closers, func() { c.Close(); s.Close() })
	}
	return nodes, func() {
		for _, f := range closers {
			f()
		}
	}
}

// Two candidates for one election: the first leads, the second waits in
// Campaign until the first resigns; each term is larger than the last.
func ExampleClient_Campaign() {
	nodes, stop := exampleNodes(3)
	defer stop()
	a, _ := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	defer a.Close()
	b, _ := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	defer b.Close()
	ctx := context.Background()

	first, err := a.Campaign(ctx, "scheduler", 10*time.Second, "10.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", first.Value(), "term:", first.Term())

	won := make(chan *redlock.Leadership)
	go func() {
		ld, err := b.Campaign(ctx, "scheduler", 10*time.Second, "10.0.0.2:8080")
		if err != nil {
			log.Fatal(err)
		}
		won <- ld
	}()
	// The leader's work runs under first.Context(ctx), its writes carry
	// first.Term() through a guard; first.Done() closes if it is lost.
	if err := first.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	<-first.Done()
	second := <-won
	defer second.Resign(ctx)
	// The second term is larger; by how much depends on how the second
	// candidate's attempts met the release (each node's take counts).
	fmt.Println("leader:", second.Value(), "term larger:", second.Term() > first.Term())
	// Output:
	// leader: 10.0.0.1:8080 term: 1
	// leader: 10.0.0.2:8080 term larger: true
}

// Anyone can read who leads, and follow the changes.
func ExampleClient_Leader() {
	nodes, stop := exampleNodes(3)
	defer stop()
	client, _ := redlock.New(nodes, &redlock.Options{NodeTimeout: time.Second})
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	info, err := client.Leader(ctx, "scheduler")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", info.Held)

	changes, err := client.Observe(ctx, "scheduler", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("observed held:", (<-changes).Held)
	ld, err := client.Campaign(ctx, "scheduler", 10*time.Second, "10.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	next := <-changes
	fmt.Println("observed:", next.Value, "term:", next.Term)

	info, err = client.Leader(ctx, "scheduler")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leader:", info.Value, "term:", info.Term, "at least 9s left:", info.Remaining >= 9*time.Second)
	ld.Resign(ctx)
	fmt.Println("observed held:", (<-changes).Held)
	// Output:
	// held: false
	// observed held: false
	// observed: 10.0.0.1:8080 term: 1
	// leader: 10.0.0.1:8080 term: 1 at least 9s left: true
	// observed held: false
}
