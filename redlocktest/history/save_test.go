package history_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

func TestSaveLoad(t *testing.T) {
	in := &history.Saved{
		Title:    "round trip",
		Counters: map[string]int64{"r": 1},
		Events: []history.Event{
			{Kind: history.Acquire, Client: "c1", Node: -1, Lock: "r", Token: "t1", Fence: 7,
				Start: time.Millisecond, At: 2 * time.Millisecond, Until: time.Second},
			{Kind: history.Fault, Client: "c1", Node: 0, At: 3 * time.Millisecond, Detail: "down"},
			{Kind: history.Write, Client: "c1", Node: -1, Lock: "r", Token: "t1", Fence: 7,
				Start: 4 * time.Millisecond, At: 5 * time.Millisecond, Accepted: true, Seq: 1, Value: 1},
		},
	}
	var buf bytes.Buffer
	if err := history.Save(&buf, in); err != nil {
		t.Fatalf("Save = %v; want nil", err)
	}
	out, err := history.Load(&buf)
	if err != nil {
		t.Fatalf("Load(Save(h)) = %v; want nil", err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("Load(Save(h)) = %+v; want %+v", out, in)
	}
	if !history.Check(out.Events, &history.CheckOptions{Counters: out.Counters}).OK() {
		t.Errorf("Check of the reloaded history found violations; want none")
	}

	for _, bad := range []string{`{"version": 2, "events": []}`, `{"version": 1, "events": [], "extra": 1}`, `[`} {
		if _, err := history.Load(strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), "redlocktest:") {
			t.Errorf("Load(%s) = %v; want a redlocktest: error", bad, err)
		}
	}
}

// TestSaveLoadPermits: Limit survives Save and Load, and a history saved
// before semaphores (no "limit") loads as locks.
func TestSaveLoadPermits(t *testing.T) {
	in := &history.Saved{Title: "permits", Events: permitsHistory(2)}
	var buf bytes.Buffer
	if err := history.Save(&buf, in); err != nil {
		t.Fatalf("Save = %v; want nil", err)
	}
	if !strings.Contains(buf.String(), `"limit": 2`) {
		t.Errorf("Save(permits history) wrote no \"limit\": %s", buf.String())
	}
	out, err := history.Load(&buf)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("Load(Save(permits history)) = %+v, %v; want %+v, nil", out, err, in)
	}

	old := `{"version": 1, "events": [{"kind": "acquire", "client": "c1", "node": -1, "lock": "r", "token": "t1", "fence": 7, "at_ns": 2000, "until_ns": 900000000}]}`
	saved, err := history.Load(strings.NewReader(old))
	if err != nil || len(saved.Events) != 1 || saved.Events[0].Limit != 0 {
		t.Errorf("Load(history without limits) = %+v, %v; want one event with Limit 0", saved, err)
	}
	// A history of locks is written as before semaphores: without "limit".
	buf.Reset()
	if err := history.Save(&buf, &history.Saved{Events: permitsHistory(0)}); err != nil || strings.Contains(buf.String(), `"limit"`) {
		t.Errorf("Save(history of locks) = %v, wrote %s; want nil and no \"limit\"", err, buf.String())
	}
}
