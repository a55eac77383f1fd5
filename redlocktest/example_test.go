package redlocktest_test

import (
	"context"
	"fmt"

	"github.com/redlock-go/redlock/redlocktest"
)

func Example() {
	c, err := redlocktest.New(3, nil) // in a test: c := redlocktest.Start(t, 3, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	ctx := context.Background()
	up := 0
	for _, client := range c.Clients() {
		if client.Ping(ctx).Err() == nil {
			up++
		}
	}
	fmt.Printf("%d nodes answer PING\n", up)
	// Output: 3 nodes answer PING
}

// A killed node comes back on the same address with its data.
func ExampleCluster_Kill() {
	c, err := redlocktest.New(1, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	ctx := context.Background()
	node := c.Client(0)
	node.Set(ctx, "fence", 41, 0)
	addr := c.Addr(0)

	if err := c.Kill(0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("PING while down fails:", node.Ping(ctx).Err() != nil)

	if err := c.Restart(0); err != nil {
		fmt.Println(err)
		return
	}
	fence, _ := node.Incr(ctx, "fence").Result()
	fmt.Println("same address:", c.Addr(0) == addr)
	fmt.Println("fence:", fence)
	// Output:
	// PING while down fails: true
	// same address: true
	// fence: 42
}
