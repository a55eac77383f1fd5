package redlock

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The model of sets of names (model_multi_world_test.go, docs/model.md):
// two overlapping sets in both orders, a set overlapping them on another
// name, and a plain lock, on 3 nodes with late requests and expiring
// strays.

// mmDepth bounds the search of a world of clients clients: the steps from
// the start, by default (a few seconds each) and under -long (make model),
// or REDLOCK_MODEL_MULTI_DEPTH. Two clients contend after about ten steps
// (a round is a send, three deliveries and a decision); from every state
// reached, the liveness check runs the whole fault-free suffix.
func mmDepth(clients int) int {
	if d := os.Getenv("REDLOCK_MODEL_MULTI_DEPTH"); d != "" {
		n, _ := strconv.Atoi(d)
		return n
	}
	d := 12
	if *modelLong {
		d = 16
	}
	if clients > 3 {
		d -= 3
	}
	return d
}

const (
	mmA, mmB, mmC = 0, 1, 2
)

func TestModelMultiSets(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets [][]uint8
	}{
		{"{a,b} {b,a} {b}", [][]uint8{{mmA, mmB}, {mmB, mmA}, {mmB}}},
		{"{a,b} {b,c} {b}", [][]uint8{{mmA, mmB}, {mmB, mmC}, {mmB}}},
		{"{a,b} {b,a} {b,c} {b}", [][]uint8{{mmA, mmB}, {mmB, mmA}, {mmB, mmC}, {mmB}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &mmWorld{rule: mmAll, sets: tc.sets, attempts: 2}
			r := w.check(mmDepth(len(tc.sets)))
			if r.violation != "" {
				t.Fatalf("after %d states: %s", r.states, r.violation)
			}
			t.Logf("%d states, no violation", r.states)
		})
	}
}

// TestModelMultiNaiveDeadlocks is the control: the naive rule (each name a
// plain lock, in the caller's order, holding the earlier ones) deadlocks
// {a,b} against {b,a}, and the checker says so.
func TestModelMultiNaiveDeadlocks(t *testing.T) {
	w := &mmWorld{rule: mmNaive, sets: [][]uint8{{mmA, mmB}, {mmB, mmA}}, attempts: 2}
	r := w.check(mmDepth(2))
	if !strings.Contains(r.violation, "no progress") {
		t.Fatalf("naive rule: %q after %d states; want a report of no progress", r.violation, r.states)
	}
	t.Logf("control caught: %s", r.violation)
	// The same rule with both sets in one order (sorted names) makes
	// progress: the order, not the checker, is at fault.
	w = &mmWorld{rule: mmNaive, sets: [][]uint8{{mmA, mmB}, {mmA, mmB}}, attempts: 2}
	if r := w.check(mmDepth(2)); r.violation != "" {
		t.Fatalf("naive rule in one order: %s", r.violation)
	}
}

// TestModelMultiExclusionControl is the exclusion check's control: a node
// step that checks only the set's first name lets two sets each believe
// they hold b.
func TestModelMultiExclusionControl(t *testing.T) {
	w := &mmWorld{rule: mmAll, sets: [][]uint8{{mmA, mmB}, {mmB, mmC}}, attempts: 2, firstOnly: true}
	r := w.check(mmDepth(2))
	if !strings.Contains(r.violation, "held by clients") {
		t.Fatalf("partial takes: %q after %d states; want an exclusion violation", r.violation, r.states)
	}
	t.Logf("control caught: %s", r.violation)
}
