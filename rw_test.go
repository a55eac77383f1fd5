package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of the read-write lock against real Redis (rw.go, docs/design.md
// "Read-write locks").

// shared takes name's shared side, released when the test ends if the test
// has not.
func sharedLock(t *testing.T, c *Client, name string, ttl time.Duration, opts *AcquireOptions) *Lock {
	t.Helper()
	l, err := c.AcquireShared(t.Context(), name, ttl, opts)
	if err != nil {
		t.Fatalf("AcquireShared(%q) = %v; want the lock", name, err)
	}
	t.Cleanup(func() { l.Release(context.Background()) })
	return l
}

// acquireAsync runs acquire in a goroutine the test owns and joins; the
// lock (or error) arrives on the returned channel.
type rwAcquired struct {
	l   *Lock
	err error
	at  time.Time
}

func acquireAsync(t *testing.T, acquire func(ctx context.Context) (*Lock, error)) <-chan rwAcquired {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan rwAcquired, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, err := acquire(ctx)
		ch <- rwAcquired{l, err, time.Now()}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		select {
		case a := <-ch:
			if a.l != nil {
				a.l.Release(context.Background())
			}
		default:
		}
	})
	return ch
}

// notYet fails the test if ch delivers within d.
func notYet(t *testing.T, ch <-chan rwAcquired, d time.Duration, what string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s returned %v, %v; want it still waiting", what, a.l, a.err)
	case <-time.After(d):
	}
}

// within waits up to d for ch and fails unless it delivers a lock.
func within(t *testing.T, ch <-chan rwAcquired, d time.Duration, what string) rwAcquired {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s = %v; want the lock", what, a.err)
		}
		return a
	case <-time.After(d):
		t.Fatalf("%s still waiting after %v; want the lock", what, d)
	}
	return rwAcquired{}
}

// readerScores returns each node's reader set: member -> remaining ms.
func readerScores(t *testing.T, nodes []redis.UniversalClient, key string) []map[string]int64 {
	t.Helper()
	out := make([]map[string]int64, len(nodes))
	for i, n := range nodes {
		tm, err := n.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		zs, err := n.ZRangeWithScores(t.Context(), key+readersSuffix, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = map[string]int64{}
		for _, z := range zs {
			out[i][z.Member.(string)] = int64(z.Score) - tm.UnixMilli()
		}
	}
	return out
}

func TestReadWriteManyReaders(t *testing.T) {
	forEachN(t, func(t *testing.T, n int) {
		ns := nodes(t, n)
		name := "rw-many"
		var locks []*Lock
		for i := range 6 {
			c := newTestClient(t, ns, nil)
			l := sharedLock(t, c, name, 10*time.Second, nil)
			if i == 5 { // a second reader of one Client does not wait for the first
				l2 := sharedLock(t, c, name, 10*time.Second, nil)
				locks = append(locks, l2)
			}
			locks = append(locks, l)
		}
		c := newTestClient(t, ns, nil)
		key, _ := c.Keys(name)
		for _, l := range locks {
			if !l.Shared() || l.Err() != nil {
				t.Errorf("reader %s: Shared %v, Err %v; want a valid shared lock", l.Token(), l.Shared(), l.Err())
			}
		}
		// Acquire returns at a quorum: the last nodes' writes may land a
		// little later.
		waitUntil(t, fmt.Sprintf("every node keeps the %d readers", len(locks)), func() bool {
			for _, m := range readerScores(t, ns, key) {
				if len(m) != len(locks) {
					return false
				}
			}
			return true
		})
		if _, err := c.TryAcquire(t.Context(), name, time.Second, nil); !errors.Is(err, ErrHeld) {
			t.Errorf("TryAcquire while %d readers hold = %v; want ErrHeld", len(locks), err)
		}
		var fences []uint64
		for _, l := range locks {
			fences = append(fences, l.Fence())
			if err := l.Release(t.Context()); err != nil {
				t.Errorf("Release(reader) = %v", err)
			}
		}
		w, err := c.TryAcquire(t.Context(), name, time.Second, nil)
		if err != nil {
			t.Fatalf("TryAcquire after every reader released = %v; want the lock", err)
		}
		for _, f := range fences {
			if w.Fence() <= f {
				t.Errorf("writer's fence %d after a reader's %d; want larger", w.Fence(), f)
			}
		}
		w.Release(t.Context())
		assertNoLockKey(t, ns, key)
		assertNoLockKey(t, ns, key+readersSuffix)
	})
}

func TestReadWriteWriterWaitsForReaders(t *testing.T) {
	ns := nodes(t, 3)
	name := "rw-writer-waits"
	r1 := sharedLock(t, newTestClient(t, ns, nil), name, 10*time.Second, nil)
	r2 := sharedLock(t, newTestClient(t, ns, nil), name, 10*time.Second, nil)
	wc := newTestClient(t, ns, nil)
	wch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return wc.Acquire(ctx, name, 10*time.Second, nil) })
	notYet(t, wch, 400*time.Millisecond, "Acquire while two readers hold")
	if err := r1.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	notYet(t, wch, 400*time.Millisecond, "Acquire while one reader holds")
	released := time.Now()
	if err := r2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := within(t, wch, 2*time.Second, "Acquire after the last reader released")
	t.Logf("writer acquired %v after the last reader's release", a.at.Sub(released))
	if a.l.Fence() <= r1.Fence() || a.l.Fence() <= r2.Fence() {
		t.Errorf("writer's fence %d; want above the readers' %d and %d", a.l.Fence(), r1.Fence(), r2.Fence())
	}
}

func TestReadWriteWriterExcludesNewReaders(t *testing.T) {
	ns := nodes(t, 3)
	name := "rw-excludes"
	r1 := sharedLock(t, newTestClient(t, ns, nil), name, 10*time.Second, nil)
	wc := newTestClient(t, ns, nil)
	wch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return wc.Acquire(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, wc, name, 1)
	rc := newTestClient(t, ns, nil)
	if l, err := rc.TryAcquireShared(t.Context(), name, time.Second, nil); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("TryAcquireShared with a writer queued = %v, %v; want ErrNotAcquired", l, err)
	}
	r2ch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return rc.AcquireShared(ctx, name, 10*time.Second, nil) })
	r3c := newTestClient(t, ns, nil)
	r3ch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return r3c.AcquireShared(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, wc, name, 3)
	notYet(t, r2ch, 200*time.Millisecond, "AcquireShared behind a queued writer")
	if err := r1.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := within(t, wch, 2*time.Second, "Acquire after the reader released")
	notYet(t, r2ch, 300*time.Millisecond, "AcquireShared while the writer holds")
	key, _ := wc.Keys(name)
	released := time.Now()
	if err := w.l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	a2 := within(t, r2ch, 2*time.Second, "AcquireShared after the writer released")
	a3 := within(t, r3ch, 2*time.Second, "second AcquireShared after the writer released")
	t.Logf("readers queued behind the writer came in %v and %v after its release",
		a2.at.Sub(released), a3.at.Sub(released))
	if a2.l.Fence() <= w.l.Fence() || a3.l.Fence() <= w.l.Fence() {
		t.Errorf("readers' fences %d, %d after the writer's %d; want larger", a2.l.Fence(), a3.l.Fence(), w.l.Fence())
	}
	for i, m := range readerScores(t, ns, key) {
		if len(m) != 2 {
			t.Errorf("node %d keeps %d readers; want 2", i, len(m))
		}
	}
}

// waitForWaiters waits until every node lists want waiters of name.
func waitForWaiters(t *testing.T, c *Client, name string, want int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		st, err := c.Inspect(t.Context(), name)
		ok := err == nil
		for _, ns := range st.Nodes {
			ok = ok && ns.Err == nil && ns.Depth == want
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Inspect(%q) = %+v, %v; want %d waiters on every node", name, st, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A release never grants the free key to a reader at the queue's head
// (handon.lua): the key is the readers' marker or free, never
// "<reader token>.0".
func TestReadWriteHandOnNeverGrantsReader(t *testing.T) {
	ns := nodes(t, 3)
	name := "rw-no-grant"
	wc := newTestClient(t, ns, nil)
	w, err := wc.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := newTestClient(t, ns, nil)
	rch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return rc.AcquireShared(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, wc, name, 1)
	key, _ := wc.Keys(name)
	if err := w.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := within(t, rch, 2*time.Second, "AcquireShared after the writer released")
	for i, n := range ns {
		if v := n.Get(t.Context(), key).Val(); v != readersMarker {
			t.Errorf("node %d: lock key holds %q with a reader holding; want the marker %q", i, v, readersMarker)
		}
	}
	if strings.Contains(a.l.ls.counted(0), ".0") && a.l.won == a.l.ls.counted(0) {
		t.Errorf("the reader's lease counts a grant %q", a.l.won)
	}
}

// Each reader's lease is its own: one reader's extend (asking for less) or
// release never moves another's expiry earlier; the marker lives as long as
// the last reader.
func TestReadWriteReaderExpiryPerReader(t *testing.T) {
	ns := nodes(t, 3)
	name := "rw-per-reader"
	long := sharedLock(t, newTestClient(t, ns, nil), name, 20*time.Second, nil)
	short := sharedLock(t, newTestClient(t, ns, nil), name, 5*time.Second, nil)
	key, _ := long.c.Keys(name)
	wantAbout := func(what string, got, want int64) {
		t.Helper()
		if got > want || got < want-1500 {
			t.Errorf("%s: %d ms left; want about %d", what, got, want)
		}
	}
	before := readerScores(t, ns, key)
	for i, m := range before {
		wantAbout("node "+string(rune('0'+i))+" long reader", m[long.won], 20000)
		wantAbout("node "+string(rune('0'+i))+" short reader", m[short.won], 5000)
	}
	if err := short.Extend(t.Context(), time.Second); err != nil {
		t.Fatalf("Extend(short, 1s) = %v", err)
	}
	if err := long.Extend(t.Context(), time.Second); err != nil {
		t.Fatalf("Extend(long, 1s) = %v", err)
	}
	if err := short.Extend(t.Context(), 8*time.Second); err != nil {
		t.Fatalf("Extend(short, 8s) = %v", err)
	}
	for i, m := range readerScores(t, ns, key) {
		wantAbout("after the extends: node "+string(rune('0'+i))+" long reader", m[long.won], 20000)
		wantAbout("after the extends: node "+string(rune('0'+i))+" short reader", m[short.won], 8000)
		wantAbout("after the extends: node "+string(rune('0'+i))+" marker", ns[i].PTTL(t.Context(), key).Val().Milliseconds(), 20000)
	}
	if err := long.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the straggler of the release
	for i, m := range readerScores(t, ns, key) {
		if _, ok := m[long.won]; ok {
			t.Errorf("node %d keeps the released reader", i)
		}
		wantAbout("after the long reader's release: node "+string(rune('0'+i))+" short reader", m[short.won], 8000)
		wantAbout("after the long reader's release: node "+string(rune('0'+i))+" marker (shortened to the last reader)",
			ns[i].PTTL(t.Context(), key).Val().Milliseconds(), 8000)
	}
	if err := short.Err(); err != nil {
		t.Errorf("short reader after the other's release: %v", err)
	}
}
