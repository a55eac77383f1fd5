package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

func TestRun(t *testing.T) {
	// Two holders of one lock at once: the page is drawn and the run fails.
	h := &history.Saved{Title: "saved run", Events: []history.Event{
		{Kind: history.Acquire, Client: "c1", Node: -1, Lock: "r", Token: "t1", Fence: 1, At: time.Millisecond, Until: time.Second},
		{Kind: history.Acquire, Client: "c2", Node: -1, Lock: "r", Token: "t2", Fence: 2, At: 2 * time.Millisecond, Until: time.Second},
	}}
	path := filepath.Join(t.TempDir(), "history.json")
	var buf bytes.Buffer
	if err := history.Save(&buf, h); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var page, report bytes.Buffer
	ok, err := run(&page, &report, path, "", history.DefaultTolerance)
	if err != nil || ok {
		t.Fatalf("run(overlapping history) = %v, %v; want false, nil", ok, err)
	}
	if s := page.String(); !strings.Contains(s, "<svg") || !strings.Contains(s, "saved run") {
		t.Errorf("page = %.200q…; want an SVG timeline titled %q", s, "saved run")
	}
	if !strings.Contains(report.String(), "overlap") {
		t.Errorf("report = %q; want the overlap named", report.String())
	}
	if _, err := run(&page, &report, filepath.Join(t.TempDir(), "missing.json"), "", 0); err == nil {
		t.Error("run(missing file) = nil error; want one")
	}
}
