package record_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/redlocktest/history"
	"github.com/redlock-go/redlock/redlocktest/record"
)

// Testing your own critical section: two clients take turns on one lock
// over three real Redis nodes, each increments a counter behind a fence
// guard, and the recorded history is checked. No event is written by hand.
func Example() {
	cl, err := redlocktest.New(3, nil) // in a test: redlocktest.Start(t, 3, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	ctx := context.Background()
	rec, g, count := history.NewRecorder(), new(guard.InProcess), int64(0)
	for _, name := range []string{"c1", "c2"} {
		c, _ := record.As(rec, name).New(cl.Clients(), nil)
		l, _ := c.Acquire(ctx, "job", time.Second, nil)
		record.As(rec, name).Write("job", l, count+1, func() (int64, error) {
			return count + 1, g.Do("job", l, func() error { count++; return nil })
		})
		l.Release(ctx)
		c.Close()
	}
	rep := history.Check(rec.Events(), &history.CheckOptions{Counters: map[string]int64{"job": count}})
	fmt.Println(rep.Acquisitions, "acquisitions,", rep.AcceptedWrites, "writes, ok:", rep.OK())
	// Output: 2 acquisitions, 2 writes, ok: true
}
