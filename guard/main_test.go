package guard_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlock-go/redlock/redlocktest"
)

// shared is four Redis masters in containers, started by the first test
// that needs them: nodes 0 to 2 serve the locks, node 3 is the downstream
// store the Redis guard protects.
var shared = redlocktest.Shared{N: 4}

func TestMain(m *testing.M) {
	redlocktest.SkipExamplesWithoutDocker("^ExampleRedis$")
	code := shared.Run(m)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}

// nodes returns the first n of the shared lock nodes (n <= 3).
func nodes(t testing.TB, n int) []redis.UniversalClient {
	t.Helper()
	return shared.Cluster(t).Clients()[:n]
}

// storeNode returns the shared downstream Redis.
func storeNode(t testing.TB) *redis.Client {
	t.Helper()
	return shared.Cluster(t).Client(3)
}
