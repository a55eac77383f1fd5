package redlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of the downstream fencing guards. The same scenarios run on each
// store: in-process (FenceGuard), Redis (RedisGuard on a node of the shared
// cluster) and PostgreSQL (SQLGuard on a server started by the test).

// assertStored fails the test unless resource holds value with fence.
func assertStored(t testing.TB, s Store, resource, value string, fence uint64) {
	t.Helper()
	v, f, err := s.Stored(t.Context(), resource)
	if err != nil {
		t.Fatalf("stored(%q): %v", resource, err)
	}
	if v != value || f != fence {
		t.Errorf("stored(%q) = %q, fence %d; want %q, fence %d", resource, v, f, value, fence)
	}
}

// assertStale fails the test unless err matches ErrStaleFence and names the
// resource, the fence and the highest fence.
func assertStale(t testing.TB, op string, err error, resource string, fence, highest uint64) {
	t.Helper()
	if !errors.Is(err, ErrStaleFence) {
		t.Errorf("%s = %v; want ErrStaleFence", op, err)
		return
	}
	for _, s := range []string{resource, fmt.Sprintf("fence %d is below %d", fence, highest)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s = %q; want it to contain %q", op, err, s)
		}
	}
}

// holderAt returns the holder with fence f and a token of its own: one
// holder per fence, as when every acquisition gets a fence of its own.
func holderAt(f uint64) Holder { return HolderOf(f, fmt.Sprintf("token-%d", f)) }

// assertTie fails the test unless err matches ErrStaleFence and says that
// another holder already holds fence for resource.
func assertTie(t testing.TB, op string, err error, resource string, fence uint64) {
	t.Helper()
	if !errors.Is(err, ErrStaleFence) || errors.Is(err, ErrNoFence) {
		t.Errorf("%s = %v; want ErrStaleFence", op, err)
		return
	}
	for _, s := range []string{resource, fmt.Sprintf("fence %d is already held by another holder", fence)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s = %q; want it to contain %q", op, err, s)
		}
	}
}

// assertNoFence fails the test unless err matches ErrNoFence and not
// ErrStaleFence, and names resource.
func assertNoFence(t testing.TB, op string, err error, resource string) {
	t.Helper()
	if !errors.Is(err, ErrNoFence) || errors.Is(err, ErrStaleFence) || !strings.Contains(err.Error(), resource) {
		t.Errorf("%s = %v; want ErrNoFence (not ErrStaleFence) naming %s", op, err, resource)
	}
}

// guardOutcome is what a guard must answer to one access.
type guardOutcome int

const (
	accepted guardOutcome = iota
	stale                 // ErrStaleFence: below the highest fence
	tie                   // ErrStaleFence: the highest fence, another holder's
	noFence0              // ErrNoFence
)

// assertOutcome checks err against want; highest is the highest fence
// accepted before the access.
func assertOutcome(t testing.TB, op string, err error, want guardOutcome, resource string, fence, highest uint64) {
	t.Helper()
	switch want {
	case accepted:
		if err != nil {
			t.Errorf("%s = %v; want nil", op, err)
		}
	case stale:
		assertStale(t, op, err, resource, fence, highest)
	case tie:
		assertTie(t, op, err, resource, fence)
	case noFence0:
		assertNoFence(t, op, err, resource)
	}
}

func TestFencedStores(t *testing.T) {
	db := startPostgres(t)
	if _, err := db.ExecContext(t.Context(), SQLStoreTable); err != nil {
		t.Fatalf("CREATE TABLE: %v", err)
	}
	stores := []struct {
		name  string
		store Store
	}{
		{"memory", NewMemStore(true)},
		{"redis", NewRedisStore(cluster().Client(4), true)},
		{"postgres", NewSQLStore(db)},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Run("StaleWriteRejected", func(t *testing.T) { testStaleWriteRejected(t, st.store) })
			t.Run("Owners", func(t *testing.T) { testOwners(t, st.store) })
			t.Run("StaleReadRejected", func(t *testing.T) { testStaleReadRejected(t, st.store) })
			t.Run("FencedReadThenStaleWrite", func(t *testing.T) { testFencedReadThenStaleWrite(t, st.store) })
			t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, st.store) })
			t.Run("ExpiredHolder", func(t *testing.T) { testExpiredHolder(t, st.store, "guard-"+st.name) })
		})
	}
	if n := stores[0].store.(*MemStore).Overlaps(); n != 0 {
		t.Errorf("FenceGuard ran %d accesses of one resource at once; want 0", n)
	}
	t.Run("postgres/Errors", func(t *testing.T) { testSQLGuardErrors(t, db) })
}

func testStaleWriteRejected(t *testing.T, s Store) {
	const res = "stale-write"
	s.Create(t, res)
	steps := []struct {
		fence     uint64
		value     string
		wantStale bool
	}{
		{5, "a", false},
		{3, "b", true},
		{5, "c", false}, // the same holder writes again
		{5, "d", false},
		{9, "e", false},
		{10, "f", false}, // compared as numbers, not text
		{9, "g", true},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		err := s.Write(t.Context(), res, holderAt(st.fence), st.value)
		op := fmt.Sprintf("write(%q, fence %d)", st.value, st.fence)
		if st.wantStale {
			assertStale(t, op, err, res, st.fence, highest)
		} else {
			if err != nil {
				t.Errorf("%s = %v; want nil", op, err)
			}
			value, highest = st.value, st.fence
		}
		assertStored(t, s, res, value, highest)
	}
}

// Two holders with different tokens at the same fence (two overlapping holds
// that got the same fence): the first to reach the store keeps it, the
// other is rejected, reads and writes, and changes nothing. Before guards
// recorded the owner, both were accepted. The same holder still rewrites at
// its own fence, and fence 0 is refused without recording anything.
func testOwners(t *testing.T, s Store) {
	const res = "owners"
	s.Create(t, res)
	a, b, c := HolderOf(7, "token-a"), HolderOf(7, "token-b"), HolderOf(6, "token-c")
	zero := HolderOf(0, "token-z")

	// A fence 0 on a fresh resource records nothing.
	assertNoFence(t, "write(fence 0)", s.Write(t.Context(), res, zero, "z"), res)
	v, err := s.Read(t.Context(), res, zero)
	assertNoFence(t, "read(fence 0)", err, res)
	if v != "" {
		t.Errorf("read(fence 0) returned %q; want nothing", v)
	}
	assertStored(t, s, res, "", 0)

	steps := []struct {
		who   string
		h     Holder
		read  bool // a fenced read instead of a write
		value string
		want  guardOutcome
	}{
		{"a", a, false, "a1", accepted},
		{"b", b, false, "b1", tie}, // the bug: accepted before
		{"b", b, true, "", tie},
		{"a", a, false, "a2", accepted}, // the same holder writes again
		{"a", a, true, "a2", accepted},
		{"c", c, false, "c1", stale},
		{"z", zero, false, "z1", noFence0},
		{"b", HolderOf(8, "token-b"), true, "a2", accepted}, // b again, with a higher fence
		{"a", a, false, "a3", stale},
		{"b", HolderOf(8, "token-b"), false, "b2", accepted},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		op := fmt.Sprintf("%s's write(%q, fence %d)", st.who, st.value, st.h.Fence())
		var err error
		if st.read {
			op = fmt.Sprintf("%s's read(fence %d)", st.who, st.h.Fence())
			var v string
			v, err = s.Read(t.Context(), res, st.h)
			want := "" // nothing read unless accepted
			if st.want == accepted {
				want = value
			}
			if v != want {
				t.Errorf("%s returned %q; want %q", op, v, want)
			}
		} else {
			err = s.Write(t.Context(), res, st.h, st.value)
		}
		assertOutcome(t, op, err, st.want, res, st.h.Fence(), highest)
		if st.want == accepted {
			highest = st.h.Fence()
			if !st.read {
				value = st.value
			}
		}
		assertStored(t, s, res, value, highest)
	}
}

func testStaleReadRejected(t *testing.T, s Store) {
	const res = "stale-read"
	s.Create(t, res)
	if err := s.Write(t.Context(), res, holderAt(4), "x"); err != nil {
		t.Fatalf("write(fence 4) = %v", err)
	}
	v, err := s.Read(t.Context(), res, holderAt(2))
	assertStale(t, "read(fence 2)", err, res, 2, 4)
	if v != "" {
		t.Errorf("read(fence 2) returned %q; want nothing", v)
	}
	for _, f := range []uint64{4, 6} {
		if v, err := s.Read(t.Context(), res, holderAt(f)); v != "x" || err != nil {
			t.Errorf("read(fence %d) = %q, %v; want %q, nil", f, v, err, "x")
		}
	}
	assertStored(t, s, res, "x", 6) // the read recorded its fence
}

// A stale holder A read before the newer holder B; B reads too. A's write
// must now be rejected, though nobody has written with B's fence yet:
// otherwise B's write, computed from what B read, would overwrite A's.
func testFencedReadThenStaleWrite(t *testing.T, s Store) {
	const res = "read-modify-write"
	s.Create(t, res)
	if err := s.Write(t.Context(), res, holderAt(1), "0"); err != nil {
		t.Fatalf("write(fence 1) = %v", err)
	}
	const a, b = 1, 2
	for _, f := range []uint64{a, b} {
		if v, err := s.Read(t.Context(), res, holderAt(f)); v != "0" || err != nil {
			t.Fatalf("read(fence %d) = %q, %v; want %q, nil", f, v, err, "0")
		}
	}
	assertStale(t, "A's write(fence 1) after B's read(fence 2)", s.Write(t.Context(), res, holderAt(a), "1"), res, a, b)
	if err := s.Write(t.Context(), res, holderAt(b), "1"); err != nil {
		t.Errorf("B's write(fence 2) = %v; want nil", err)
	}
	assertStored(t, s, res, "1", b)
}

// Writers with random fences race; the stored fence never goes down, every
// write with the largest fence is accepted, and the store ends with the
// largest fence and a value written with it.
func testConcurrentWriters(t *testing.T, s Store) {
	const res = "concurrent"
	s.Create(t, res)
	const writers, writes = 16, 8
	type result struct {
		fence uint64
		value string
		err   error
	}
	var (
		results = make(chan result, writers*writes)
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The watcher samples the stored fence until the writers are done.
	stop := make(chan struct{})
	watcherErr := make(chan error, 1)
	go func() {
		var last uint64
		for {
			_, f, err := s.Stored(ctx, res)
			if err == nil && f < last {
				err = fmt.Errorf("stored fence went down from %d to %d", last, f)
			}
			if err != nil {
				watcherErr <- err
				return
			}
			last = f
			select {
			case <-stop:
				watcherErr <- nil
				return
			default:
			}
		}
	}()

	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				f := 1 + rand.Uint64N(40)
				v := fmt.Sprintf("w%d-%d-f%d", w, i, f)
				results <- result{f, v, s.Write(ctx, res, holderAt(f), v)}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-watcherErr; err != nil {
		t.Errorf("watcher: %v", err)
	}
	close(results)

	var maxTried, maxAccepted uint64
	withMax := map[string]bool{} // values written with the largest fence
	var all []result
	for r := range results {
		all = append(all, r)
		maxTried = max(maxTried, r.fence)
		switch {
		case r.err == nil:
			maxAccepted = max(maxAccepted, r.fence)
		case !errors.Is(r.err, ErrStaleFence):
			t.Errorf("write(%q, fence %d) = %v; want nil or ErrStaleFence", r.value, r.fence, r.err)
		}
	}
	for _, r := range all {
		if r.fence == maxTried {
			withMax[r.value] = true
			if r.err != nil {
				t.Errorf("write(%q, fence %d) = %v; want nil: no fence was higher", r.value, r.fence, r.err)
			}
		}
	}
	v, f, err := s.Stored(t.Context(), res)
	if err != nil {
		t.Fatalf("stored: %v", err)
	}
	if f != maxAccepted || f != maxTried {
		t.Errorf("stored fence = %d; want %d, the largest accepted and tried", f, maxAccepted)
	}
	if !withMax[v] {
		t.Errorf("stored value = %q; want one written with fence %d", v, f)
	}
}

// A real lock: holder A's lease ends on the nodes (as after a long pause),
// B acquires it and reads; A, still believing it holds the lock, writes:
// rejected, and B's write goes through.
func testExpiredHolder(t *testing.T, s Store, name string) {
	const res = "expired-holder"
	s.Create(t, res)
	// Two clients, as two processes: one client queues its own Acquire
	// calls of a name until the earlier lock ends locally.
	ca, cb := newTestClient(t, nodes(3), nil), newTestClient(t, nodes(3), nil)
	key, _ := ca.Keys(name)
	a, err := ca.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire a = %v", err)
	}
	defer a.Release(t.Context())
	if err := s.Write(t.Context(), res, a, "a1"); err != nil {
		t.Fatalf("a's write(fence %d) = %v; want nil", a.Fence(), err)
	}
	for _, nd := range nodes(3) {
		nd.PExpire(t.Context(), key, time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	b, err := cb.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire b = %v", err)
	}
	defer b.Release(t.Context())
	if b.Fence() <= a.Fence() {
		t.Fatalf("b.Fence() = %d; want more than a's %d", b.Fence(), a.Fence())
	}
	if v, err := s.Read(t.Context(), res, b); v != "a1" || err != nil {
		t.Fatalf("b's read(fence %d) = %q, %v; want %q, nil", b.Fence(), v, err, "a1")
	}
	if a.Err() != nil {
		t.Fatalf("a.Err() = %v; want nil (a still believes it holds the lock)", a.Err())
	}
	err = s.Write(t.Context(), res, a, "a2")
	assertStale(t, fmt.Sprintf("a's write(fence %d) after b's read", a.Fence()), err, res, a.Fence(), b.Fence())
	if err := s.Write(t.Context(), res, b, "b1"); err != nil {
		t.Errorf("b's write(fence %d) = %v; want nil", b.Fence(), err)
	}
	assertStored(t, s, res, "b1", b.Fence())
}

func TestFenceGuardDo(t *testing.T) {
	var g FenceGuard
	if h := g.Highest("r"); h != 0 {
		t.Errorf("zero FenceGuard: Highest(%q) = %d; want 0", "r", h)
	}
	boom := errors.New("boom")
	if err := g.Do("r", holderAt(3), func() error { return boom }); err != boom {
		t.Errorf("Do(access failing) = %v; want the access's error as is", err)
	}
	if h := g.Highest("r"); h != 3 {
		t.Errorf("Highest after a failed access = %d; want 3 (the fence stays recorded)", h)
	}
	called := false
	err := g.Do("r", holderAt(2), func() error { called = true; return nil })
	assertStale(t, "Do(fence 2)", err, `"r"`, 2, 3)
	if called {
		t.Errorf("Do(fence 2) called access; want it not called for a stale fence")
	}
	if err := g.Do("r", holderAt(7), nil); err != nil {
		t.Errorf("Do(nil access) = %v; want nil", err)
	}
	if h := g.Highest("r"); h != 7 {
		t.Errorf("Highest after Do(nil access) = %d; want 7", h)
	}
	if err := g.Do("other", holderAt(1), nil); err != nil {
		t.Errorf("Do(%q, fence 1) = %v; want nil: resources are independent", "other", err)
	}
	func() {
		defer func() { recover() }()
		g.Do("r", holderAt(8), func() error { panic("access panics") })
	}()
	done := make(chan error, 1)
	go func() { done <- g.Do("r", holderAt(8), nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Do after a panicking access = %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do after a panicking access is still waiting; want the lock released by the panic")
	}
	t.Run("BigFences", func(t *testing.T) {
		var val string // the store behind the guard
		testBigFences(t, `"big"`,
			func(h Holder, v string) error { return g.Do("big", h, func() error { val = v; return nil }) },
			func() (string, uint64, error) { return val, g.Highest("big"), nil })
	})
}

func TestRedisGuardErrors(t *testing.T) {
	rdb := cluster().Client(4)
	g := NewRedisGuard(rdb)
	ctx := t.Context()
	const res = "guard-errors"
	fenceKey, dataKey := guardFenceKey(res), "{"+res+"}:data"
	reset := func(t *testing.T) {
		t.Helper()
		if err := rdb.Del(ctx, fenceKey, dataKey).Err(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("BigFences", func(t *testing.T) {
		reset(t)
		testBigFences(t, res,
			func(h Holder, v string) error { return g.Set(ctx, res, dataKey, v, h) },
			func() (string, uint64, error) {
				h, err := g.Highest(ctx, res)
				return rdb.Get(ctx, dataKey).Val(), h, err
			})
	})

	t.Run("OwnerRecord", func(t *testing.T) {
		// The fence key holds the fence and the owner id, never the token.
		reset(t)
		const token = "secret-token-of-a"
		if err := g.Set(ctx, res, dataKey, "a", HolderOf(5, token)); err != nil {
			t.Fatalf("Set(fence 5) = %v", err)
		}
		rec := rdb.Get(ctx, fenceKey).Val()
		if want := "5:" + OwnerID(token); rec != want || strings.Contains(rec, token) {
			t.Errorf("fence key = %q; want %q, without the token", rec, want)
		}
		// A plain "<fence>", as older versions wrote it, reads as owner "".
		rdb.Set(ctx, fenceKey, "9", 0)
		if h, err := g.Highest(ctx, res); h != 9 || err != nil {
			t.Errorf("Highest(legacy record 9) = %d, %v; want 9, nil", h, err)
		}
		assertTie(t, "Set(fence 9) over a legacy record", g.Set(ctx, res, dataKey, "b", HolderOf(9, token)), res, 9)
		if err := g.Set(ctx, res, dataKey, "c", HolderOf(10, token)); err != nil {
			t.Errorf("Set(fence 10) over a legacy record 9 = %v; want nil", err)
		}
		if v := rdb.Get(ctx, dataKey).Val(); v != "c" {
			t.Errorf("data = %q; want %q", v, "c")
		}
	})

	t.Run("MissingKey", func(t *testing.T) {
		reset(t)
		v, ok, err := g.Get(ctx, res, dataKey, holderAt(4))
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
			op:      func() error { return g.Set(ctx, res, dataKey, "v", holderAt(1)) },
			want:    "holds a list, not a string",
			checkNo: fenceKey,
		},
		{
			name:    "GetDataKeyWrongType",
			setup:   func(t *testing.T) { rdb.SAdd(ctx, dataKey, "x") },
			op:      func() error { _, _, err := g.Get(ctx, res, dataKey, holderAt(1)); return err },
			want:    "holds a set, not a string",
			checkNo: fenceKey,
		},
		{
			name:    "FenceKeyWrongType",
			setup:   func(t *testing.T) { rdb.HSet(ctx, fenceKey, "f", "1") },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", holderAt(1)) },
			want:    "holds a hash, not a fence",
			checkNo: dataKey,
		},
		{
			name:    "FenceKeyNotANumber",
			setup:   func(t *testing.T) { rdb.Set(ctx, fenceKey, "12abc", 0) },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", holderAt(99)) },
			want:    `holds "12abc", not a fence`,
			checkNo: dataKey,
		},
		{
			name:    "FenceKeyBadOwner",
			setup:   func(t *testing.T) { rdb.Set(ctx, fenceKey, "12:NotHex", 0) },
			op:      func() error { return g.Set(ctx, res, dataKey, "v", holderAt(99)) },
			want:    `holds "12:NotHex", not a fence`,
			checkNo: dataKey,
		},
		{
			name:    "NoFence",
			setup:   func(t *testing.T) {},
			op:      func() error { return g.Set(ctx, res, dataKey, "v", holderAt(0)) },
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
			op:    func() error { return g.Set(ctx, "", dataKey, "v", holderAt(1)) },
			want:  "empty resource name",
			setup: func(t *testing.T) {},
		},
		{
			name:    "DataKeyIsFenceKey",
			setup:   func(t *testing.T) {},
			op:      func() error { return g.Set(ctx, res, fenceKey, "v", holderAt(1)) },
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
			if errors.Is(err, ErrStaleFence) {
				t.Errorf("%s: error = %v; want it not to match ErrStaleFence", c.name, err)
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

func testSQLGuardErrors(t *testing.T, db *sql.DB) {
	ctx := t.Context()
	for _, q := range []string{
		`CREATE TABLE big (id bigint PRIMARY KEY, val text NOT NULL DEFAULT '',
			fence numeric(20) NOT NULL DEFAULT 0, fence_owner text NOT NULL DEFAULT '')`,
		`CREATE TABLE nullable (id bigint PRIMARY KEY, val text, fence bigint, fence_owner text)`,
		`CREATE TABLE dup (id bigint, val text, fence bigint NOT NULL DEFAULT 0, fence_owner text NOT NULL DEFAULT '')`,
		`CREATE TABLE custom (key text PRIMARY KEY, val text, ver bigint NOT NULL DEFAULT 0, who text NOT NULL DEFAULT '')`,
		`INSERT INTO big (id) VALUES (1)`,
		`INSERT INTO nullable (id) VALUES (1)`,
		`INSERT INTO nullable (id, fence) VALUES (2, 5)`,
		`INSERT INTO dup (id) VALUES (1), (1)`,
		`INSERT INTO custom (key) VALUES ('k')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	t.Run("BadIdentifiers", func(t *testing.T) {
		cases := []struct {
			guard SQLGuard
			want  string
		}{
			{SQLGuard{}, "SQLGuard.Table is empty"},
			{SQLGuard{Table: "guarded; DROP TABLE guarded"}, `SQLGuard.Table "guarded; DROP TABLE guarded" is not a plain SQL identifier`},
			{SQLGuard{Table: "1guarded"}, "is not a plain SQL identifier"},
			{SQLGuard{Table: "a.b.c"}, "is not a plain SQL identifier"},
			{SQLGuard{Table: `"guarded"`}, "is not a plain SQL identifier"},
			{SQLGuard{Table: "guarded", IDColumn: "id)"}, `SQLGuard.IDColumn "id)" is not a plain SQL identifier`},
			{SQLGuard{Table: "guarded", FenceColumn: "fence--"}, `SQLGuard.FenceColumn "fence--" is not a plain SQL identifier`},
			{SQLGuard{Table: "guarded", OwnerColumn: "owner col"}, `SQLGuard.OwnerColumn "owner col" is not a plain SQL identifier`},
			{SQLGuard{Table: "guarded", IDColumn: "fence"}, "IDColumn and FenceColumn are both"},
			{SQLGuard{Table: "guarded", OwnerColumn: "fence"}, "FenceColumn and OwnerColumn are both"},
			{SQLGuard{Table: "guarded", OwnerColumn: "id"}, "IDColumn and OwnerColumn are both"},
		}
		for _, c := range cases {
			err := c.guard.Update(ctx, db, "x", holderAt(1), "val = $1", "v")
			if err == nil || !strings.HasPrefix(err.Error(), "redlock: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v.Update = %v; want a redlock: error containing %q", c.guard, err, c.want)
			}
		}
	})

	t.Run("CustomColumnsAndSchema", func(t *testing.T) {
		g := SQLGuard{Table: "public.custom", IDColumn: "key", FenceColumn: "ver", OwnerColumn: "who"}
		if err := g.Update(ctx, db, "k", holderAt(3), "val = $1", "v3"); err != nil {
			t.Fatalf("Update(fence 3) = %v; want nil", err)
		}
		assertStale(t, "Update(fence 2)", g.Update(ctx, db, "k", holderAt(2), "val = $1", "v2"), "public.custom row key = k", 2, 3)
		assertTie(t, "Update(fence 3, another holder)",
			g.Update(ctx, db, "k", HolderOf(3, "another"), "val = $1", "other"), "public.custom row key = k", 3)
		var v, who string
		var f uint64
		db.QueryRowContext(ctx, "SELECT val, ver, who FROM custom WHERE key = 'k'").Scan(&v, &f, &who)
		if want := OwnerID(holderAt(3).Token()); v != "v3" || f != 3 || who != want {
			t.Errorf("row = %q, fence %d, owner %q; want %q, 3, %q", v, f, who, "v3", want)
		}
	})

	t.Run("NoSuchRow", func(t *testing.T) {
		err := SQLGuard{Table: "guarded"}.Update(ctx, db, "no-such-id", holderAt(1), "val = $1", "v")
		if !errors.Is(err, sql.ErrNoRows) || errors.Is(err, ErrStaleFence) || !strings.Contains(err.Error(), "no such row") {
			t.Errorf("Update(missing row) = %v; want a \"no such row\" error matching sql.ErrNoRows, not ErrStaleFence", err)
		}
	})

	t.Run("NullFence", func(t *testing.T) {
		err := SQLGuard{Table: "nullable"}.Update(ctx, db, 1, holderAt(1), "val = $1", "v")
		if err == nil || errors.Is(err, ErrStaleFence) || !strings.Contains(err.Error(), "fence is NULL: make the column NOT NULL") {
			t.Errorf("Update(NULL fence) = %v; want an error saying to make the column NOT NULL", err)
		}
		err = SQLGuard{Table: "nullable"}.Update(ctx, db, 2, holderAt(5), "val = $1", "v")
		if err == nil || errors.Is(err, ErrStaleFence) || !strings.Contains(err.Error(), "fence_owner is NULL: make the column NOT NULL") {
			t.Errorf("Update(NULL owner) = %v; want an error saying to make the column NOT NULL", err)
		}
	})

	t.Run("IDNotUnique", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		err = SQLGuard{Table: "dup"}.Update(ctx, tx, 1, holderAt(1), "val = $1", "v")
		if err == nil || !strings.Contains(err.Error(), "must be unique") {
			t.Errorf("Update(duplicate id) = %v; want an error saying id must be unique", err)
		}
	})

	t.Run("BadSet", func(t *testing.T) {
		err := SQLGuard{Table: "guarded"}.Update(ctx, db, "x", holderAt(1), "no_such_column = $1", "v")
		if err == nil || errors.Is(err, ErrStaleFence) || !strings.Contains(err.Error(), "no_such_column") {
			t.Errorf("Update(bad set) = %v; want the database's error", err)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		// The fenced update belongs to the caller's transaction.
		g := SQLGuard{Table: "big"}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Update(ctx, tx, 1, holderAt(50), "val = $1", "rolled back"); err != nil {
			t.Fatalf("Update in tx = %v", err)
		}
		tx.Rollback()
		if err := g.Update(ctx, db, 1, holderAt(10), "val = $1", "after"); err != nil {
			t.Errorf("Update(fence 10) after the fence-50 update was rolled back = %v; want nil", err)
		}
	})

	t.Run("BigFences", func(t *testing.T) {
		// numeric(20) holds every uint64; the database compares exactly.
		g := SQLGuard{Table: "big"}
		testBigFences(t, "big row id = 1",
			func(h Holder, v string) error { return g.Update(ctx, db, 1, h, "val = $1", v) },
			func() (v string, f uint64, err error) {
				var fs string
				if err := db.QueryRowContext(ctx, "SELECT val, fence FROM big WHERE id = 1").Scan(&v, &fs); err != nil {
					return "", 0, err
				}
				f, err = strconv.ParseUint(fs, 10, 64)
				return v, f, err
			})
	})
}

// testBigFences runs fences past 2^53 (where float64 comparison would err)
// up to the uint64 limit, from two holders a and b, through write (a
// guarded write of the store) and checks after each that stored (the value
// and the highest fence, unfenced) still holds the last accepted write.
// resource is the resource as errors name it.
func testBigFences(t *testing.T, resource string, write func(h Holder, value string) error, stored func() (string, uint64, error)) {
	t.Helper()
	steps := []struct {
		fence uint64
		who   string
		want  guardOutcome
	}{
		{1<<53 + 1, "a", accepted},
		{1<<53 + 1, "b", tie},
		{1 << 53, "b", stale}, // one float64 with 2^53+1
		{1<<63 + 1, "a", accepted},
		{1<<63 + 1, "b", tie},
		{math.MaxUint64 - 1, "b", accepted},
		{math.MaxUint64, "a", accepted},
		{math.MaxUint64, "b", tie},
		{math.MaxUint64, "a", accepted}, // a again, at its own fence
		{math.MaxUint64 - 1, "b", stale},
		{1<<63 + 1, "a", stale},
	}
	value, highest := "", uint64(0)
	for _, st := range steps {
		v := fmt.Sprintf("%d-%s", st.fence, st.who)
		op := fmt.Sprintf("%s's write(fence %d)", st.who, st.fence)
		err := write(HolderOf(st.fence, "token-"+st.who), v)
		assertOutcome(t, op, err, st.want, resource, st.fence, highest)
		if st.want == accepted {
			value, highest = v, st.fence
		}
		gotV, gotF, err := stored()
		if gotV != value || gotF != highest || err != nil {
			t.Errorf("after %s: stored = %q, fence %d, %v; want %q, fence %d", op, gotV, gotF, err, value, highest)
		}
	}
}
