package guard

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed guard.lua
var guardSrc string

var guardScript = redis.NewScript(guardSrc)

// fenceKeyPrefix starts the key in which a Redis guard records the highest
// fence of a resource: see [FenceKey].
const fenceKeyPrefix = "redlock-fence:"

// Redis fences reads and writes to a downstream Redis: each call is one Lua
// script that checks the holder's fence against the highest fence recorded
// for the resource and the owner it came from (the rule [Accepts]), records
// both and does the access, atomically. A call with a fence lower than the
// recorded one, or equal to it from another holder, changes nothing and
// returns an error matching [ErrStaleFence]; a call with fence 0 changes
// nothing and returns one matching [ErrNoFence].
//
// The highest fence of resource and its owner are kept in the key
// [FenceKey](resource), "redlock-fence:{<resource>}", as "<fence>:<owner>"
// (the holder's [OwnerID], never its token; a plain "<fence>" reads as
// owner ""), with no expiry: deleting it would let a stale holder back in.
// One resource may cover many data keys; each call names one. With Redis
// Cluster, the script's keys must share a hash slot: the braces in the
// fence key are a hash tag, so data keys must carry the same tag,
// "{<resource>}" (for resource "orders:42", a data key such as
// "{orders:42}:total"); the resource then must not contain '{' or '}'.
// Otherwise Redis refuses the call with a CROSSSLOT error.
//
// The downstream Redis is the one being protected, not one of the lock's
// nodes (it may be, but need not). It should persist what it accepts (AOF):
// a store that restarts empty forgets the fences along with the data.
//
// A Redis guard is safe for concurrent use.
type Redis struct {
	rdb redis.Scripter
}

// NewRedis returns a guard for the Redis that rdb talks to. Any go-redis
// client fits (standalone, failover or Cluster); the guard does not close
// it.
func NewRedis(rdb redis.Scripter) *Redis {
	return &Redis{rdb: rdb}
}

// Set sets key to value if h's fence is above the highest fence recorded for
// resource, or equal to it and recorded from h, and records the fence and
// h's owner id, atomically. Otherwise it changes nothing and returns an
// error matching [ErrStaleFence] ([ErrNoFence] for fence 0). If key holds
// something other than a string, or the fence key was written by someone
// else, Set changes nothing and says so.
func (g *Redis) Set(ctx context.Context, resource, key, value string, h Holder) error {
	status, _, err := g.run(ctx, "set", resource, key, h, value)
	if err != nil {
		return err
	}
	if status != 1 {
		return fmt.Errorf("redlock: fenced set of %q: unexpected status %d from the guard script", key, status)
	}
	return nil
}

// Get reads key if h's fence is above the highest fence recorded for
// resource, or equal to it and recorded from h, and records the fence and
// h's owner id, atomically; ok is false if key does not exist. Recording the
// fence on a read is what makes a read-modify-write safe: once a newer
// holder has read, an older holder's later Set is rejected (the package
// doc says why). Otherwise Get returns an error matching ErrStaleFence
// ([ErrNoFence] for fence 0) and changes nothing.
func (g *Redis) Get(ctx context.Context, resource, key string, h Holder) (value string, ok bool, err error) {
	status, v, err := g.run(ctx, "get", resource, key, h, "")
	if err != nil {
		return "", false, err
	}
	switch status {
	case 1:
		return v, true, nil
	case 2:
		return "", false, nil
	}
	return "", false, fmt.Errorf("redlock: fenced get of %q: unexpected status %d from the guard script", key, status)
}

// Highest returns the highest fence recorded for resource, 0 if none.
func (g *Redis) Highest(ctx context.Context, resource string) (uint64, error) {
	if resource == "" {
		return 0, errEmptyResource
	}
	res, err := guardScript.Run(ctx, g.rdb, []string{FenceKey(resource)}, "highest").Slice()
	if err != nil {
		return 0, fmt.Errorf("redlock: reading the fence of resource %q: %w", resource, err)
	}
	_, h, err := guardReply(res)
	if err != nil {
		return 0, fmt.Errorf("redlock: reading the fence of resource %q: %w", resource, err)
	}
	f, err := strconv.ParseUint(h, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redlock: the fence of resource %q is %q, not a uint64: delete key %s", resource, h, FenceKey(resource))
	}
	return f, nil
}

var errEmptyResource = errors.New("redlock: empty resource name: name the resource the fence protects, such as the lock name")

// FenceKey returns the key in which a [Redis] guard records the highest
// fence of resource and its owner, "redlock-fence:{<resource>}": the key to
// name in ACL rules, or to delete when the resource itself is deleted for
// good.
func FenceKey(resource string) string {
	return fenceKeyPrefix + "{" + resource + "}"
}

// run runs the guard script for a set or get of key by h and returns its
// status and value. A stale fence is returned as an error.
func (g *Redis) run(ctx context.Context, op, resource, key string, h Holder, value string) (int64, string, error) {
	if resource == "" {
		return 0, "", errEmptyResource
	}
	fence := h.Fence()
	if fence == 0 {
		return 0, "", noFence("resource " + strconv.Quote(resource))
	}
	fenceKey := FenceKey(resource)
	if key == fenceKey {
		return 0, "", fmt.Errorf("redlock: fenced %s: key %q is the fence key of resource %q: use another key for the data", op, key, resource)
	}
	res, err := guardScript.Run(ctx, g.rdb, []string{fenceKey, key}, op, strconv.FormatUint(fence, 10), OwnerID(h.Token()), value).Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "CROSSSLOT") {
			return 0, "", fmt.Errorf("redlock: fenced %s of %q: with Redis Cluster the data key must carry the hash tag {%s} of the resource's fence key %s: %w", op, key, resource, fenceKey, err)
		}
		return 0, "", fmt.Errorf("redlock: fenced %s of %q (resource %q, fence %d): %w", op, key, resource, fence, err)
	}
	status, v, err := guardReply(res)
	if err != nil {
		return 0, "", fmt.Errorf("redlock: fenced %s of %q: %w", op, key, err)
	}
	switch status {
	case 0:
		return 0, "", staleFence("resource "+strconv.Quote(resource), fence, v)
	case 3:
		return 0, "", fenceTie("resource "+strconv.Quote(resource), fence)
	}
	return status, v, nil
}

// guardReply decodes the guard script's reply {status[, value]}.
func guardReply(res []any) (int64, string, error) {
	if len(res) == 0 || len(res) > 2 {
		return 0, "", fmt.Errorf("unexpected reply %v from the guard script", res)
	}
	status, ok := res[0].(int64)
	if !ok {
		return 0, "", fmt.Errorf("unexpected reply %v from the guard script", res)
	}
	if len(res) == 1 {
		return status, "", nil
	}
	v, ok := res[1].(string)
	if !ok {
		return 0, "", fmt.Errorf("unexpected reply %v from the guard script", res)
	}
	return status, v, nil
}
