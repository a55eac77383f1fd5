package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// faults is the fault script: node faults (local nodes only) at fixed
// shares of the duration, and a worker pause at 60%, on its own schedule so
// that slow node restarts do not delay it.
func (d *demo) faults(ctx context.Context) {
	at := func(share float64) bool {
		return sleep(ctx, time.Until(d.out.start.Add(time.Duration(share*float64(d.o.duration)))))
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if at(0.60) {
			d.pausing.Store(true)
			d.pauseNext.Store(true)
		}
	})
	if d.nodes == nil {
		return
	}
	for _, step := range []struct {
		kill, heal float64
		nodes      []int
	}{
		{0.10, 0.25, []int{0}},
		{0.35, 0.50, []int{1, 2}},
	} {
		if !at(step.kill) {
			return
		}
		d.kill(step.nodes...)
		at(step.heal)
		d.restart(step.nodes...) // even when the run ends: the summary counts the heals
	}
}

func (d *demo) kill(nodes ...int) {
	for _, i := range nodes {
		if err := d.nodes.Kill(i); err != nil {
			d.out.event(true, "FAULT  kill node %d failed: %s", i, oneLine(err))
			continue
		}
		d.nodesUp.Add(-1)
	}
	d.logFault(fmt.Sprintf("killed+restarted node(s) %v", nodes))
	d.out.event(true, "FAULT  killed node(s) %v with SIGKILL: %d of %d up, quorum %d", nodes, d.nodesUp.Load(), d.nodes.Len(), d.client.Quorum())
}

func (d *demo) restart(nodes ...int) {
	for _, i := range nodes {
		if err := d.nodes.Restart(i); err != nil {
			d.out.event(true, "HEAL   restart node %d failed: %s", i, oneLine(err))
			continue
		}
		d.nodesUp.Add(1)
	}
	d.out.event(true, "HEAL   restarted node(s) %v with their data (AOF): %d of %d up", nodes, d.nodesUp.Load(), d.nodes.Len())
}

func (d *demo) logFault(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faultLog = append(d.faultLog, s)
}
