package redlocktest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// A client whose network path to node 0 is blackholed gets no answer from
// it, while the node itself stays up for everyone else. After Heal the
// stalled command fails and the client reconnects.
func ExampleNet_Blackhole() {
	c, err := redlocktest.New(2, nil) // in a test: redlocktest.Start(t, 2, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	n, err := c.NewNet("client-1") // closed by c.Close
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	node := n.Clients()[0]
	fmt.Println("PING:", node.Ping(ctx).Val())

	if err := n.Blackhole(0); err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- node.Ping(ctx).Err() }()
	select {
	case err := <-done:
		fmt.Println("answered through the blackhole:", err)
	case <-time.After(500 * time.Millisecond):
		fmt.Println("no answer within 500ms")
	}
	fmt.Println("node 0 itself:", c.Client(0).Ping(ctx).Val())

	if err := n.Heal(0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stalled PING failed:", <-done != nil)
	fmt.Println("PING:", node.Ping(ctx).Val())
	// Output:
	// PING: PONG
	// no answer within 500ms
	// node 0 itself: PONG
	// stalled PING failed: true
	// PING: PONG
}

// A node that restarts empty has forgotten its keys, fencing counters
// included; Restart after Kill would have kept them.
func ExampleCluster_RestartEmpty() {
	c, err := redlocktest.New(1, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	ctx := context.Background()
	node := c.Client(0)
	node.Set(ctx, "fence", 41, 0)
	if err := c.RestartEmpty(0); err != nil {
		fmt.Println(err)
		return
	}
	fence, _ := node.Incr(ctx, "fence").Result()
	fmt.Println("fence:", fence)
	// Output: fence: 1
}

// ClockJump expires a lock key on one node only, as a forward jump of that
// node's clock would.
func ExampleCluster_ClockJump() {
	c, err := redlocktest.New(2, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	ctx := context.Background()
	for _, node := range c.Clients() {
		node.Set(ctx, "lock", "token", time.Minute)
	}
	if err := c.ClockJump(0, "lock"); err != nil {
		fmt.Println(err)
		return
	}
	for i, node := range c.Clients() {
		fmt.Printf("node %d holds the key: %v\n", i, node.Exists(ctx, "lock").Val() == 1)
	}
	// Output:
	// node 0 holds the key: false
	// node 1 holds the key: true
}
