package redlocktest

import (
	"io"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// The history of a test and its checker live in package
// [github.com/redlock-go/redlock/redlocktest/history], which needs no
// Docker; these names forward to it so that code written against
// redlocktest keeps compiling.

type (
	Recorder     = history.Recorder     // see [history.Recorder]
	Event        = history.Event        // see [history.Event]
	Kind         = history.Kind         // see [history.Kind]
	CheckOptions = history.CheckOptions // see [history.CheckOptions]
	Report       = history.Report       // see [history.Report]
	Violation    = history.Violation    // see [history.Violation]
	SummaryRow   = history.SummaryRow   // see [history.SummaryRow]
	FaultKind    = history.FaultKind    // see [history.FaultKind]
)

// The kinds of events; see [history.Kind].
const (
	Acquire      = history.Acquire
	AcquireFail  = history.AcquireFail
	Extend       = history.Extend
	Release      = history.Release
	Lost         = history.Lost
	Write        = history.Write
	Fault        = history.Fault
	Heal         = history.Heal
	MajorityGone = history.MajorityGone
)

// DefaultTolerance is [history.DefaultTolerance].
const DefaultTolerance = history.DefaultTolerance

// NewRecorder is [history.NewRecorder].
func NewRecorder() *Recorder { return history.NewRecorder() }

// Check is [history.Check].
func Check(events []Event, opts *CheckOptions) *Report { return history.Check(events, opts) }

// WriteTimeline is [history.WriteTimeline].
func WriteTimeline(w io.Writer, title string, events []Event, rep *Report) error {
	return history.WriteTimeline(w, title, events, rep)
}

// TimelineFile is [history.TimelineFile].
func TimelineFile(path, title string, events []Event, rep *Report) (string, error) {
	return history.TimelineFile(path, title, events, rep)
}

// SummaryTable is [history.SummaryTable].
func SummaryTable(w io.Writer, rows []SummaryRow) error { return history.SummaryTable(w, rows) }
