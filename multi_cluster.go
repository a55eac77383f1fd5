package redlock

import (
	"context"
	"time"
)

// slotted reports whether the set's names must be taken one at a time: some
// node is a Redis Cluster, where one script cannot take keys of different
// hash slots.
func (c *Client) slotted(names []string) bool { return false }

func (c *Client) acquireEach(ctx context.Context, names []string, ttl time.Duration, o AcquireOptions) (*MultiLock, error) {
	panic("TODO")
}
