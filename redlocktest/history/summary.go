package history

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"
)

// SummaryRow is one run in a [SummaryTable].
type SummaryRow struct {
	Name   string  // the run, such as the test name
	Report *Report // what Check found; nil prints dashes

	// ControlCaught is nil for an ordinary run. For a negative control (a
	// run built to break an invariant, proving the checker can fail) it
	// says whether the checker caught the breach.
	ControlCaught *bool
}

// SummaryTable writes a plain-text table, columns aligned, one row per run:
// faults injected, acquisitions, and the number of violations of each kind
// (overlaps, permits, fence-order violations, fence ties, stale writes
// accepted, lost increments, late losses), and, for negative controls,
// whether the control was caught ("caught" or "MISSED"; "-" for ordinary
// runs). It returns the first write error.
func SummaryTable(w io.Writer, rows []SummaryRow) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tFAULTS\tACQUISITIONS\tOVERLAPS\tPERMITS\tFENCE-ORDER\tFENCE-TIES\tSTALE-WRITES\tLOST-INCREMENTS\tLATE-LOSSES\tCONTROL")
	for _, row := range rows {
		control := "-"
		if row.ControlCaught != nil {
			control = "MISSED"
			if *row.ControlCaught {
				control = "caught"
			}
		}
		if r := row.Report; r != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", row.Name, r.Faults, r.Acquisitions,
				len(r.Overlaps), len(r.Permits), len(r.FenceOrder), len(r.FenceTies), len(r.StaleWrites), len(r.LostIncrements), len(r.LateLoss), control)
		} else {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", row.Name, control)
		}
	}
	tw.Flush() // cannot fail: it writes to buf
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("redlocktest: writing summary table: %w", err)
	}
	return nil
}
