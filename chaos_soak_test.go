package redlock_test

import (
	"flag"
	"os"
	"testing"
	"time"
)

var chaosDurationFlag = flag.Duration("chaos.duration", 0,
	"how long TestChaosSoak runs (default $REDLOCK_CHAOS_DURATION, else 20s)")

// chaosDuration is the soak's duration: the -chaos.duration flag, else
// $REDLOCK_CHAOS_DURATION, else 20s (the short soak CI runs).
func chaosDuration(tb testing.TB) time.Duration {
	tb.Helper()
	if *chaosDurationFlag > 0 {
		return *chaosDurationFlag
	}
	if s := os.Getenv("REDLOCK_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			tb.Fatalf("REDLOCK_CHAOS_DURATION=%q: want a positive duration such as 10m", s)
		}
		return d
	}
	return 20 * time.Second
}
