package history_test

import (
	"fmt"
	"os"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// Clients record what they saw on one Recorder; Check then finds the
// violations. Here a paused holder (fence 1) wakes up after its deadline and
// writes: the second holder's overlap is reported, and so is the stale write
// the store wrongly accepted.
func ExampleCheck() {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rec := history.NewRecorder()
	rec.Record(history.Event{Kind: history.Acquire, Client: "a", Lock: "job", Token: "ta", Fence: 1, Start: ms(1), At: ms(3), Until: ms(100)})
	rec.Record(history.Event{Kind: history.Acquire, Client: "b", Lock: "job", Token: "tb", Fence: 2, Start: ms(50), At: ms(90), Until: ms(190)})
	rec.Record(history.Event{Kind: history.Write, Client: "b", Lock: "row", Token: "tb", Fence: 2, Start: ms(95), At: ms(96), Accepted: true, Seq: 1, Value: 1})
	rec.Record(history.Event{Kind: history.Write, Client: "a", Lock: "row", Token: "ta", Fence: 1, Start: ms(120), At: ms(121), Accepted: true, Seq: 2, Value: 1})

	rep := history.Check(rec.Events(), nil)
	fmt.Println(rep.OK())
	for _, v := range rep.Violations() {
		fmt.Println(v)
	}
	// Output:
	// false
	// overlap: lock "job": a's hold (fence 1) [3.0ms, 100.0ms] overlaps b's hold (fence 2) [90.0ms, 190.0ms] by 10.0ms
	// stale-write: resource "row": a's write with fence 1 accepted (seq 2, at 121.0ms) after b's write with fence 2 (seq 1)
}

// Permits of a semaphore carry its limit on their Acquire events. Two
// permits at once are fine for a limit of 2; a third while both are
// believed is a permits violation, where a lock would report overlaps.
func ExampleCheck_permits() {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rec := history.NewRecorder()
	permit := func(client string, fence uint64, at, until int) {
		rec.Record(history.Event{Kind: history.Acquire, Client: client, Lock: "pool", Limit: 2,
			Token: client, Fence: fence, Start: ms(at - 2), At: ms(at), Until: ms(until)})
	}
	permit("a", 1, 3, 100)
	permit("b", 2, 10, 100)
	rec.Record(history.Event{Kind: history.Release, Client: "a", Lock: "pool", Token: "a", At: ms(50)})
	permit("c", 3, 50, 150) // a released at this instant: still two
	permit("d", 4, 60, 80)  // b and c believed: one too many

	rep := history.Check(rec.Events(), nil)
	for _, v := range rep.Violations() {
		fmt.Println(v)
	}
	// Output:
	// permits: semaphore "pool" (limit 2): 3 permits believed at once for 20.0ms [60.0ms, 80.0ms]: b's hold (fence 2) [10.0ms, 100.0ms], c's hold (fence 3) [50.0ms, 150.0ms], d's hold (fence 4) [60.0ms, 80.0ms]
}

// A summary of several runs, with a negative control that must be caught.
func ExampleSummaryTable() {
	caught := true
	broken := &history.Report{Acquisitions: 40, Faults: 2, StaleWrites: make([]history.Violation, 3)}
	history.SummaryTable(os.Stdout, []history.SummaryRow{
		{Name: "kill-one-node", Report: &history.Report{Acquisitions: 52, Faults: 1}},
		{Name: "control/no-fence", Report: broken, ControlCaught: &caught},
	})
	// Output:
	// RUN               FAULTS  ACQUISITIONS  OVERLAPS  PERMITS  FENCE-ORDER  FENCE-TIES  STALE-WRITES  LOST-INCREMENTS  LATE-LOSSES  CONTROL
	// kill-one-node     1       52            0         0        0            0           0             0                0            -
	// control/no-fence  2       40            0         0        0            0           3             0                0            caught
}
