package main

import (
	"testing"
	"time"
)

func TestWaitFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    waitFlag
		wantErr bool
	}{
		{"forever", waitFlag{forever: true}, false},
		{"0", waitFlag{}, false},
		{"0s", waitFlag{}, false},
		{"10", waitFlag{d: 10 * time.Second}, false},
		{"1m30s", waitFlag{d: 90 * time.Second}, false},
		{"-1s", waitFlag{}, true},
		{"soon", waitFlag{}, true},
	}
	for _, tt := range tests {
		var w waitFlag
		err := w.Set(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && w != tt.want) {
			t.Errorf("Set(%q) = %+v, %v; want %+v, error %v", tt.in, w, err, tt.want, tt.wantErr)
		}
	}
}

func TestNodeTimeoutDefault(t *testing.T) {
	tests := []struct {
		flag, ttl, want time.Duration
	}{
		{0, time.Second, 100 * time.Millisecond},
		{0, 10 * time.Second, 200 * time.Millisecond},
		{0, time.Minute, 500 * time.Millisecond},
		{30 * time.Millisecond, time.Minute, 30 * time.Millisecond},
	}
	for _, tt := range tests {
		n := nodeFlags{nodeTimeout: tt.flag}
		if got := n.timeoutFor(tt.ttl); got != tt.want {
			t.Errorf("timeoutFor(%v) with --node-timeout %v = %v; want %v", tt.ttl, tt.flag, got, tt.want)
		}
	}
}

// TestFlagsEnvName: each flag's variable; the one-letter flags have names
// of their own, -n not $REDLOCK_LIMIT, which run sets for its command.
func TestFlagsEnvName(t *testing.T) {
	for flag, want := range map[string]string{
		"ttl":          "REDLOCK_TTL",
		"node-timeout": "REDLOCK_NODE_TIMEOUT",
		"v":            "REDLOCK_VERBOSE",
		"n":            "REDLOCK_PERMITS",
	} {
		if got := envName(flag); got != want {
			t.Errorf("envName(%q) = %q; want %q", flag, got, want)
		}
	}
}
