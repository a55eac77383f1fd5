package guard_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/guardtest"
)

// TestFencedStores runs the scenarios of every guarded store
// (internal/guardtest) on the in-process and the Redis guard. guard.SQL's
// run on PostgreSQL in guard/sqltest, a module of its own.
func TestFencedStores(t *testing.T) {
	lockNodes := func(t testing.TB) []redis.UniversalClient { return nodes(t, 3) }
	mem := guardtest.NewMemStore(true)
	t.Run("memory", func(t *testing.T) { guardtest.RunScenarios(t, mem, "memory", lockNodes) })
	if n := mem.Overlaps(); n != 0 {
		t.Errorf("guard.InProcess ran %d accesses of one resource at once; want 0", n)
	}
	t.Run("redis", func(t *testing.T) {
		guardtest.RunScenarios(t, guardtest.NewRedisStore(storeNode(t), true), "redis", lockNodes)
	})
}
