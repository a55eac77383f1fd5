package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock"
)

// permitsStatus is status -n N: semaphore NAME's permits and waiters. It
// returns 0 when every permit is held, 1 when one is free, 69 unknown.
func permitsStatus(ctx context.Context, s *session, o *statusOptions, name string, stdout, stderr io.Writer) int {
	st, err := s.client.InspectPermits(ctx, name, o.limit)
	if err != nil {
		fmt.Fprintf(stderr, "redlock: status: %s\n", trimPrefix(err))
		return exitUsage
	}
	if st.InUse != 0 && st.InUse != st.Limit {
		fmt.Fprintf(stderr, "redlock: status: semaphore %q is in use with %d permits, not %d: run redlock status -n %d %s\n", name, st.InUse, st.Limit, st.InUse, name)
		return exitUsage
	}
	j := permitsJSONOf(st)
	if o.json {
		if err := json.NewEncoder(stdout).Encode(j); err != nil {
			fmt.Fprintf(stderr, "redlock: status: %v\n", err)
			return exitFailure
		}
	} else {
		printPermits(stdout, st, j)
	}
	switch j.State {
	case "full":
		return exitOK
	case "available":
		return exitFree
	}
	if j.Answered < st.Quorum {
		fmt.Fprintf(stderr, "redlock: only %d of %s answered, a semaphore needs %d: its state is unknown; check --nodes/$%s and that the servers are up\n", j.Answered, nodesN(len(s.nodes)), st.Quorum, nodesEnv)
	} else {
		fmt.Fprintf(stderr, "redlock: the nodes' answers on %d of the %d permits of %q are split: none is free on a quorum; look again in a moment\n", st.Limit-st.Held-st.Free, st.Limit, name)
	}
	return exitUnavailable
}

// permitsJSON is status -n N --json's output.
type permitsJSON struct {
	Name     string       `json:"name"`
	Limit    int          `json:"limit"`
	Quorum   int          `json:"quorum"`
	State    string       `json:"state"` // "full" (every permit held), "available" (one free) or "unknown"
	Held     int          `json:"held"`
	Free     int          `json:"free"`
	Answered int          `json:"answered"` // the fewest nodes that answered for a slot
	Slots    []slotJSON   `json:"slots"`
	Waiting  int          `json:"waiting"` // the first waiter and the others
	First    *firstJSON   `json:"first"`   // the gate's holder, the next to take a permit; null when none
	Waiters  []waiterJSON `json:"waiters"` // the others, in order (at most 32 listed)
}

// slotJSON is one permit, read as status reads a lock.
type slotJSON struct {
	Slot     int    `json:"slot"`
	State    string `json:"state"`            // "held", "free" or "unknown"
	Holder   string `json:"holder,omitempty"` // the token on the most nodes
	HeldOn   int    `json:"held_on"`
	TTLms    int64  `json:"ttl_ms"` // the holder's least TTL on the nodes; -1: no expiry; 0 when not held
	Metadata string `json:"metadata,omitempty"`
}

// firstJSON is the waiter that holds the semaphore's gate.
type firstJSON struct {
	Token  string `json:"token"`
	HeldOn int    `json:"held_on"`
}

func permitsJSONOf(st *redlock.PermitsState) permitsJSON {
	j := permitsJSON{Name: st.Name, Limit: st.Limit, Quorum: st.Quorum, Held: st.Held, Free: st.Free, Answered: st.Gate.Answered,
		Slots: make([]slotJSON, len(st.Slots)), Waiting: st.Waiting, Waiters: jsonWaiters(st.Gate.Waiters)}
	for i, ls := range st.Slots {
		j.Answered = min(j.Answered, ls.Answered)
		sj := slotJSON{Slot: i, State: "unknown", Holder: ls.Holder, HeldOn: ls.HeldOn}
		switch {
		case ls.Held:
			sj.State = "held"
			ttl, meta := holderTTL(&ls)
			sj.TTLms, sj.Metadata = ttl.Milliseconds(), meta
			if ttl < 0 {
				sj.TTLms = -1
			}
		case ls.Free:
			sj.State = "free"
		}
		j.Slots[i] = sj
	}
	if st.Gate.Held {
		j.First = &firstJSON{Token: st.Gate.Holder, HeldOn: st.Gate.HeldOn}
	}
	switch {
	case j.Answered < st.Quorum:
		j.State = "unknown"
	case st.Free > 0:
		j.State = "available"
	case st.Held == st.Limit:
		j.State = "full"
	default:
		j.State = "unknown"
	}
	return j
}

// holderTTL returns the least TTL of the holder's keys on the nodes (-1:
// no expiry) and the holder's metadata.
func holderTTL(ls *redlock.LockState) (time.Duration, string) {
	ttl, meta := time.Duration(-1), ""
	for _, ns := range ls.Nodes {
		if ns.Held && ns.Token == ls.Holder {
			if ttl == -1 || ns.TTL >= 0 && ns.TTL < ttl {
				ttl = ns.TTL
			}
			if meta == "" {
				meta = ns.Metadata
			}
		}
	}
	return ttl, meta
}

// printPermits prints the table of the slots, the count held and the
// waiters.
func printPermits(w io.Writer, st *redlock.PermitsState, j permitsJSON) {
	n := len(st.Gate.Nodes)
	fmt.Fprintf(w, "semaphore %q: %d permits on %s (quorum %d)\n", st.Name, st.Limit, nodesN(n), st.Quorum)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tSTATE\tHOLDER\tNODES\tTTL\tMETADATA")
	for i, sj := range j.Slots {
		holder, ttl, meta := "-", "-", "-"
		if sj.Holder != "" {
			holder = short(sj.Holder)
		}
		if sj.State == "held" {
			d, m := holderTTL(&st.Slots[i])
			ttl, meta = formatTTL(d), strconv.Quote(m)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\t%s\n", sj.Slot, sj.State, holder, sj.HeldOn, n, ttl, meta)
	}
	tw.Flush()
	if j.Answered < st.Quorum {
		fmt.Fprintf(w, "held: unknown (%d of %s answered, quorum %d)\n", j.Answered, nodesN(n), st.Quorum)
		fmt.Fprintln(w, "waiting: unknown")
		return
	}
	fmt.Fprintf(w, "held: %d of %d permits (%d free, %d unknown)\n", st.Held, st.Limit, st.Free, st.Limit-st.Held-st.Free)
	if st.Waiting == 0 {
		fmt.Fprintln(w, "waiting: nobody")
		return
	}
	fmt.Fprintf(w, "waiting: %d, the first takes the next permit freed\n", st.Waiting)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tTOKEN\tCLIENT\tWAITED\tNODES")
	row := 1
	if j.First != nil {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d/%d\n", row, short(j.First.Token), "-", "-", j.First.HeldOn, n)
		row++
	}
	for _, wt := range st.Gate.Waiters {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%d/%d\n", row, short(wt.Token), wt.Client, wt.Age.Round(time.Millisecond), wt.Nodes, n)
		row++
	}
	tw.Flush()
	if more := st.Waiting - row + 1; more > 0 {
		fmt.Fprintf(w, "  … and %d more\n", more)
	}
}
