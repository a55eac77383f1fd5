package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

// counterStore is a downstream counter per resource: what the lock
// protects, kept in one of the test stores (internal/guardtest). A fenced
// store does what DESIGN §3 asks of a downstream, through one of redlock's
// guards: every read and write carries the holder's fence, and one lower
// than the highest seen for the resource is rejected with
// guard.ErrStaleFence (reads record their fence too, so that a stale
// holder cannot read-modify-write around a newer one). An unfenced store
// ignores fences: the negative control.
type counterStore struct {
	s guardtest.Store

	mu      sync.Mutex // protects touched
	touched map[string]bool
}

// storeKind selects the downstream store of a chaos environment.
type storeKind int

const (
	memFenced     storeKind = iota // in process, guard.InProcess
	memUnfenced                    // in process, no fencing
	redisFenced                    // a Redis container of its own, guard.Redis
	redisUnfenced                  // the same Redis, plain GET and SET
)

// storeTimeout bounds one call to the downstream store, which no fault
// touches.
const storeTimeout = 5 * time.Second

// read returns the counter of resource under h's fence.
func (c *counterStore) read(resource string, h guard.Holder) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	v, err := c.s.Read(ctx, resource, h)
	if err != nil || v == "" {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// write sets the counter of resource to v under h's fence and returns the
// store's order of acceptance: the counter itself, since each accepted
// read-modify-write stores one more than it read (two stale writers of
// one value tie, and the checker orders them by time).
func (c *counterStore) write(resource string, v int64, h guard.Holder) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	c.mu.Lock()
	c.touched[resource] = true
	c.mu.Unlock()
	if err := c.s.Write(ctx, resource, h, strconv.FormatInt(v, 10)); err != nil {
		return 0, err
	}
	return v, nil
}

// current returns resource's counter as the store has it now, without a
// fence (what a reader sees): 0 before its first accepted write.
func (c *counterStore) current(resource string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	v, _, err := c.s.Stored(ctx, resource)
	if err != nil || v == "" {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// counters returns the final value of every resource written.
func (c *counterStore) counters() (map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	m := make(map[string]int64, len(c.touched))
	for r := range c.touched {
		v, _, err := c.s.Stored(ctx, r)
		if err == nil {
			m[r], err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("final counter of %q: %w", r, err)
		}
	}
	return m, nil
}
