package redlock_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// TestElectionForgedTerm (issue 28, item 3): an Acquire of an election's
// name whose metadata looks like an announced term never makes Leader or
// Observe report that term, whatever form the metadata takes; once it is
// released, the genuine leader that follows is reported with its term,
// which Inspect and ForceRelease read apart from its value.
func TestElectionForgedTerm(t *testing.T) {
	e := newEnv(t, 3, memFenced, nil)
	spoofer, c2 := e.client("spoofer"), e.client("c2")
	reader := e.directClient()
	const name = "elect-forged-term"
	const forged = 999999999
	const ttl = 5 * time.Second
	watch := observer(t, reader, name)
	for _, o := range []redlock.AcquireOptions{
		{Metadata: "spoofer\n999999999"},   // the announce record's form before the fix
		{Metadata: "#999999999:spoofer"},   // the record's form after the token
		{Metadata: "999999999:spoofer"},    // the same, without its mark
		{Metadata: "spoofer\n999999999\n"}, // a trailing separator
		{Metadata: "spoofer\n999999999", Reentrant: true},
	} {
		l := mustAcquire(t, spoofer, name, ttl, 5*time.Second, &o, "healthy cluster")
		info, err := reader.Leader(within(t, 5*time.Second), name)
		if err != nil || !info.Held || info.Term != 0 || info.Value != o.Metadata {
			t.Errorf("Leader while an Acquire with %+v (fence %d) holds the name = %+v, %v; want it held, Value its metadata, Term 0 (it recorded none)", o, l.Fence(), info, err)
		}
		time.Sleep(500 * time.Millisecond) // Observe reads it, twice at least
		if err := spoofer.release(l); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	ld := mustCampaign(t, c2, name, ttl, 5*time.Second, "healthy cluster")
	info, err := reader.Leader(within(t, 5*time.Second), name)
	if err != nil || !info.Held || info.Value != "c2" || info.Term != ld.Term() {
		t.Errorf("Leader after the spoofers = %+v, %v; want c2 at term %d", info, err, ld.Term())
	}

	// The record, as Inspect and ForceRelease read it: the value as the
	// metadata, the term apart (TestElectionLeader reads it).
	st, err := reader.Inspect(within(t, 5*time.Second), name)
	if err != nil {
		t.Fatalf("Inspect = %v", err)
	}
	for _, ns := range st.Nodes {
		if !ns.Held || ns.Metadata != "c2" {
			t.Errorf("Inspect's node %d = %+v; want held, Metadata \"c2\"", ns.Node, ns)
		}
	}
	time.Sleep(500 * time.Millisecond) // Observe reads c2
	broken, err := reader.ForceRelease(within(t, 5*time.Second), name)
	for _, b := range broken {
		if !b.Deleted || b.Metadata != "c2" {
			t.Errorf("ForceRelease's node %d = %+v, %v; want deleted, Metadata \"c2\"", b.Node, b, err)
		}
	}
	wantLost(t, "forged term", ld.Lock(), 2*ttl)

	found := false
	seen := watch()
	for _, info := range seen {
		if info.Term == forged {
			t.Errorf("Observe sent %+v; want never the forged term", info)
		}
		found = found || info.Held && info.Value == "c2" && info.Term == ld.Term()
	}
	if !found {
		t.Errorf("Observe sent %+v; want c2 at term %d among them", seen, ld.Term())
	}
	rep := e.check()
	assertClean(t, "forged term", rep)
	e.finish(t.Name(), rep, nil)
}
