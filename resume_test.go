package redlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestResumeFromSecondClient(t *testing.T) {
	for _, reent := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "Reentrant"}[reent], func(t *testing.T) {
			a := newTestClient(t, nodes(t, 3), nil)
			b := newTestClient(t, nodes(t, 3), nil)
			name := "resume-" + map[bool]string{false: "plain", true: "reentrant"}[reent]
			key, _ := a.Keys(name)
			l, err := a.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Reentrant: reent})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			text, err := l.Handle().MarshalText()
			if err != nil {
				t.Fatalf("MarshalText = %v", err)
			}
			h, err := ParseHandle(string(text))
			if err != nil {
				t.Fatalf("ParseHandle(%q) = %v", text, err)
			}
			start := time.Now()
			r, err := b.Resume(t.Context(), h, 5*time.Second, nil)
			if err != nil {
				t.Fatalf("Resume = %v", err)
			}
			if r.Fence() != l.Fence() || r.Token() != l.Token() || r.Name() != name {
				t.Errorf("resumed: fence %d token %q; want %d %q", r.Fence(), r.Token(), l.Fence(), l.Token())
			}
			if u := r.ValidUntil(); u.Before(start) || u.After(start.Add(5*time.Second)) {
				t.Errorf("resumed lock valid until %v; want within its own 5s from %v", u, start)
			}
			if err := r.Extend(t.Context(), 5*time.Second); err != nil {
				t.Errorf("Extend of the resumed lock = %v", err)
			}
			if err := r.Release(t.Context()); err != nil {
				t.Fatalf("Release of the resumed lock = %v", err)
			}
			if reent {
				// Its own hold went; the sender's is left.
				wantHolds(t, a, name, 1)
				if err := l.Extend(t.Context(), 5*time.Second); err != nil {
					t.Errorf("sender's Extend after the resumed hold was released = %v", err)
				}
			} else {
				// One lease shared: the key is gone for both.
				assertNoLockKey(t, nodes(t, 3), key)
				if err := l.Extend(t.Context(), 5*time.Second); !errors.Is(err, ErrLost) {
					t.Errorf("sender's Extend after the resumed lock was released = %v; want ErrLost", err)
				}
			}
			l.Release(t.Context())
			assertNoLockKey(t, nodes(t, 3), key)
		})
	}
}

// forged is a lock of c on name with a token of its own, as someone who
// knows the name but not the token would make it.
func forged(c *Client, name string, ttl time.Duration, reent bool) *Lock {
	f := formPlain
	if reent {
		f = formHold
	}
	ls := c.newLease(name, ttl, leaseSpec{form: f, fenced: true})
	return newLock(c, newCall(context.Background(), ls), ls.counted(1), 1, time.Now().Add(ttl))
}

func TestResumeWrongTokenRejected(t *testing.T) {
	for _, reent := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "Reentrant"}[reent], func(t *testing.T) {
			c := newTestClient(t, nodes(t, 3), nil)
			name := "wrong-token-" + map[bool]string{false: "plain", true: "reentrant"}[reent]
			key, _ := c.Keys(name)
			l, err := c.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Reentrant: reent})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			defer l.Release(context.Background())
			wantHolds(t, c, name, 1) // the last node's answer has landed
			snapshot := func() []string {
				var out []string
				for _, nd := range nodes(t, 3) {
					if reent {
						out = append(out, strings.Join(nd.HKeys(t.Context(), key).Val(), ","))
					} else {
						out = append(out, nd.Get(t.Context(), key).Val())
					}
				}
				return out
			}
			before := snapshot()

			h := l.Handle()
			h.token = newToken()
			text, _ := h.MarshalText()
			bad, err := ParseHandle(string(text))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Resume(t.Context(), bad, time.Second, nil); !errors.Is(err, ErrNotAcquired) {
				t.Errorf("Resume with a wrong token = %v; want ErrNotAcquired", err)
			}
			f := forged(c, name, time.Second, reent)
			if err := f.Extend(t.Context(), 30*time.Second); !errors.Is(err, ErrLost) {
				t.Errorf("Extend with a wrong token = %v; want ErrLost", err)
			}
			f = forged(c, name, time.Second, reent)
			f.Release(t.Context())
			if after := snapshot(); strings.Join(after, "|") != strings.Join(before, "|") {
				t.Errorf("keys after a wrong token's resume, extend and release: %q; want unchanged %q", after, before)
			}
			for i, nd := range nodes(t, 3) {
				if d := nd.PTTL(t.Context(), key).Val(); d > 10*time.Second || d <= 0 {
					t.Errorf("node %d: PTTL %v; want the holder's 10s, not the forger's 30s", i, d)
				}
			}
			if err := l.Release(t.Context()); err != nil {
				t.Fatalf("Release = %v", err)
			}
			assertNoLockKey(t, nodes(t, 3), key)
		})
	}
}

// TestReentrantEventsTellHoldsApart: the locks that share a token (the
// outer one, a nested one, a resumed one) report events with a Hold of
// their own, so that an observer can time each.
func TestReentrantEventsTellHoldsApart(t *testing.T) {
	var mu sync.Mutex
	holds := map[EventKind][]string{}
	c := newTestClient(t, nodes(t, 1), &Options{NodeTimeout: time.Second, OnEvent: func(_ context.Context, e Event) {
		mu.Lock()
		defer mu.Unlock()
		holds[e.Kind] = append(holds[e.Kind], e.Hold)
	}})
	outer := reentrant(t, c, "reentrant-events", time.Second, "")
	inner, err := outer.Reenter(t.Context(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := c.Resume(t.Context(), outer.Handle(), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Lock{resumed, inner, outer} {
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	acq, rel := holds[EventAcquire], holds[EventRelease]
	if len(acq) != 3 || acq[0] != "" || acq[1] == "" || acq[2] == "" || acq[1] == acq[2] {
		t.Errorf("acquire events' Hold = %q; want \"\" for Acquire's lock and two distinct ids", acq)
	}
	if len(rel) != 3 || len(acq) == 3 && (rel[0] != acq[2] || rel[1] != acq[1] || rel[2] != "") {
		t.Errorf("release events' Hold = %q; want each lock's own (acquired as %q)", rel, acq)
	}
}
