package redlock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

// Checking a chaos run: its history, its timeline and the summary table.

// check waits for every hold to end and checks the history against the
// store's final counters.
func (e *chaosEnv) check() *history.Report {
	e.t.Helper()
	return history.Check(e.rec.Events(), e.checkOptions())
}

// checkOptions waits for every hold to end and returns the options of a
// check: the store's final counters and chaosTolerance.
func (e *chaosEnv) checkOptions() *history.CheckOptions {
	e.t.Helper()
	e.waitHolds()
	counters, err := e.store.counters()
	if err != nil {
		e.t.Fatalf("downstream store: %v", err)
	}
	return &history.CheckOptions{Counters: counters, Tolerance: chaosTolerance}
}

// chaosTolerance is how late, after its deadline, a hold may learn of its
// loss: scheduling on a loaded two-core box under -race.
const chaosTolerance = 250 * time.Millisecond

// finish records rep in the run's summary and writes the timeline when the
// test failed or $REDLOCK_TIMELINE names a directory. Call it once, at the
// end of the row, after every assertion.
func (e *chaosEnv) finish(name string, rep *history.Report, controlCaught *bool) {
	e.t.Helper()
	e.finished = true
	row := name
	if e.t.Failed() {
		row += " (FAILED)"
	}
	summary.add(history.SummaryRow{Name: row, Report: rep, ControlCaught: controlCaught})
	if os.Getenv("REDLOCK_TIMELINE") != "" || e.t.Failed() {
		e.timeline(name, rep)
	}
}

// timeline writes the history as HTML to $REDLOCK_TIMELINE (default the
// temporary directory) and logs where.
func (e *chaosEnv) timeline(name string, rep *history.Report) {
	e.t.Helper()
	dir := os.Getenv("REDLOCK_TIMELINE")
	if dir == "" {
		dir = os.TempDir()
	}
	file := strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return r
		}
		return '_'
	}, name) + ".html"
	path, err := history.TimelineFile(filepath.Join(dir, file), name, e.rec.Events(), rep)
	if err != nil {
		e.t.Errorf("timeline of %s: %v", name, err)
		return
	}
	e.t.Logf("timeline of %s: %s", name, path)
	// The history itself, to check and draw again anywhere:
	// go run ./redlocktest/cmd/timeline FILE.json > FILE.html
	saved := strings.TrimSuffix(path, ".html") + ".json"
	if err := e.save(saved, name); err != nil {
		e.t.Errorf("saving the history of %s: %v", name, err)
		return
	}
	e.t.Logf("history of %s: %s", name, saved)
}

// save writes the history and the store's counters to path as JSON
// (history.Save).
func (e *chaosEnv) save(path, title string) error {
	counters, err := e.store.counters()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = history.Save(f, &history.Saved{Title: title, Counters: counters, Events: e.rec.Events()})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// summaryRows collects the summary of every chaos row of this run.
type summaryRows struct {
	mu   sync.Mutex // protects rows
	rows []history.SummaryRow
}

var summary summaryRows

func (s *summaryRows) add(r history.SummaryRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, r)
}

// print writes the rows added since mark from to stdout, and all rows of
// the run to $REDLOCK_CHAOS_REPORT if set (go test hides the stdout of a
// passing package; the Makefile prints that file).
func (s *summaryRows) print(tb testing.TB, from int) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Printf("\n%s summary:\n", tb.Name())
	if err := history.SummaryTable(os.Stdout, s.rows[from:]); err != nil {
		tb.Errorf("SummaryTable: %v", err)
	}
	path := os.Getenv("REDLOCK_CHAOS_REPORT")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Errorf("REDLOCK_CHAOS_REPORT: %v", err)
		return
	}
	err = history.SummaryTable(f, s.rows)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Errorf("writing the summary to %s: %v", path, err)
	}
}

// mark returns where the rows of a test start: the tests of one run share
// summary.
func (s *summaryRows) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}
