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

func ExampleLock_Reenter() {
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

	outer, err := client.Acquire(ctx, "report:9", 10*time.Second, &redlock.AcquireOptions{Reentrant: true})
	if err != nil {
		log.Fatal(err)
	}
	// Code called under the lock takes it again: a hold of its own, with
	// the same fence. A shorter TTL never shortens the lease.
	inner, err := outer.Reenter(ctx, time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same fence:", inner.Fence() == outer.Fence())
	if err := inner.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// The nested release leaves the outer hold: the lock is still held.
	_, err = client.Acquire(ctx, "report:9", time.Second, &redlock.AcquireOptions{Retry: redlock.NoRetry()})
	fmt.Println("held by someone else:", errors.Is(err, redlock.ErrHeld))
	if err := outer.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// same fence: true
	// held by someone else: true
}

func ExampleClient_Resume() {
	nodes, err := redlocktest.New(1, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	ctx := context.Background()

	// The process that takes the lock and hands the job over.
	sender, err := redlock.New(nodes.Clients(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sender.Close()
	lock, err := sender.Acquire(ctx, "job:1234", 30*time.Second, &redlock.AcquireOptions{Reentrant: true})
	if err != nil {
		log.Fatal(err)
	}
	handle, err := lock.Handle().MarshalText() // send it with the job
	if err != nil {
		log.Fatal(err)
	}

	// The worker, in another process: its own Client, its own deadline.
	worker, err := redlock.New(nodes.Clients(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer worker.Close()
	h, err := redlock.ParseHandle(string(handle))
	if err != nil {
		log.Fatal(err)
	}
	resumed, err := worker.Resume(ctx, h, 30*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("fence:", resumed.Fence(), "same token:", resumed.Token() == lock.Token())
	if err := resumed.Release(ctx); err != nil { // the worker's hold
		log.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil { // the sender's: now the lock is free
		log.Fatal(err)
	}
	// Output:
	// fence: 1 same token: true
}

func ExampleClient_Inspect() {
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

	lock, err := client.Acquire(ctx, "backup", time.Minute, &redlock.AcquireOptions{Metadata: "host-a pid 4242"})
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)
	st, err := client.Inspect(ctx, "backup")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", st.Held, "by us:", st.Holder == lock.Token())
	n := st.Nodes[0]
	fmt.Printf("node 0: metadata %q, fence counter %d\n", n.Metadata, n.Fence)

	st, err = client.Inspect(ctx, "restore")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("restore free:", st.Free)
	// Output:
	// held: true by us: true
	// node 0: metadata "host-a pid 4242", fence counter 1
	// restore free: true
}

func ExampleClient_Do() {
	nodes, err := redlocktest.New(1, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer nodes.Close()
	client, err := redlock.New(nodes.Clients(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Acquire, auto-extend, run, release: ctx is cancelled if the lock is
	// lost, and the error says so (errors.Is(err, redlock.ErrLost)).
	err = client.Do(context.Background(), "nightly-report", 5*time.Second, nil, func(ctx context.Context, l *redlock.Lock) error {
		fmt.Println("writing with fence", l.Fence())
		return ctx.Err()
	})
	fmt.Println("err:", err, "lost:", errors.Is(err, redlock.ErrLost))
	// Output:
	// writing with fence 1
	// err: <nil> lost: false
}
