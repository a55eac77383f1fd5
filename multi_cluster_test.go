package redlock

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// TestMultiRedisCluster: on a Redis Cluster node, where a set's names fall
// in different hash slots, a set takes its names one at a time in sorted
// order, all or nothing, and overlapping sets still make progress.
func TestMultiRedisCluster(t *testing.T) {
	rc := redlocktest.StartRedisCluster(t, 3, nil)
	cc := rc.Client()
	ns := []redis.UniversalClient{cc}
	c1, c2 := newTestClient(t, ns, patient), newTestClient(t, ns, patient)
	ctx := t.Context()
	names := multiNames(t, 3)
	slots := map[int64]bool{}
	for _, name := range names {
		slots[cc.ClusterKeySlot(ctx, c1.keys(name).lock).Val()] = true
	}
	if len(slots) < 2 {
		t.Fatalf("control: the names' keys share one slot; pick other names")
	}

	m, err := c1.AcquireMulti(ctx, names, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("AcquireMulti = %v", err)
	}
	if SetSize(m.Token()) != 3 {
		t.Errorf("SetSize(token) = %d; want 3", SetSize(m.Token()))
	}
	for _, name := range names {
		if m.Fence(name) == 0 {
			t.Errorf("Fence(%q) = 0; want a fence", name)
		}
		if _, err := c2.TryAcquire(ctx, name, time.Second, nil); !errors.Is(err, ErrHeld) {
			t.Errorf("TryAcquire(%q) under the set = %v; want ErrHeld", name, err)
		}
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	select {
	case <-m.Done():
	default:
		t.Errorf("Done not closed after Release")
	}
	if !errors.Is(m.Err(), ErrReleased) {
		t.Errorf("Err() after Release = %v; want ErrReleased", m.Err())
	}
	assertNoKeysOf(t, ns, names)

	// All or nothing: the last name held, the first ones are given back.
	l, err := c2.Acquire(ctx, names[2], 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire = %v", err)
	}
	if _, err := c1.TryAcquireMulti(ctx, names, 10*time.Second, nil); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquireMulti over a held name = %v; want ErrHeld", err)
	}
	assertNoKeysOf(t, ns, names[:2])
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}

	runMultiContention(t, ns, func() {}, 1500*time.Millisecond)
}
