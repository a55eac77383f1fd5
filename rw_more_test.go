package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// More tests of the read-write lock against real Redis: bad input, late
// requests, stray keys, starvation, Resume, Inspect and ForceRelease.

// keysOfName returns every key of name on node n but the fence counter.
func keysOfName(t *testing.T, n redis.UniversalClient, key string) []string {
	t.Helper()
	var out []string
	iter := n.Scan(t.Context(), 0, key+"*", 100).Iterator()
	for iter.Next(t.Context()) {
		if k := iter.Val(); !strings.HasSuffix(k, ":fence") {
			out = append(out, k)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadWriteBadInput(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := "rw-bad"
	key, fence := c.Keys(name)
	for _, tc := range []struct {
		what string
		call func() (*Lock, error)
	}{
		{"Metadata too long", func() (*Lock, error) {
			return c.AcquireShared(t.Context(), name, time.Second, &AcquireOptions{Metadata: strings.Repeat("m", MaxMetadataLen+1)})
		}},
		{"Reentrant", func() (*Lock, error) {
			return c.AcquireShared(t.Context(), name, time.Second, &AcquireOptions{Reentrant: true})
		}},
		{"empty name", func() (*Lock, error) { return c.AcquireShared(t.Context(), "", time.Second, nil) }},
		{"name with a brace", func() (*Lock, error) { return c.AcquireShared(t.Context(), "a{b", time.Second, nil) }},
		{"TTL 0", func() (*Lock, error) { return c.AcquireShared(t.Context(), name, 0, nil) }},
		{"Try with a retrying policy", func() (*Lock, error) {
			return c.TryAcquireShared(t.Context(), name, time.Second, &AcquireOptions{Retry: DefaultRetry()})
		}},
		{"MaxHold without AutoExtend", func() (*Lock, error) {
			return c.AcquireShared(t.Context(), name, time.Second, &AcquireOptions{MaxHold: time.Minute})
		}},
	} {
		if l, err := tc.call(); !errors.Is(err, ErrInvalid) {
			t.Errorf("AcquireShared with %s = %v, %v; want ErrInvalid", tc.what, l, err)
		}
	}
	for i, n := range ns {
		if ks := keysOfName(t, n, key); len(ks) > 0 || n.Exists(t.Context(), fence).Val() != 0 {
			t.Errorf("node %d after refused calls: keys %v; want none written", i, ks)
		}
	}
	// A reader set of another type: the acquire fails on every node and
	// leaves no marker behind.
	for _, n := range ns {
		n.Set(t.Context(), key+readersSuffix, "not a set", time.Minute)
	}
	if l, err := c.TryAcquireShared(t.Context(), name, time.Second, nil); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("TryAcquireShared over a reader key of another type = %v, %v; want a WRONGTYPE error", l, err)
	}
	for i, n := range ns {
		if n.Exists(t.Context(), key).Val() != 0 || n.Get(t.Context(), key+readersSuffix).Val() != "not a set" {
			t.Errorf("node %d: a refused acquire changed the keys", i)
		}
		n.Del(t.Context(), key+readersSuffix)
	}
}

// Requests that land late, after what came after them: a shared acquire
// after its call released, a cleanup of one attempt, an extend after the
// release. None leaves anything a lease counts but its own.
func TestReadWriteLateRequests(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := "rw-late"
	key, _ := c.Keys(name)
	r := sharedLock(t, c, name, 10*time.Second, nil)
	other := sharedLock(t, newTestClient(t, ns, nil), name, 10*time.Second, nil)

	// A late cleanup of another attempt of r's call matches nothing; the
	// exact cleanup of the attempt that won is the only one that takes it.
	late2 := r.ls.value(2)
	if _, err := r.ls.cleanupRequest(late2).Run(t.Context(), ns[0]); err != nil {
		t.Fatal(err)
	}
	for i, m := range readerScores(t, ns, key) {
		if _, ok := m[r.won]; !ok || len(m) != 2 {
			t.Errorf("node %d after a late cleanup of attempt 2: readers %v; want %s and the other reader", i, m, r.won)
		}
	}
	h := r.Handle()
	if err := r.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	// A late extend after the release finds nothing and creates nothing.
	if v, err := r.ls.extendRequest("10000", r.won).Run(t.Context(), ns[1]); err != nil || v != int64(0) {
		t.Errorf("late extend after the release = %v, %v; want 0", v, err)
	}
	// A late acquire of the released call lands on node 0: its value is
	// back there, counted by no quorum.
	if v, err := r.ls.acquireRequest(place{mode: queueBarge}, r.ls.value(1)).Run(t.Context(), ns[0]); err != nil ||
		!strings.HasPrefix(takeText(v), "1:") {
		t.Fatalf("late acquire = %v, %v", v, err)
	}
	if l, err := c.Resume(t.Context(), h, time.Second, nil); !errors.Is(err, ErrNotAcquired) {
		t.Errorf("Resume of the released reader with its late value on one node = %v, %v; want ErrNotAcquired", l, err)
	}
	// The other reader is untouched by all of it.
	for i, m := range readerScores(t, ns, key) {
		if left := m[other.won]; left < 8000 {
			t.Errorf("node %d: the other reader has %d ms left; want about 10s", i, left)
		}
	}
	if err := other.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	w, err := c.TryAcquire(t.Context(), name, time.Second, nil)
	if err != nil {
		t.Fatalf("TryAcquire with a late reader's value on one node of 3 = %v; want the lock", err)
	}
	w.Release(t.Context())
}

// Readers and a writer that never release: once their TTLs passed, nothing
// is left of the name on the nodes but its fence counter.
func TestReadWriteNoStrayKeys(t *testing.T) {
	ns := nodes(t, 3)
	name := "rw-stray"
	c := newTestClient(t, ns, nil)
	key, _ := c.Keys(name)
	for range 3 {
		if _, err := newTestClient(t, ns, nil).AcquireShared(t.Context(), name, 300*time.Millisecond, &AcquireOptions{Metadata: "job"}); err != nil {
			t.Fatal(err)
		}
	}
	// A writer queues behind them, then gives up; another waits and wins.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	c.Acquire(ctx, name, 300*time.Millisecond, nil)
	cancel()
	w, err := newTestClient(t, ns, nil).Acquire(t.Context(), name, 300*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = w // never released
	time.Sleep(1500 * time.Millisecond)
	for i, n := range ns {
		if ks := keysOfName(t, n, key); len(ks) > 0 {
			t.Errorf("node %d keeps %v after every hold ended; want only the fence counter", i, ks)
		}
	}
}

// A continuous stream of readers, each holding for a while, never leaves
// the name free; a writer that queues is not starved: the readers that
// come after it wait behind it. The control runs the same stream barging
// (the queue not looked at): the writer then waits far longer.
func TestReadWriteNoWriterStarvation(t *testing.T) {
	const ttl = time.Second
	ns := nodes(t, 3)
	for _, barging := range []bool{false, true} {
		name := map[bool]string{false: "rw-starve", true: "rw-starve-control"}[barging]
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		reads := 0
		for i := range 4 {
			rc := newTestClient(t, ns, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * 40 * time.Millisecond) // staggered: some reader always holds
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					l, err := rc.AcquireShared(ctx, name, ttl, &AcquireOptions{Barging: barging})
					cancel()
					if err != nil {
						continue
					}
					mu.Lock()
					reads++
					mu.Unlock()
					time.Sleep(150 * time.Millisecond)
					l.Release(context.Background())
				}
			}()
		}
		time.Sleep(400 * time.Millisecond)
		wc := newTestClient(t, ns, nil)
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 3*ttl)
		w, err := wc.Acquire(ctx, name, ttl, nil)
		cancel()
		waited := time.Since(start)
		if w != nil {
			w.Release(context.Background())
		}
		close(stop)
		wg.Wait()
		t.Logf("barging readers %v: the writer waited %v (err %v); %d reads", barging, waited, err, reads)
		bound := 2*ttl + 200*time.Millisecond
		switch {
		case !barging && (err != nil || waited > bound):
			t.Errorf("writer behind a stream of fair readers: waited %v, err %v; want the lock within %v", waited, err, bound)
		case barging && err == nil && waited < 500*time.Millisecond:
			t.Errorf("control: the writer behind barging readers got the lock in %v; want it starved (the check must be able to fail)", waited)
		}
	}
}

func TestReadWriteResume(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := "rw-resume"
	r := sharedLock(t, c, name, 10*time.Second, nil)
	h := r.Handle()
	text, err := h.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseHandle(string(text))
	if err != nil || !p.Shared() || p.Reentrant() {
		t.Fatalf("ParseHandle(%s) = %v (shared %v), %v; want a shared handle", text, p, p.Shared(), err)
	}
	r2, err := newTestClient(t, ns, nil).Resume(t.Context(), p, 10*time.Second, nil)
	if err != nil || !r2.Shared() || r2.Fence() != r.Fence() {
		t.Fatalf("Resume(shared handle) = %v, %v; want a shared lock with the fence %d", r2, err, r.Fence())
	}
	// The same lease read as an exclusive one matches nothing.
	asPlain, err := ParseHandle(strings.Replace(string(text), ".s.", ".p.", 1))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := c.Resume(t.Context(), asPlain, time.Second, nil); !errors.Is(err, ErrNotAcquired) {
		t.Errorf("Resume of a reader's handle as an exclusive lock = %v, %v; want ErrNotAcquired", l, err)
	}
	if err := r2.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.Extend(t.Context(), time.Second); !errors.Is(err, ErrLost) {
		t.Errorf("Extend after a resumed share released the lease = %v; want ErrLost", err)
	}
}

func TestReadWriteInspectAndForceRelease(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	name := "rw-inspect"
	key, _ := c.Keys(name)
	r1 := sharedLock(t, c, name, 10*time.Second, nil)
	r2 := sharedLock(t, newTestClient(t, ns, nil), name, 20*time.Second, &AcquireOptions{Metadata: "report job 7"})
	wc := newTestClient(t, ns, nil)
	wch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return wc.Acquire(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, c, name, 1)
	rc := newTestClient(t, ns, nil)
	acquireAsync(t, func(ctx context.Context) (*Lock, error) { return rc.AcquireShared(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, c, name, 2)
	st, err := c.Inspect(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || !st.Shared || st.Holder != "" || st.Readers != 2 || len(st.ReaderList) != 2 {
		t.Fatalf("Inspect = %+v; want held by 2 readers", st)
	}
	if st.ReaderList[0].Token != r1.Token() || st.ReaderList[1].Token != r2.Token() || st.ReaderList[1].Nodes != 3 ||
		st.ReaderList[1].TTL < 15*time.Second || st.ReaderList[1].Metadata != "report job 7" || st.ReaderList[0].Metadata != "" {
		t.Errorf("Inspect readers = %+v; want %s then %s (about 20s, metadata \"report job 7\"), on 3 nodes", st.ReaderList, r1.Token(), r2.Token())
	}
	if len(st.Waiters) != 2 || st.Waiters[0].Shared || !st.Waiters[1].Shared {
		t.Errorf("Inspect waiters = %+v; want the writer then a reader", st.Waiters)
	}
	bs, err := c.ForceRelease(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if !b.Deleted || !b.Shared {
			t.Errorf("ForceRelease: node %d: %+v; want the readers deleted", b.Node, b)
		}
	}
	within(t, wch, 2*time.Second, "Acquire after ForceRelease")
	for i, n := range ns {
		if n.Exists(t.Context(), key+readersSuffix, key+":rm").Val() != 0 {
			t.Errorf("node %d keeps the reader set after ForceRelease", i)
		}
	}
}
