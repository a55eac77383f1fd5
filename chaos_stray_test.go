package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Row 21 and control f: a failed attempt's acquire, held in the network
// past its timeout, lands after the lease's later requests and sets a
// stray value of the call on a node (issue 28; docs/design.md, "What a
// lease counts").

// 21. A stray value of the call (three nodes A, B, C; honest clocks,
// persistent nodes). A rival r holds the lock. c1 (node timeout 100ms)
// acquires: its request to A is held 1.3s in its process, B and C refuse;
// attempt 1 fails, and its exact cleanup of A, sent when A's request timed
// out, is held 6s. r releases on B and C (its path to A is down, so A keeps
// r's key until its TTL), and c1 wins on B and C with a later attempt or
// the releases' grants. r's key on A expires, attempt 1's acquire lands
// there and sets "<token>.1". Then c1 is cut off from B. c1's watchdog must
// not count A: "<token>.1" is no value its lease won, and attempt 1's
// cleanup, still on its way, deletes it. So c1 is told of its loss at its
// deadline, before its key on B expires, and c2, which takes the lock once
// the cleanup landed, overlaps nobody.
func chaosStrayAcquire(t *testing.T, row string) {
	e, rep, s := strayAcquire(t, strayPlain, false)
	assertClean(t, row, rep)
	if s.c1Err == nil {
		t.Errorf("row %q: c1's lock when c2 acquired: Err() = nil; want ErrLost (its lease counted only C)", row)
	}
	if !s.c2Got {
		t.Errorf("row %q: c2 never acquired after the held cleanup landed; want the lock (liveness)", row)
	}
	e.finish(row, rep, nil)
}

// Control f: row 21 with the extend that counted every value of the call
// ("<token>.*"), as extend.lua did before issue 28. c1's watchdog counts the
// stray "<token>.1" on A with C, and keeps extending; the held cleanup then
// deletes it, c1's value is on C alone while c1 believes, and c2 takes A and
// B: the checker must report the overlap.
func controlStrayAcquireAnyAttempt(t *testing.T, row string) {
	e, rep, s := strayAcquire(t, strayPlain, true)
	caught := s.c2Got && s.c1Err == nil && len(rep.Overlaps) > 0
	if !caught {
		t.Errorf("row %q: c2 acquired %v while c1's Err() = %v, overlaps = %d; want c2 holding while c1 believes, reported as an overlap:\n%s",
			row, s.c2Got, s.c1Err, len(rep.Overlaps), rep)
	}
	e.finish(row, rep, &caught)
}

// TestStrayAcquireNotCounted runs the schedule of row 21 for every form of
// a lock that a watchdog extends: the plain lock (fair and barging), with
// metadata (an election's leader is one), the re-entrant form, and a
// resumed share of a plain lock. Each must be told of its loss before a
// rival holds.
func TestStrayAcquireNotCounted(t *testing.T) {
	for _, form := range []strayForm{strayBarging, strayMeta, strayReentrant, strayResumed} {
		t.Run(string(form), func(t *testing.T) {
			e, rep, s := strayAcquire(t, form, false)
			if s.c1Err == nil || len(rep.Overlaps) > 0 {
				t.Errorf("c1 (%s) when c2 acquired: Err() = %v, overlaps = %d; want the loss, and no overlap:\n%s", form, s.c1Err, len(rep.Overlaps), rep)
			}
			if !s.c2Got {
				t.Errorf("c2 never acquired after the held cleanup landed; want the lock (liveness)")
			}
			// Its row in the chaos summary (without it, the env's cleanup
			// listed the run as stopped early: "(FAILED)", though it passed).
			e.finish("21-stray-acquire-"+string(form), rep, nil)
		})
	}
}

// strayForm is how c1 holds the lock in the stray schedule.
type strayForm string

const (
	strayPlain     strayForm = "plain"
	strayBarging   strayForm = "barging"
	strayReentrant strayForm = "reentrant"
	strayResumed   strayForm = "resumed"
	strayMeta      strayForm = "metadata"
)

// strayResult is what the stray schedule saw: c1's Err() when c2 acquired
// (nil: c1 still believed), and whether c2 acquired.
type strayResult struct {
	c1Err error
	c2Got bool
}

// strayAcquire runs the schedule of row 21, c1 holding in form, with the
// any-attempt extend when anyAttempt (control f).
func strayAcquire(t *testing.T, form strayForm, anyAttempt bool) (*chaosEnv, *history.Report, strayResult) {
	e := newEnv(t, 3, memFenced, nil)
	name := "r21-" + string(form)
	const (
		rivalTTL = 1200 * time.Millisecond
		ttl      = 3 * time.Second
	)
	opts := &redlock.Options{NodeTimeout: 100 * time.Millisecond}
	c1 := e.clientWith("c1", opts)
	if anyAttempt {
		for _, rdb := range c1.net.Clients() {
			rdb.AddHook(swapScript{hash: extendHash, with: anyAttemptExtendSrc})
		}
	}
	r, c2 := e.client("r"), e.client("c2")
	for _, s := range []*sim{r, c1, c2} {
		s.warmUp(name)
	}
	// A held EVALSHA that finds no script does nothing: load them all.
	for i := 0; i < e.cl.Len(); i++ {
		for _, src := range redlock.ScriptSources {
			if err := e.cl.Client(i).ScriptLoad(within(t, 5*time.Second), src).Err(); err != nil {
				t.Fatalf("SCRIPT LOAD on node %d: %v", i, err)
			}
		}
	}
	lockKey, _ := e.directKeys(name)
	lr := mustAcquire(t, r, name, rivalTTL, 5*time.Second, nil, "all nodes")

	// Attempt 1's acquire to A is held 1.3s, its cleanup of A (sent when
	// that request times out) 6s; c1's other requests go at once.
	e.mustFault(0, c1.name, "hold attempt 1", func() error { return c1.net.HoldRequestsBy(0, holdAttemptOne) })
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		o := &redlock.AcquireOptions{AutoExtend: form != strayResumed, Barging: form == strayBarging, Reentrant: form == strayReentrant,
			Retry: func(int) (time.Duration, bool) { return 300 * time.Millisecond, true }}
		if form == strayMeta {
			o.Metadata = "c1"
		}
		l, err := c1.acquire(ctx, name, ttl, o)
		done <- result{l, err}
	}()
	if !waitFor(5*time.Second, func() bool { return c1.net.Held() >= 2 }) {
		t.Fatalf("attempt 1's acquire and cleanup to A were never both held (held: %d)", c1.net.Held())
	}

	// r releases on B and C only: A keeps r's key until its TTL.
	e.down(r, 0)
	_ = r.release(lr)
	res := <-done
	if res.err != nil {
		t.Fatalf("c1's %s acquire = %v; want the lock on B and C", form, res.err)
	}
	l1 := res.l
	if form == strayResumed {
		// Another process of c1's resumes the lock and extends it; the
		// lock itself has no watchdog and ends at its deadline.
		var err error
		if l1, err = c1.resume(ctx, l1.Handle(), ttl, &redlock.ResumeOptions{AutoExtend: true}); err != nil {
			t.Fatalf("Resume of c1's lock = %v; want the share", err)
		}
	}
	// Attempt 1's acquire lands on A once r's key expired there.
	stray := l1.Token() + ".1"
	if form == strayReentrant {
		stray = "" // a hash: its holds are checked below
	}
	if !waitFor(5*time.Second, func() bool {
		if form == strayReentrant {
			return e.cl.Client(0).HGet(ctx, lockKey, "h:"+l1.Token()).Val() == "1"
		}
		return e.cl.Client(0).Get(ctx, lockKey).Val() == stray
	}) {
		t.Fatalf("attempt 1's held acquire never set its value on A (held: %d)", c1.net.Held())
	}
	if c1.net.Held() == 0 {
		t.Fatalf("attempt 1's cleanup of A landed before the schedule reached it; want it still held")
	}
	e.down(c1, 1)

	// Once the cleanup landed, c2 takes the lock as soon as it can.
	if !waitFor(10*time.Second, func() bool { return c1.net.Held() == 0 }) {
		t.Fatalf("attempt 1's held cleanup never landed")
	}
	if v := e.cl.Client(0).Get(ctx, lockKey).Val(); v != "" && form != strayReentrant {
		// The cleanup of "<token>.1" landed after the acquire set it: A's
		// key is gone unless something else of c1's took A meanwhile.
		t.Fatalf("the lock key on A once attempt 1's cleanup landed = %q (token %s); want none: the schedule did not run as planned", v, l1.Token())
	}
	var s strayResult
	l2, err := c2.acquire(within(t, 10*time.Second), name, ttl, &redlock.AcquireOptions{Barging: true,
		Retry: func(int) (time.Duration, bool) { return 20 * time.Millisecond, true }})
	if err == nil {
		s.c1Err, s.c2Got = l1.Err(), true
		c2.release(l2)
	}
	_ = c1.release(l1)
	if form == strayResumed {
		_ = c1.release(res.l)
		// The lock and its resumed share are one lease (checkLease).
		share := ""
		for _, ev := range e.rec.Events() {
			if strings.HasPrefix(ev.Token, l1.Token()+"/") {
				share = ev.Token
				break
			}
		}
		return e, e.checkLease(l1.Token(), share), s
	}
	return e, e.check(), s
}

// holdAttemptOne is c1's HoldRequestsBy in row 21: attempt 1's acquire
// (the value "<token>.1") 1.3s, its cleanup ("<token>.1", or the
// re-entrant form's hold of attempt 1) 6s, nothing else.
func holdAttemptOne(args []any) time.Duration {
	if len(args) < 3 || fmt.Sprint(args[0]) != "evalsha" {
		return 0
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || len(args) < 4+n {
		return 0
	}
	argv := args[3+n:]
	sha := fmt.Sprint(args[1])
	switch {
	case slices.Contains(redlock.AcquireHashes, sha):
		if strings.HasSuffix(fmt.Sprint(argv[0]), ".1") {
			return 1300 * time.Millisecond
		}
	case slices.Contains(redlock.CleanupHashes, sha):
		if strings.HasSuffix(fmt.Sprint(argv[0]), ".1") {
			return 6 * time.Second
		}
	case sha == redlock.HoldReleaseHash:
		if len(argv) > 3 && fmt.Sprint(argv[3]) == "1" {
			return 6 * time.Second
		}
	}
	return 0
}

// anyAttemptExtendSrc is extend.lua before issue 28: it extends a key that
// holds any value of the call, "<token>.*" (the prefix of the value it is
// given), a failed attempt's too.
const anyAttemptExtendSrc = `local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' then
  return 0
end
local prefix = string.sub(ARGV[1], 1, string.find(ARGV[1], '.', 1, true))
if string.sub(cur, 1, #prefix) ~= prefix then
  return 0
end
if redis.call('PTTL', KEYS[1]) >= tonumber(ARGV[2]) then
  return 1
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`

// swapScript is a go-redis hook that runs the script with hash as the
// source with instead: a control's earlier form of a script, on the
// Client's own path to the node (its sender's pipelines included).
type swapScript struct{ hash, with string }

var _ redis.Hook = swapScript{}

func (swapScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s swapScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		nc, ok := s.swapped(ctx, cmd)
		if !ok {
			return next(ctx, cmd)
		}
		err := next(ctx, nc)
		answer(cmd, nc)
		return err
	}
}

func (s swapScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sent := slices.Clone(cmds)
		for i, cmd := range cmds {
			if nc, ok := s.swapped(ctx, cmd); ok {
				sent[i] = nc
			}
		}
		err := next(ctx, sent)
		for i, cmd := range cmds {
			if sent[i] != cmd {
				answer(cmd, sent[i].(*redis.Cmd))
			}
		}
		return err
	}
}

// swapped returns EVAL <with> in place of cmd when cmd is EVALSHA <hash>:
// a command of its own, so that the caller's arguments stay as they are.
func (s swapScript) swapped(ctx context.Context, cmd redis.Cmder) (*redis.Cmd, bool) {
	args := cmd.Args()
	if len(args) < 2 || !strings.EqualFold(fmt.Sprint(args[0]), "evalsha") || args[1] != s.hash {
		return nil, false
	}
	return redis.NewCmd(ctx, append([]any{"eval", s.with}, args[2:]...)...), true
}

// answer gives cmd the answer of nc, which was sent in its place.
func answer(cmd redis.Cmder, nc *redis.Cmd) {
	if c, ok := cmd.(*redis.Cmd); ok {
		c.SetVal(nc.Val())
	}
	cmd.SetErr(nc.Err())
}
