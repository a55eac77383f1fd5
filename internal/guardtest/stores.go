// Package guardtest holds the downstream stores of the tests, one per kind
// (in process and Redis; the PostgreSQL one is in guard/sqltest, a module
// of its own), each behind a guard of package
// [github.com/redlock-go/redlock/guard] or, as the negative control, none.
// The guard tests and the chaos suite of the root package share them.
package guardtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/guard"
)

// Store is a downstream store: one string value per resource, behind a
// guard (or, as the negative control, none).
type Store interface {
	// Create makes resource exist with value "" and no fence recorded
	// (fence 0), replacing what a previous run left.
	Create(tb testing.TB, resource string)
	// Write sets the value of resource, fenced by h.
	Write(ctx context.Context, resource string, h guard.Holder, value string) error
	// Read returns the value of resource, fenced by h.
	Read(ctx context.Context, resource string, h guard.Holder) (string, error)
	// Stored returns the value and the highest fence of resource, unfenced.
	Stored(ctx context.Context, resource string) (string, uint64, error)
}

var (
	_ Store = (*MemStore)(nil)
	_ Store = (*RedisStore)(nil)
)

// MemStore is values in a map behind a guard.InProcess, or behind nothing
// (unfenced). It counts accesses that overlapped, which a guard must
// prevent.
type MemStore struct {
	guard    *guard.InProcess // nil: unfenced
	mu       sync.Mutex       // protects vals
	vals     map[string]string
	inside   atomic.Int32 // accesses running now
	overlaps atomic.Int32 // accesses that found another one running
}

// NewMemStore returns an empty store, fenced by a guard.InProcess or not.
func NewMemStore(fenced bool) *MemStore {
	s := &MemStore{vals: make(map[string]string)}
	if fenced {
		s.guard = new(guard.InProcess)
	}
	return s
}

func (s *MemStore) Create(_ testing.TB, resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vals[resource] = ""
}

// do runs f as an access of the store through the guard (if any),
// counting overlaps.
func (s *MemStore) do(resource string, h guard.Holder, f func()) error {
	access := func() error {
		if s.inside.Add(1) != 1 {
			s.overlaps.Add(1)
		}
		defer s.inside.Add(-1)
		s.mu.Lock()
		defer s.mu.Unlock()
		f()
		return nil
	}
	if s.guard == nil {
		return access()
	}
	return s.guard.Do(resource, h, access)
}

func (s *MemStore) Write(_ context.Context, resource string, h guard.Holder, value string) error {
	return s.do(resource, h, func() { s.vals[resource] = value })
}

func (s *MemStore) Read(_ context.Context, resource string, h guard.Holder) (v string, err error) {
	err = s.do(resource, h, func() { v = s.vals[resource] })
	return v, err
}

func (s *MemStore) Stored(_ context.Context, resource string) (string, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var f uint64
	if s.guard != nil {
		f = s.guard.Highest(resource)
	}
	return s.vals[resource], f, nil
}

// Overlaps returns how many accesses found another one running.
func (s *MemStore) Overlaps() int { return int(s.overlaps.Load()) }

// RedisStore is string keys in a Redis behind a guard.Redis, or plain GET
// and SET (unfenced).
type RedisStore struct {
	rdb   *redis.Client
	guard *guard.Redis // nil: unfenced
}

// NewRedisStore returns a store in rdb, fenced by a guard.Redis or not.
func NewRedisStore(rdb *redis.Client, fenced bool) *RedisStore {
	s := &RedisStore{rdb: rdb}
	if fenced {
		s.guard = guard.NewRedis(rdb)
	}
	return s
}

// DataKey is the key of resource's value in a RedisStore.
func DataKey(resource string) string { return "{" + resource + "}:value" }

func (s *RedisStore) Create(tb testing.TB, resource string) {
	tb.Helper()
	if err := s.rdb.Del(tb.Context(), guard.FenceKey(resource), DataKey(resource)).Err(); err != nil {
		tb.Fatalf("DEL: %v", err)
	}
}

func (s *RedisStore) Write(ctx context.Context, resource string, h guard.Holder, value string) error {
	if s.guard == nil {
		return s.rdb.Set(ctx, DataKey(resource), value, 0).Err()
	}
	return s.guard.Set(ctx, resource, DataKey(resource), value, h)
}

func (s *RedisStore) Read(ctx context.Context, resource string, h guard.Holder) (string, error) {
	if s.guard == nil {
		v, err := s.rdb.Get(ctx, DataKey(resource)).Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		return v, err
	}
	v, _, err := s.guard.Get(ctx, resource, DataKey(resource), h)
	return v, err
}

func (s *RedisStore) Stored(ctx context.Context, resource string) (string, uint64, error) {
	v, err := s.rdb.Get(ctx, DataKey(resource)).Result()
	if errors.Is(err, redis.Nil) {
		v, err = "", nil
	}
	if err != nil || s.guard == nil {
		return v, 0, err
	}
	f, err := s.guard.Highest(ctx, resource)
	return v, f, err
}
