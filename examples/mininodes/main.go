// Command mininodes runs three in-process stand-ins for Redis (miniredis)
// on 127.0.0.1:7001-7003 until interrupted: nodes to try the quickstart
// with nothing but Go. They keep nothing on disk and model no faults.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
)

func main() {
	addrs := os.Args[1:]
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var nodes []*miniredis.Miniredis
	for _, addr := range addrs {
		s := miniredis.NewMiniRedis()
		if err := s.StartAddr(addr); err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		nodes = append(nodes, s)
	}
	log.Printf("%d nodes on %v; Ctrl-C stops them", len(nodes), addrs)
	// miniredis expires keys only when told time passed: tell it.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, s := range nodes {
				s.FastForward(50 * time.Millisecond)
			}
		}
	}
}
