package sqltest_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/redlocktest"
)

// shared is three Redis masters in containers for the scenario that takes
// real locks, started by the first test that needs them.
var shared = redlocktest.Shared{N: 3}

func TestMain(m *testing.M) {
	code := shared.Run(m)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}
