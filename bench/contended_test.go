package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The in-section counter of contended sees overlapping critical sections
// (the negative control) and reports none when the lock excludes.
func TestContendedCountsOverlaps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sem      chan struct{}
		overlaps bool
	}{
		{"no exclusion", nil, true},
		{"exclusive", make(chan struct{}, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var violations atomic.Int64
			m := contended(context.Background(), []locker{&noopLocker{sem: tc.sem}}, "k", 50*time.Millisecond, &violations, nil)
			if got := violations.Load() > 0; got != tc.overlaps {
				t.Fatalf("violations = %d, want overlaps %v", violations.Load(), tc.overlaps)
			}
			if m["cs_per_s"] <= 0 {
				t.Fatalf("no critical sections counted: %v", m)
			}
		})
	}
}
