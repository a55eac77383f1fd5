// Command demo shows Redlock's fencing under faults: five local Redis nodes
// in Docker (through redlocktest), workers incrementing a fenced counter on
// one lock, node kills and restarts, and a worker paused past its lease
// whose stale write the store rejects. It prints a summary, checks the
// recorded history and writes an HTML timeline.
//
// It is a module of its own, so that the redlock command and the library's
// consumers do not link or download Docker's SDK for it. From a clone:
//
//	make demo
//	make demo DEMO_FLAGS="--duration 8s -q"
//	cd demo && go run . -h
//
// Exit codes: 0 nothing lost and no stale write accepted; 1 otherwise (or
// the checker found a violation); 64 bad usage; 69 the nodes could not be
// started or reached.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Exit codes, after sysexits(3) where one fits.
const (
	exitOK          = 0
	exitFailure     = 1  // something was lost or a stale write got through
	exitUsage       = 64 // EX_USAGE: bad flags, arguments or node URLs
	exitUnavailable = 69 // EX_UNAVAILABLE: nodes not started or too few reachable
)

func main() {
	redis.SetLogger(silentLogger{}) // node failures are reported by the demo, on one line
	os.Exit(demoCmd(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a bad command line, printed on one line with a hint where
// to find the usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// reportUsage prints err on one line with a usage hint and returns exitUsage.
func reportUsage(stderr io.Writer, err error) int {
	msg := oneLine(err)
	if !strings.HasPrefix(msg, "redlock: ") {
		msg = "redlock: demo: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "usage: see 'make demo DEMO_FLAGS=-h' (or 'go run . -h' in demo/)")
	}
	return exitUsage
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func trimPrefix(err error) string {
	return strings.TrimPrefix(oneLine(err), "redlock: ")
}

type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}
