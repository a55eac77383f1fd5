package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The shares of one lease (a plain lock and its resumed handle, or a
// re-entrant lock's holds): no operation of one share may make the nodes'
// expiry earlier than another live share's local deadline. Each case lets
// one share ask for less than the other holds, and a rival tries the lock
// while the other share is still valid: it must be refused.

// assertRivalRefused makes try-lock attempts of name from rival every 200ms
// until until, and fails the test at the first that wins: a second holder
// while a share of the lease is still valid.
func assertRivalRefused(t *testing.T, rival *Client, name string, until time.Time, share *Lock) {
	t.Helper()
	for time.Now().Before(until) {
		l, err := rival.Acquire(t.Context(), name, time.Second, &AcquireOptions{Retry: NoRetry()})
		if err == nil {
			t.Errorf("rival Acquire(%q) won with fence %d while a share of the lease is valid %v more; want ErrHeld",
				name, l.Fence(), time.Until(share.ValidUntil()).Round(time.Millisecond))
			_ = l.Release(t.Context())
			return
		}
		if !errors.Is(err, ErrHeld) {
			t.Fatalf("rival Acquire(%q) = %v; want ErrHeld", name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// shareCase is one way two shares of a lease ask for different TTLs.
type shareCase struct {
	name      string
	reentrant bool
	// senderTTL and receiverTTL are the TTLs of the Acquire and of the
	// Resume; auto* start their watchdogs.
	senderTTL, receiverTTL   time.Duration
	autoSender, autoReceiver bool
	// after runs once both shares exist: what the shorter share does.
	after func(t *testing.T, sender, receiver *Lock)
	// longer picks the share whose deadline the rival must respect, and
	// stop ends the other share's process without a release.
	longer func(sender, receiver *Lock) *Lock
	stop   func(a, b *Client)
}

func TestSharesNeverShortenEachOther(t *testing.T) {
	sender := func(s, _ *Lock) *Lock { return s }
	receiver := func(_, r *Lock) *Lock { return r }
	closeSender := func(a, _ *Client) { a.Close() }
	closeReceiver := func(_, b *Client) { b.Close() }
	cases := []shareCase{{
		// The receiver resumes with a short TTL and crashes: the sender
		// holds for 30s.
		name: "receiver shorter, crashes", senderTTL: 30 * time.Second, receiverTTL: time.Second,
		longer: sender, stop: closeReceiver,
	}, {
		// The sender's watchdog runs with 2s while the receiver holds for
		// 20s, then the sender's process dies.
		name: "sender watchdog shorter, sender dies", senderTTL: 2 * time.Second, receiverTTL: 20 * time.Second,
		autoSender: true, longer: receiver, stop: closeSender,
		after: func(t *testing.T, _, _ *Lock) { time.Sleep(1500 * time.Millisecond) }, // two watchdog rounds
	}, {
		// The receiver holds longer; the sender extends by hand with less.
		name: "sender extends shorter", senderTTL: 2 * time.Second, receiverTTL: 20 * time.Second,
		longer: receiver, stop: closeSender,
		after: func(t *testing.T, s, _ *Lock) {
			if err := s.Extend(t.Context(), time.Second); err != nil {
				t.Fatalf("sender's Extend(1s) = %v", err)
			}
		},
	}, {
		// The sender holds longer; the receiver extends by hand with less.
		name: "receiver extends shorter", senderTTL: 20 * time.Second, receiverTTL: 10 * time.Second,
		longer: sender, stop: closeReceiver,
		after: func(t *testing.T, _, r *Lock) {
			if err := r.Extend(t.Context(), time.Second); err != nil {
				t.Fatalf("receiver's Extend(1s) = %v", err)
			}
		},
	}, {
		// Both auto-extend; the sender's rounds ask for less. The receiver's
		// process stops (its watchdog with it), the sender's goes on.
		name: "both AutoExtend", senderTTL: 2 * time.Second, receiverTTL: 20 * time.Second,
		autoSender: true, autoReceiver: true, longer: receiver,
		stop: func(a, b *Client) {
			b.Close()
			time.Sleep(1500 * time.Millisecond) // the sender's watchdog runs on
			a.Close()
		},
	}, {
		// The control: a re-entrant lock's holds keep the longest TTL asked
		// for, and did before the plain form learnt to.
		name: "Reentrant receiver shorter, crashes", reentrant: true, senderTTL: 30 * time.Second, receiverTTL: time.Second,
		longer: sender, stop: closeReceiver,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newTestClient(t, nodes(t, 3), nil)
			b := newTestClient(t, nodes(t, 3), nil)
			rival := newTestClient(t, nodes(t, 3), nil)
			name := "shares-" + t.Name()
			s, err := a.Acquire(t.Context(), name, tc.senderTTL, &AcquireOptions{Reentrant: tc.reentrant, AutoExtend: tc.autoSender})
			if err != nil {
				t.Fatalf("sender's Acquire = %v", err)
			}
			r, err := b.Resume(t.Context(), s.Handle(), tc.receiverTTL, &ResumeOptions{AutoExtend: tc.autoReceiver})
			if err != nil {
				t.Fatalf("Resume = %v", err)
			}
			if tc.after != nil {
				tc.after(t, s, r)
			}
			tc.stop(a, b)
			keep := tc.longer(s, r)
			// Until 1.5s past the shorter TTL asked for (when the old
			// scripts let the key expire), and at most 4s: the rival must be
			// refused all along.
			short := min(tc.senderTTL, tc.receiverTTL)
			until := time.Now().Add(short + 1500*time.Millisecond)
			if vu := keep.ValidUntil().Add(-500 * time.Millisecond); vu.Before(until) {
				t.Fatalf("the longer share is valid only until %v from now: the case tests nothing", time.Until(vu))
			}
			assertRivalRefused(t, rival, name, until, keep)
			if err := keep.Err(); err != nil {
				t.Errorf("the longer share's Err() = %v; want nil (still held)", err)
			}
			if err := keep.Release(t.Context()); err != nil {
				t.Errorf("Release of the longer share = %v", err)
			}
		})
	}
}

// Every script that refreshes a plain key the call already holds keeps the
// longer of its expiry and the TTL asked for: a delayed or resent request
// of the call must not cut short what its lock's extend (or a resumed
// share) gave the key. The key lives 5 minutes; each asks for 1 minute.
func TestScriptsNeverShortenAPlainKey(t *testing.T) {
	ctx := t.Context()
	rdb := nodes(t, 1)[0]
	cases := []struct {
		what string
		held string // the key's value, for the call "T1"
		run  func(key, fenceKey, q, qt string) (any, error)
		want any
	}{
		{"extend", "T1.1", func(key, _, _, _ string) (any, error) {
			return extendPlainScript.Run(ctx, rdb, []string{key}, "T1.1", "60000").Int64() // the lease won with T1.1
		}, int64(1)},
		{"acquire, resent", "T1.2", func(key, fenceKey, q, qt string) (any, error) {
			return runAcquireScript(ctx, rdb, acquireScriptCase{mode: queueTry}, key, fenceKey, q, qt)
		}, "1:1"},
		{"acquire over an earlier attempt", "T1.1", func(key, fenceKey, q, qt string) (any, error) {
			return runAcquireScript(ctx, rdb, acquireScriptCase{mode: queueBarge}, key, fenceKey, q, qt)
		}, "1:1"},
		{"acquire over the release's grant", "T1.0", func(key, fenceKey, q, qt string) (any, error) {
			return runAcquireScript(ctx, rdb, acquireScriptCase{mode: queueWait}, key, fenceKey, q, qt)
		}, "1:1"},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			key := "{never-shorten-" + strings.ReplaceAll(tc.what, " ", "-") + "}"
			fenceKey, q, qt := key+":fence", key+":q", key+":qt"
			t.Cleanup(func() { rdb.Del(context.Background(), key, fenceKey, q, qt) })
			rdb.Del(ctx, key, fenceKey, q, qt)
			rdb.Set(ctx, key, tc.held, 5*time.Minute)
			got, err := tc.run(key, fenceKey, q, qt)
			if err != nil || got != tc.want {
				t.Fatalf("script = %v, %v; want %v", got, err, tc.want)
			}
			if pttl := rdb.PTTL(ctx, key).Val(); pttl < 4*time.Minute {
				t.Errorf("PTTL after the script = %v; want about 5m (never shortened to the 1m asked for)", pttl)
			}
		})
	}
	t.Run("extend lengthens", func(t *testing.T) {
		key := "{never-shorten-extend-lengthens}"
		t.Cleanup(func() { rdb.Del(context.Background(), key) })
		rdb.Set(ctx, key, "T1.1", time.Second)
		if got, err := extendPlainScript.Run(ctx, rdb, []string{key}, "T1.1", "60000").Int64(); err != nil || got != 1 {
			t.Fatalf("extend = %v, %v; want 1", got, err)
		}
		if pttl := rdb.PTTL(ctx, key).Val(); pttl < 50*time.Second {
			t.Errorf("PTTL after extend = %v; want about 1m", pttl)
		}
	})
}

// stuckExtends is a node on which the extend script does not answer until
// unstuck is closed, whatever its context says (as go-redis may not on a
// socket read): its round times out, an uncertain failure. Every other
// script runs.
type stuckExtends struct {
	redis.Scripter
	unstuck chan struct{}
}

func (s stuckExtends) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == extendPlainScript.Hash() {
		<-s.unstuck
		return redis.NewCmdResult(nil, context.DeadlineExceeded)
	}
	return s.Scripter.EvalSha(ctx, sha, keys, args...)
}

// A share whose extend fails without a majority saying the key is gone
// (its round timed out) ends, but leaves the keys to their TTL: releasing
// them would end the other share's lease on the nodes while that share is
// still valid. A failed extend of a lock that a majority no longer holds
// still releases what is left (TestFailedExtendLosesLock).
func TestFailedExtendOfOneShareKeepsTheOthers(t *testing.T) {
	unstuck := make(chan struct{})
	var ns []Node
	for _, n := range nodes(t, 3) {
		ns = append(ns, stuckExtends{n, unstuck})
	}
	a, err := NewWithNodes(ns, &Options{NodeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewWithNodes = %v", err)
	}
	t.Cleanup(func() { a.Close() })
	t.Cleanup(func() { close(unstuck) }) // before Close, which joins the calls
	b := newTestClient(t, nodes(t, 3), nil)
	rival := newTestClient(t, nodes(t, 3), nil)
	name := "shares-failed-extend"
	s, err := a.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("sender's Acquire = %v", err)
	}
	r, err := b.Resume(t.Context(), s.Handle(), 10*time.Second, nil)
	if err != nil {
		t.Fatalf("Resume = %v", err)
	}
	if err := s.Extend(t.Context(), 10*time.Second); !errors.Is(err, ErrLost) || !errors.Is(err, ErrNodeTimeout) {
		t.Fatalf("sender's Extend with its extends stuck = %v; want ErrLost from node timeouts", err)
	}
	assertRivalRefused(t, rival, name, time.Now().Add(time.Second), r)
	if err := r.Release(t.Context()); err != nil {
		t.Errorf("receiver's Release = %v", err)
	}
}
