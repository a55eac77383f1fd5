package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		faults string // in the output when node faults are injected
	}{
		{"local nodes with faults", nil, "FAULT  killed node(s) [1 2]"},
		{"given nodes", []string{"--nodes", nodesFlag(t)}, "no node faults"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeline := filepath.Join(t.TempDir(), "timeline.html")
			args := append([]string{"demo", "--duration", "6s", "--timeline", timeline}, tt.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("demo = %d; want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, want := range []string{
				tt.faults,
				"pauses (as in a GC pause)",
				"REJECTED: the store has seen fence",
				"= accepted increments: nothing lost",
				"stale writes accepted  0\n",
				"  checker  ",
				"timeline               " + timeline,
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("demo output does not contain %q:\n%s", want, stdout)
				}
			}
			for _, bad := range []string{"overlap:", "fence-order:", "stale-write:", "lost-increment:"} {
				if strings.Contains(stdout, bad) {
					t.Errorf("demo checker reports a %s violation:\n%s", bad, stdout)
				}
			}
			m := regexp.MustCompile(`stale writes rejected  (\d+)`).FindStringSubmatch(stdout)
			if m == nil || m[1] == "0" {
				t.Errorf("demo summary: stale writes rejected = %v; want at least 1 (the paused worker)", m)
			}
			b, err := os.ReadFile(timeline)
			if err != nil || !strings.Contains(string(b), "<svg") {
				t.Errorf("timeline %s: %v, %d bytes; want an HTML file with an SVG chart", timeline, err, len(b))
			}
		})
	}
}
