package redlocktest

import (
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// faultLog records the faults of a Cluster or of a Net into a recorder,
// if there is one ([Options].Recorder): a history.Fault event when a fault
// begins, a history.Heal event when it ends, both with its kind.
type faultLog struct {
	rec    *history.Recorder // nil: nothing is recorded
	client string            // the Net's name; "" for the Cluster's faults
}

// now returns the recorder's clock, or 0 without a recorder.
func (f faultLog) now() time.Duration {
	if f.rec == nil {
		return 0
	}
	return f.rec.Now()
}

// log records one event of kind (Fault or Heal) at at (0: now).
func (f faultLog) log(kind history.Kind, node int, fk history.FaultKind, detail string, at time.Duration) {
	if f.rec == nil {
		return
	}
	f.rec.Record(history.Event{Kind: kind, Node: node, Client: f.client, Fault: fk, Detail: detail, At: at})
}

// began records that fault fk began on node now.
func (f faultLog) began(node int, fk history.FaultKind, detail string) {
	f.log(history.Fault, node, fk, detail, 0)
}

// ended records that fault fk ended on node now.
func (f faultLog) ended(node int, fk history.FaultKind, detail string) {
	f.log(history.Heal, node, fk, detail, 0)
}

// span records fault fk on node from start to end.
func (f faultLog) span(node int, fk history.FaultKind, detail string, start, end time.Duration) {
	f.log(history.Fault, node, fk, detail, max(start, 1)) // At 0 would mean "now"
	f.log(history.Heal, node, fk, detail, max(end, 1))
}

// ms formats d for a fault's Detail: "300ms".
func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
