package guard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

func TestRedisErrors(t *testing.T) {
	rdb := storeNode(t)
	g := guard.NewRedis(rdb)
	ctx := t.Context()
	const res = "guard-errors"
	fenceKey, dataKey := guard.FenceKey(res), "{"+res+"}:data"
	reset := func(t *testing.T) {
		t.Helper()
		if err := rdb.Del(ctx, fenceKey, dataKey).Err(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("BigFences", func(t *testing.T) {
		reset(t)
		guardtest.BigFences(t, res,
			func(h guard.Holder, v string) error { return g.Set(ctx, res, dataKey, v, h) },
			func() (string, uint64, error) {
				h, err := g.Highest(ctx, res)
				return rdb.Get(ctx, dataKey).Val(), h, err
			})
	})

	t.Run("OwnerRecord", func(t *testing.T) {
		// The fence key holds the fence and the owner id, never the token.
		reset(t)
		const token = "secret-token-of-a"
		if err := g.Set(ctx, res, dataKey, "a", guard.HolderOf(5, token)); err != nil {
			t.Fatalf("Set(fence 5) = %v", err)
		}
		rec := rdb.Get(ctx, fenceKey).Val()
		if want := "5:" + guard.OwnerID(token); rec != want || strings.Contains(rec, token) {
			t.Errorf("fence key = %q; want %q, without the token", rec, want)
		}
		// A plain "<fence>", as older versions wrote it, reads as owner "".
		rdb.Set(ctx, fenceKey, "9", 0)
		if h, err := g.Highest(ctx, res); h != 9 || err != nil {
			t.Errorf("Highest(legacy record 9) = %d, %v; want 9, nil", h, err)
		}
		guardtest.AssertTie(t, "Set(fence 9) over a legacy record", g.Set(ctx, res, dataKey, "b", guard.HolderOf(9, token)), res, 9)
		if err := g.Set(ctx, res, dataKey, "c", guard.HolderOf(10, token)); err != nil {
			t.Errorf("Set(fence 10) over a legacy record 9 = %v; want nil", err)
		}
		if v := rdb.Get(ctx, dataKey).Val(); v != "c" {
			t.Errorf("data = %q; want %q", v, "c")
		}
	})

	t.Run("MissingKey", func(t *testing.T) {
		reset(t)
		v, ok, err := g.Get(ctx, res, dataKey, guardtest.HolderAt(4))
		if v != "" || ok || err != nil {
			t.Errorf("Get(missing key) = %q, %v, %v; want \"\", false, nil", v, ok, err)
		}
		if h, _ := g.Highest(ctx, res); h != 4 {
			t.Errorf("Highest after Get(missing key, fence 4) = %d; want 4 (reads record the fence)", h)
		}
	})

	// Each case leaves the store as it found it and says what is wrong.
	cases := []struct {
		name    string
		setup   func(t *testing.T)
		op      func() error
		want    string
		checkNo string // a key that must still not exist
	}{
		{
			name:    "DataKeyWrongType",
			setup:   func(t *testing.T) { rdb.RPush(ctx, dataKey, "x") },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", guardtest.HolderAt(1)) },
			want:    "holds a list, not a string",
			checkNo: fenceKey,
		},
		{
			name:    "GetDataKeyWrongType",
			setup:   func(t *testing.T) { rdb.SAdd(ctx, dataKey, "x") },
			op:      func() error { _, _, err := g.Get(ctx, res, dataKey, guardtest.HolderAt(1)); return err },
			want:    "holds a set, not a string",
			checkNo: fenceKey,
		},
		{
			name:    "FenceKeyWrongType",
			setup:   func(t *testing.T) { rdb.HSet(ctx, fenceKey, "f", "1") },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", guardtest.HolderAt(1)) },
			want:    "holds a hash, not a fence",
			checkNo: dataKey,
		},
		{
			name:    "FenceKeyNotANumber",
			setup:   func(t *testing.T) { rdb.Set(ctx, fenceKey, "12abc", 0) },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", guardtest.HolderAt(99)) },
			want:    `holds "12abc", not a fence`,
			checkNo: dataKey,
		},
		{
			name:    "FenceKeyBadOwner",
			setup:   func(t *testing.T) { rdb.Set(ctx, fenceKey, "12:NotHex", 0) },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", guardtest.HolderAt(99)) },
			want:    `holds "12:NotHex", not a fence`,
			checkNo: dataKey,
		},
		{
			name:    "NoFence",
			setup:   func(t *testing.T) {},
			op:      func() error { return g.Set(ctx, res, dataKey, "v", guardtest.HolderAt(0)) },
			want:    "acquired with NoFence",
			checkNo: fenceKey,
		},
		{
			name:  "HighestFenceKeyWrongType",
			setup: func(t *testing.T) { rdb.LPush(ctx, fenceKey, "1") },
			op:    func() error { _, err := g.Highest(ctx, res); return err },
			want:  "holds a list, not a fence",
		},
		{
			name:  "EmptyResource",
			op:    func() error { return g.Set(ctx, "", dataKey, "v", guardtest.HolderAt(1)) },
			want:  "empty resource name",
			setup: func(t *testing.T) {},
		},
		{
			name:    "DataKeyIsFenceKey",
			setup:   func(t *testing.T) {},
			op:      func() error { return g.Set(ctx, res, fenceKey, "v", guardtest.HolderAt(1)) },
			want:    "is the fence key",
			checkNo: fenceKey,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reset(t)
			c.setup(t)
			before := dump(t, rdb, fenceKey, dataKey)
			err := c.op()
			if err == nil || !strings.HasPrefix(err.Error(), "redlock: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error = %v; want a redlock: error containing %q", c.name, err, c.want)
			}
			if errors.Is(err, guard.ErrStaleFence) {
				t.Errorf("%s: error = %v; want it not to match guard.ErrStaleFence", c.name, err)
			}
			if after := dump(t, rdb, fenceKey, dataKey); after != before {
				t.Errorf("%s changed the store: %s; want %s", c.name, after, before)
			}
			if c.checkNo != "" {
				if n := rdb.Exists(ctx, c.checkNo).Val(); n != 0 {
					t.Errorf("%s created key %s; want nothing changed", c.name, c.checkNo)
				}
			}
		})
	}
	reset(t)
}

// dump returns the type and serialized value of each key.
func dump(t testing.TB, rdb *redis.Client, keys ...string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		typ, err := rdb.Type(t.Context(), k).Result()
		if err != nil {
			t.Fatalf("TYPE %s: %v", k, err)
		}
		d, err := rdb.Dump(t.Context(), k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		fmt.Fprintf(&b, "%s=%s:%q ", k, typ, d)
	}
	return b.String()
}
