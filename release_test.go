package redlock

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tests of Release at quorum, of the goroutines the Client owns and of
// Close, against fake nodes under synctest's fake clock.

// logSink is a slog.Handler that keeps every record, for tests of what the
// Client logs.
type logSink struct {
	mu      sync.Mutex // protects records
	records []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *logSink) WithGroup(string) slog.Handler            { return s }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r.Clone())
	return nil
}

// find returns the attributes of the records whose message is msg.
func (s *logSink) find(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, r := range s.records {
		if r.Message != msg {
			continue
		}
		m := map[string]any{}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.Any()
			return true
		})
		out = append(out, m)
	}
	return out
}

// slowScripts wraps a fake node: a call of script sha takes delay[sha]
// longer, whatever its context says (as a go-redis read may).
type slowScripts struct {
	*fakeNode
	delay map[string]time.Duration
}

func (s slowScripts) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	time.Sleep(s.delay[sha])
	return s.fakeNode.EvalSha(ctx, sha, keys, args...)
}

// newWrappedClient is newFakeClient with node i's scripter replaced by
// wrap(i, fake) where wrap returns non-nil.
func newWrappedClient(t testing.TB, n int, opts *Options, wrap func(i int, f *fakeNode) redis.Scripter) (*Client, []*fakeNode) {
	t.Helper()
	c, fakes := newFakeClient(t, n, opts)
	for i, f := range fakes {
		if s := wrap(i, f); s != nil {
			c.nodes[i].client, c.links[i].Client = s, s
		}
	}
	return c, fakes
}

// flattenErrors returns the errors joined in err (errors.Join), or err.
func flattenErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// noKey fails the test if any fake node holds key.
func noKey(t testing.TB, fakes []*fakeNode, key string) {
	t.Helper()
	for i, f := range fakes {
		if v, ok := f.get(key); ok {
			t.Errorf("node %d holds %s = %q; want it deleted", i, key, v)
		}
	}
}

func TestReleaseReturnsAtQuorumAndLogsStraggler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logSink{}
		c, fakes := newFakeClient(t, 3, &Options{NodeTimeout: 100 * time.Millisecond, Logger: slog.New(logs)})
		l, err := c.Acquire(t.Context(), "q", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// Node 2 answers 50ms late, with an error.
		fakes[2].set(func(f *fakeNode) { f.delay, f.err = 50*time.Millisecond, errors.New("connection reset by peer") })
		start := time.Now()
		err = l.Release(t.Context())
		if got := time.Since(start); got != 0 {
			t.Errorf("Release returned after %v; want at once, when nodes 0 and 1 had deleted", got)
		}
		if err != nil {
			t.Errorf("Release = %v; want nil: a quorum deleted, node 2 had not answered yet", err)
		}
		noKey(t, fakes[:2], "redlock:{q}")
		if got := logs.find(msgStraggler); len(got) != 0 {
			t.Errorf("straggler logs at return = %v; want none yet", got)
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		got := logs.find(msgStraggler)
		if len(got) != 1 || got[0]["node"] != int64(2) || got[0]["lock"] != "q" {
			t.Fatalf("straggler logs = %v; want one naming node 2 and lock q", got)
		}
		if err, _ := got[0]["err"].(error); err == nil || err.Error() != "connection reset by peer" {
			t.Errorf("logged err = %v; want node 2's error", got[0]["err"])
		}
	})
}

func TestCloseJoinsBackgroundCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 100 * time.Millisecond
		c, fakes := newWrappedClient(t, 5, &Options{NodeTimeout: timeout}, func(i int, f *fakeNode) redis.Scripter {
			switch i {
			case 1: // its release answers after Release returned
				return slowScripts{f, map[string]time.Duration{releasePlainScript.Hash(): 200 * time.Millisecond}}
			case 2: // its grant comes after the attempt failed: a late answer to clean up
				return slowScripts{f, map[string]time.Duration{acquirePlainScript.Hash(): 150 * time.Millisecond}}
			}
			return nil
		})
		l, err := c.Acquire(t.Context(), "held", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
		// Release returned at quorum; node 1's delete is still on its way.
		if n := fakes[1].count("release"); n != 0 {
			t.Fatalf("node 1 got %d deletes at return; want its delete still on its way", n)
		}
		for _, f := range fakes[3:] {
			f.set(func(f *fakeNode) { f.kv["redlock:{late}"] = "someone-else" })
		}
		// Nodes 0 and 1 grant, 3 and 4 refuse: the attempt fails at once,
		// and node 2's grant arrives 150ms later, past the node timeout.
		if _, err := c.Acquire(t.Context(), "late", time.Minute, &AcquireOptions{Retry: NoRetry()}); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire = %v; want ErrNotAcquired", err)
		}
		if n := c.goes.Running(); n == 0 {
			t.Fatalf("no background call running before Close; the test has nothing to join")
		}
		// Acquire returned at the node timeout, 100ms after Release: node
		// 2's grant comes at 150ms, node 1's delete at 200ms.
		start := time.Now()
		c.Close()
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("Close returned after %v; want 100ms, when node 1's delete was in", got)
		}
		if n := fakes[1].count("release"); n != 1 {
			t.Errorf("node 1 got %d deletes by Close; want 1", n)
		}
		if n := c.goes.Running(); n != 0 {
			t.Errorf("%d goroutines still running after Close; want 0", n)
		}
		noKey(t, fakes, "redlock:{held}")
		noKey(t, fakes[:3], "redlock:{late}")
		if _, err := c.Acquire(t.Context(), "after", time.Minute, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Acquire after Close = %v; want ErrClosed", err)
		}
	})
}

func TestCloseStopsWatchdogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		const ttl = 3 * time.Second
		l := autoLock(t, c, "wd", ttl)
		time.Sleep(ttl / 2) // one automatic extend
		synctest.Wait()
		extends := fakes[0].count("extend")
		if extends != 1 {
			t.Fatalf("node 0 got %d extends before Close; want 1", extends)
		}
		c.Close()
		if n := c.goes.Running(); n != 0 {
			t.Errorf("%d goroutines still running after Close; want 0 (the watchdog joined)", n)
		}
		if err := l.Err(); err != nil {
			t.Errorf("Err() = %v after Close; want the lock valid until its deadline", err)
		}
		until := l.ValidUntil()
		select {
		case <-l.Done():
		case <-time.After(time.Until(until) + ttl):
			t.Fatalf("the lock did not end at its deadline %v; want the watchdog stopped by Close", until)
		}
		if now := time.Now(); !now.Equal(until) || !errors.Is(l.Err(), ErrLost) {
			t.Errorf("Done at %v with %v; want at the deadline %v, ErrLost", now, l.Err(), until)
		}
		if n := fakes[0].count("extend"); n != extends {
			t.Errorf("node 0 got %d extends after Close; want none", n-extends)
		}
	})
}

// extendInFlight returns a lock whose watchdog has had a round in flight
// for 10ms: the extend script takes a second on every node; the release
// script takes release(i) on node i.
func extendInFlight(t *testing.T, opts *Options, release func(i int) time.Duration) (*Lock, []*fakeNode) {
	t.Helper()
	c, fakes := newWrappedClient(t, 3, opts, func(i int, f *fakeNode) redis.Scripter {
		return slowScripts{f, map[string]time.Duration{extendPlainScript.Hash(): time.Second, releasePlainScript.Hash(): release(i)}}
	})
	const ttl = 3 * time.Second
	l := autoLock(t, c, "x", ttl)
	time.Sleep(ttl/3 + 10*time.Millisecond)
	if n := fakes[0].count("extend"); n != 0 {
		t.Fatalf("node 0 ran %d extends; want the first one still on its way", n)
	}
	return l, fakes
}

func TestReleaseDoesNotWaitForExtendInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 100 * time.Millisecond
		// Node 2 is slow to release too: Release must not wait for it.
		l, fakes := extendInFlight(t, &Options{NodeTimeout: timeout}, func(i int) time.Duration {
			if i == 2 {
				return time.Second
			}
			return 0
		})
		start := time.Now()
		if err := l.Release(t.Context()); err != nil {
			t.Errorf("Release = %v; want nil", err)
		}
		if got := time.Since(start); got != 0 {
			t.Errorf("Release took %v with an extend in flight; want at once (a quorum deleted), within one node timeout %v", got, timeout)
		}
		// The extends land after the deletes on nodes 0 and 1, and before
		// it on node 2: none re-creates the key.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := fakes[0].count("extend"); n != 1 {
			t.Fatalf("node 0 ran %d extends; want the one in flight to have landed after the delete", n)
		}
		noKey(t, fakes, "redlock:{x}")
	})
}

func TestReleaseWithCancelledContext(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		name := "idle"
		if inFlight {
			name = "extend-in-flight"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := func(int) time.Duration { return 50 * time.Millisecond }
				var l *Lock
				var fakes []*fakeNode
				if inFlight {
					l, fakes = extendInFlight(t, &Options{NodeTimeout: 100 * time.Millisecond}, slow)
				} else {
					c, fs := newWrappedClient(t, 3, &Options{NodeTimeout: 100 * time.Millisecond}, func(i int, f *fakeNode) redis.Scripter {
						return slowScripts{f, map[string]time.Duration{releasePlainScript.Hash(): slow(i)}}
					})
					var err error
					if l, err = c.Acquire(t.Context(), "x", 3*time.Second, nil); err != nil {
						t.Fatal(err)
					}
					fakes = fs
				}
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				start := time.Now()
				err := l.Release(ctx)
				if got := time.Since(start); got != 0 {
					t.Errorf("Release(cancelled ctx) took %v; want at once", got)
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Release(cancelled ctx) = %v; want an error matching context.Canceled", err)
				}
				if !errors.Is(l.Err(), ErrReleased) {
					t.Errorf("Err() = %v; want ErrReleased", l.Err())
				}
				time.Sleep(2 * time.Second)
				synctest.Wait()
				for i, f := range fakes {
					if n := f.count("release"); n != 1 {
						t.Errorf("node %d got %d deletes; want 1, sent despite the cancelled ctx", i, n)
					}
				}
				noKey(t, fakes, "redlock:{x}")
			})
		})
	}
}

func TestWatchdogRetryIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logSink{}
		c, fakes := newFakeClient(t, 3, &Options{Logger: slog.New(logs)})
		const ttl = 3 * time.Second
		l := autoLock(t, c, "blip", ttl)
		failFor(fakes, 2, ttl/3+time.Millisecond) // the first watchdog round misses its quorum
		time.Sleep(ttl / 2)
		got := logs.find("redlock: watchdog extend missed its quorum; retrying before the deadline")
		if len(got) != 1 || got[0]["lock"] != "blip" {
			t.Errorf("watchdog logs = %v; want one retry of lock blip", got)
		}
		if err := l.Err(); err != nil {
			t.Errorf("Err() = %v; want the retry to have kept the lock", err)
		}
		l.Release(t.Context())
	})
}

func TestSubscriptionFailureIsLogged(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens on port 1
	t.Cleanup(func() { dead.Close() })
	f := newFakeNode()
	holder, err := newClient([]node{{addr: "fake0", client: f}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	logs := &logSink{}
	waiter, err := newClient([]node{{addr: "fake0", client: f, sub: dead}}, &Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := holder.Acquire(t.Context(), "sub", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	// The waiter fails once, then subscribes to release notices: the
	// subscription fails, and it falls back to its retry delay.
	const msg = "redlock: subscribing to release notices failed; waiters fall back to their retry delays until a retry succeeds"
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && len(logs.find(msg)) == 0; {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		_, err := waiter.Acquire(ctx, "sub", time.Minute, &AcquireOptions{Retry: func(int) (time.Duration, bool) { return 50 * time.Millisecond, true }})
		cancel()
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire of a held lock = %v; want ErrNotAcquired", err)
		}
	}
	waiter.Close()
	got := logs.find(msg)
	if len(got) == 0 || got[0]["addr"] != "fake0" || got[0]["err"] == nil {
		t.Errorf("subscription logs = %v; want node fake0's failure with its error", got)
	}
}

func TestReleaseEndsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fakes := newFakeClient(t, 3, nil)
		l := autoLock(t, c, "rel", time.Second)
		ctx := l.Context(t.Context())
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release = %v", err)
		}
		if !errors.Is(l.Err(), ErrReleased) || !errors.Is(context.Cause(ctx), ErrReleased) {
			t.Errorf("Err() = %v, Cause(ctx) = %v; want ErrReleased", l.Err(), context.Cause(ctx))
		}
		if err := l.Release(t.Context()); !errors.Is(err, ErrReleased) {
			t.Errorf("second Release = %v; want ErrReleased", err)
		}
		if err := l.Extend(t.Context(), time.Second); !errors.Is(err, ErrReleased) {
			t.Errorf("Extend after Release = %v; want ErrReleased", err)
		}
		synctest.Wait() // Release returned at quorum: the last delete may still be on its way
		for i, f := range fakes {
			if _, ok := f.get("redlock:{rel}"); ok {
				t.Errorf("node %d still holds the key", i)
			}
		}
	})
}
