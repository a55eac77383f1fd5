package history_test

import (
	"strings"
	"testing"

	rt "github.com/redlock-go/redlock/redlocktest/history"
)

func evShared(client, token string, fence uint64, start, at, until int) rt.Event {
	e := evAcquire(client, token, fence, start, at, until)
	e.Shared = true
	return e
}

// TestReadWriteCheck: shared holds may overlap each other (and share a
// fence); an exclusive hold overlapping any hold is a violation, and so
// is a tie between a reader and a writer. The control is the same history
// with the readers marked exclusive: their overlap is then caught.
func TestReadWriteCheck(t *testing.T) {
	readers := []rt.Event{
		evShared("r1", "s1", 1, 0, 5, 105), evRelease("r1", "s1", 60),
		evShared("r2", "s2", 2, 10, 20, 120), evRelease("r2", "s2", 80),
		evShared("r3", "s3", 2, 10, 25, 120), evRelease("r3", "s3", 90), // a tie between readers
		evAcquire("w", "x1", 3, 50, 95, 195), evRelease("w", "x1", 150),
	}
	rep := rt.Check(readers, nil)
	if !rep.OK() {
		t.Fatalf("readers overlapping each other, then a writer after them: %v; want clean", rep)
	}
	page := renderTimeline(t, "readwrite", readers, rep)
	if got := strings.Count(chart(t, page), `class="hold c0 shared"`); got != 3 {
		t.Errorf("timeline shades %d shared holds; want 3", got)
	}
	keepTimeline(t, "readwrite", readers, rep)

	for _, tc := range []struct {
		what   string
		events []rt.Event
		want   string
	}{
		{"a writer while a reader holds", []rt.Event{
			evShared("r1", "s1", 1, 0, 5, 105), evRelease("r1", "s1", 60),
			evAcquire("w", "x1", 2, 10, 20, 120), evRelease("w", "x1", 80),
		}, "overlap"},
		{"a reader while a writer holds", []rt.Event{
			evAcquire("w", "x1", 1, 0, 5, 105), evRelease("w", "x1", 60),
			evShared("r1", "s1", 2, 10, 20, 120), evRelease("r1", "s1", 80),
		}, "overlap"},
		{"a reader and a writer at one fence", []rt.Event{
			evShared("r1", "s1", 4, 0, 5, 105), evRelease("r1", "s1", 60),
			evAcquire("w", "x1", 4, 62, 70, 170), evRelease("w", "x1", 80),
		}, "fence"},
		{"control: the readers marked exclusive", func() []rt.Event {
			var es []rt.Event
			for _, e := range readers {
				e.Shared = false
				es = append(es, e)
			}
			return es
		}(), "overlap"},
	} {
		rep := rt.Check(tc.events, nil)
		if rep.OK() || !strings.Contains(rep.String(), tc.want) {
			t.Errorf("%s: Check = %v; want a %s violation (the check must be able to fail)", tc.what, rep, tc.want)
		}
	}
}
