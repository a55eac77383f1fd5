package history

import (
	"fmt"
	"strings"
)

// Report is what [Check] found in a history: counts of what happened, and
// every violation of each invariant, oldest first within each kind. A Report
// with no violations is OK; see [Report.OK].
type Report struct {
	// Acquisitions counts successful Acquire events; Writes counts Write
	// events, split into AcceptedWrites and RejectedWrites; Faults counts
	// Fault events.
	Acquisitions, Writes, AcceptedWrites, RejectedWrites, Faults int

	// Overlaps: mutual exclusion broke. Two holds of the same lock (different
	// tokens) whose believed intervals intersect: for a while both clients
	// believed they held the lock. A believed hold runs from Acquire.At to
	// the earliest of its Release.At, its Lost.At and its local deadline
	// (Acquire.Until, moved by every successful Extend of the same token;
	// the last one counts). Shared holds ([Event.Shared], the readers of a
	// read-write lock) may overlap each other, never an exclusive hold.
	// Semaphores are judged by Permits instead. Redlock promises no overlap only while faults
	// stay within a minority of the nodes and clocks are honest, so tests
	// that break those assumptions expect overlaps and rely on fencing.
	// Each violation holds the two Acquire events.
	Overlaps []Violation

	// Permits: a semaphore gave out more permits than it has. A name is a
	// semaphore when its Acquire events carry [Event.Limit] > 1 (the
	// largest Limit among them counts); each permit is a hold with a token
	// of its own, believed as for Overlaps, and at no moment may more than
	// Limit of them be believed. As for Overlaps, a hold that ends at the
	// instant another begins is not believed with it. A hold whose
	// acquisition found Limit others of the name still believed is one
	// violation: the Acquire events of Limit+1 holds, by Acquire.At (the
	// newcomer, and the Limit others believed longest after it began).
	Permits []Violation

	// FenceOrder: fences went backwards. An acquisition B of a lock that
	// started strictly after an acquisition A of the same lock returned
	// (B.Start > A.At) got a fence B.Fence <= A.Fence. A downstream store
	// that trusts fences would then reject the newer holder or, worse,
	// accept the older one after it. Only acquisitions with fences > 0 are
	// compared. Each violation holds A's and B's Acquire events (for each B,
	// the earlier A with the largest fence). The permits of a semaphore are
	// compared across all its permits, as holds of one lock.
	FenceOrder []Violation

	// FenceTies: two holds of the same lock with different tokens got the
	// same fence (> 0), whether or not they overlapped. A guard that
	// accepts a fence equal to the highest it has seen would then accept
	// both holders: fences must also tell holders apart. For each fence
	// shared by several holds, each later hold (by Acquire.At) is one
	// violation holding the first hold's Acquire event and its own. Two
	// permits of a semaphore must not share a fence either.
	FenceTies []Violation

	// StaleWrites: the downstream store accepted a write whose fence is
	// lower than a fence it had already accepted for the same resource, in
	// the store's order of acceptance (Seq, then At). That is exactly what
	// fencing exists to prevent: a stale holder overwrote a newer one. Each
	// violation holds the earlier write with the highest fence and the
	// stale write.
	StaleWrites []Violation

	// LostIncrements: a fenced counter lost updates. For each resource in
	// CheckOptions.Counters: the store accepted more increments than the
	// final counter value shows (one violation giving the difference, with
	// no events); and every value written by more than one accepted write
	// (two holders incremented from the same read; one violation per value
	// with those writes).
	LostIncrements []Violation

	// LateLoss: a holder was not told in time that it lost the lock. Either
	// a Lost event came more than the tolerance after the hold's local
	// deadline, or a hold believed when a MajorityGone event for its lock
	// happened got neither Lost nor Release by its deadline plus the
	// tolerance (holds whose deadline plus tolerance lies after the end of
	// the history are not judged). A holder that is not told keeps writing
	// as if it held the lock. Each violation holds the Acquire event, then
	// the Lost, Release or MajorityGone event concerned.
	LateLoss []Violation
}

// Violation is one breach of an invariant found by [Check].
type Violation struct {
	Kind   string  // "overlap", "permits", "fence-order", "fence-tie", "stale-write", "lost-increment" or "late-loss"
	Events []Event // the events involved, as recorded
	Detail string  // one line a person can read
}

// The values of Violation.Kind.
const (
	kindOverlap       = "overlap"
	kindPermits       = "permits"
	kindFenceOrder    = "fence-order"
	kindFenceTie      = "fence-tie"
	kindStaleWrite    = "stale-write"
	kindLostIncrement = "lost-increment"
	kindLateLoss      = "late-loss"
)

// String formats v as "kind: detail".
func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// OK reports whether r contains no violation of any kind.
func (r *Report) OK() bool {
	return len(r.Violations()) == 0
}

// Violations returns all violations in one new slice: overlaps, then
// permits, fence order, fence ties, stale writes, lost increments and late
// losses.
func (r *Report) Violations() []Violation {
	var all []Violation
	for _, vs := range [][]Violation{r.Overlaps, r.Permits, r.FenceOrder, r.FenceTies, r.StaleWrites, r.LostIncrements, r.LateLoss} {
		all = append(all, vs...)
	}
	return all
}

// maxListed is how many violations Report.String lists.
const maxListed = 5

// String returns a short multi-line summary: the counts, the number of
// violations of each kind and the first few violations.
func (r *Report) String() string {
	if r == nil {
		return "no report"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d acquisitions, %d writes (%d accepted, %d rejected), %d faults",
		r.Acquisitions, r.Writes, r.AcceptedWrites, r.RejectedWrites, r.Faults)
	if r.OK() {
		b.WriteString(": OK")
		return b.String()
	}
	all := r.Violations()
	fmt.Fprintf(&b, "\n%d violations: %d overlap, %d permits, %d fence-order, %d fence-tie, %d stale-write, %d lost-increment, %d late-loss",
		len(all), len(r.Overlaps), len(r.Permits), len(r.FenceOrder), len(r.FenceTies), len(r.StaleWrites), len(r.LostIncrements), len(r.LateLoss))
	for i, v := range all {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... and %d more", len(all)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}
