package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest/history"
)

// Row 18 and control d: a plain lock handed over to another process
// (Lock.Handle, Client.Resume) under faults. The two shares of the lease
// have one key and token, and TTLs and deadlines of their own; no
// operation of one share may make the nodes' expiry earlier than the other
// share's deadline.

const (
	handoverSenderTTL   = 1500 * time.Millisecond
	handoverReceiverTTL = 9 * time.Second // its first watchdog round comes 3s after the hand-over
)

// 18. Hand-over under faults (issue 19): three rivals contend for the lock
// throughout. The sender acquires it (fenced, AutoExtend with a 1.5s TTL),
// increments, reads, and hands it over: the receiver resumes it with 9s
// and AutoExtend. Once the sender's watchdog has extended after the
// hand-over, the sender's process pauses past its TTL (its paths go down:
// no round of its watchdog reaches a node; its clock runs on, as in row 6,
// and tells it of the loss at its deadline), and two nodes are killed (D
// and E, unless the hand-over missed some nodes: those go first, so that
// three nodes that hold the lease stay up). The receiver's watchdog
// extends on the three others alone, the two come back with their data,
// and the receiver increments and releases; a rival then takes the lock,
// and the sender's write after its pause is refused by its stale fence.
// Both shares are in the history with their own deadlines; each must
// overlap no rival, and be told of its loss by its deadline.
//
// Before extends only moved a key's expiry later, the sender's extend cut
// the key to 1.5s, and the key was gone from every node while the
// receiver's share had seconds to go: a rival took the lock.
func chaosHandover(t *testing.T, row string) {
	r := handover(t, row, false)
	assertClean(t, row, r.rep)
	wantAcquisitions(t, row, r.rep, 3) // the sender, the receiver's share, a rival after it
	if r.receiverErr != nil {
		t.Errorf("row %q: the receiver's Err() before its release = %v; want nil (its share lasts %v)", row, r.receiverErr, handoverReceiverTTL)
	}
	if r.receiverAccepted != r.receiverWrites {
		t.Errorf("row %q: the receiver's writes accepted = %d of %d; want all", row, r.receiverAccepted, r.receiverWrites)
	}
	if r.receiverReleaseErr != nil {
		t.Errorf("row %q: the receiver's Release = %v; want nil", row, r.receiverReleaseErr)
	}
	if !r.roundWithoutSender {
		t.Errorf("row %q: the receiver's watchdog made no extend round after the sender's pause; want one (the row tests nothing without it)", row)
	}
	for i, v := range r.onRestarted {
		if !strings.HasPrefix(v, r.sender.Token()+".") {
			t.Errorf("row %q: node %d after its restart: the lock key = %q; want the lease's value (token %s), kept by persistence",
				row, i, v, r.sender.Token())
		}
	}
	if r.refused == 0 {
		t.Errorf("row %q: rivals refused while the receiver's share was the only one = 0; want >= 1 (rivals must contend throughout)", row)
	}
	if r.staleAccepted {
		t.Errorf("row %q: the sender's write after its pause accepted; want it rejected by its stale fence", row)
	}
	if r.rep.RejectedWrites == 0 {
		t.Errorf("row %q: rejected writes = 0; want the sender's after its pause", row)
	}
	if !errors.Is(r.senderReleaseErr, redlock.ErrLost) {
		t.Errorf("row %q: the sender's Release after its pause = %v; want an error matching ErrLost", row, r.senderReleaseErr)
	}
	r.e.finish(row, r.rep, nil)
}

// Control d: row 18 with the sender's extends run by the extend script as
// it was before extends only moved a key's expiry later (a PEXPIRE of the
// caller's TTL, whatever the key had). The sender's watchdog cuts the key
// to 1.5s after the hand-over, the key vanishes from every node while the
// receiver's share lasts, a rival takes the lock, and the checker must
// report its overlap with the receiver's share.
func controlHandoverUnconditional(t *testing.T, row string) {
	r := handover(t, row, true)
	caught := slices.ContainsFunc(r.rep.Overlaps, func(v history.Violation) bool { return involves(v, r.receiverShare) })
	if !caught {
		t.Errorf("row %q: overlaps with the receiver's share = 0; want the rival that took the lock while it was valid reported:\n%s", row, r.rep)
	}
	r.e.finish(row, r.rep, &caught)
}

// handoverRun is what the scenario of row 18 saw, for the row and its
// control to judge.
type handoverRun struct {
	e   *chaosEnv
	rep *history.Report // checkLease of both shares

	sender        *redlock.Lock
	receiverShare string // the receiver's share's token in the history

	receiverErr        error // the receiver's Err() just before its release
	receiverReleaseErr error
	receiverWrites     int            // increments the receiver tried
	receiverAccepted   int            // and the store accepted
	killed             []int          // the nodes killed and restarted
	roundWithoutSender bool           // the receiver's watchdog extended after the sender's pause
	onRestarted        map[int]string // the lock key after the restart, on the killed nodes the Resume extended it on
	refused            int            // rivals' failed acquisitions between the sender's loss and the receiver's release
	staleAccepted      bool           // the sender's write after its pause was accepted
	senderReleaseErr   error
}

// handover runs the scenario of row 18; with unconditional, the sender's
// Client runs the earlier extend script (unconditionalExtendNode). It stops
// the test only when the scenario cannot go on; what the row judges is
// returned.
func handover(t *testing.T, row string, unconditional bool) *handoverRun {
	e := newEnv(t, 5, memFenced, nil)
	const name = "r18"
	r := &handoverRun{e: e}
	rivals := e.clients(3)
	var sender *sim
	if unconditional {
		sender = e.clientOver("sender", &e.opts, unconditionalExtendNode)
	} else {
		sender = e.client("sender")
	}
	// The receiver's Client makes one round of op EventAcquire: its Resume.
	// Its nodes' answers say where the Resume extended the key.
	var (
		mu      sync.Mutex
		answers = map[int]error{} // protected by mu
	)
	ropts := e.opts
	ropts.OnEvent = func(_ context.Context, ev redlock.Event) {
		if ev.Kind == redlock.EventNode && ev.Op == redlock.EventAcquire {
			mu.Lock()
			answers[ev.Node] = ev.Err
			mu.Unlock()
		}
	}
	receiver := e.clientWith("receiver", &ropts)
	// Connections open and scripts loaded: the rounds of the hand-over
	// reach every node in time, as they would in a process that had been
	// running.
	sender.warmUp(name + "-warm-up")
	receiver.warmUp(name + "-warm-up")

	ctx, stopRivals := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stopRivals(); wg.Wait() }) // before the clients close
	for _, c := range rivals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, name, name, time.Second, time.Second, 20*time.Millisecond, nil)
		}()
	}

	ls := mustAcquire(t, sender, name, handoverSenderTTL, 10*time.Second, &redlock.AcquireOptions{AutoExtend: true}, "rivals contending")
	r.sender = ls
	if !sender.increment(ls, name) {
		t.Errorf("row %q: the sender's write before the hand-over rejected; want accepted", row)
	}
	v, err := sender.read(ls, name) // for its write after the pause
	if err != nil {
		t.Fatalf("fenced read of the sender: %v", err)
	}

	// The hand-over, as text, as between two processes.
	text, err := ls.Handle().MarshalText()
	if err != nil {
		t.Fatalf("Handle().MarshalText() = %v", err)
	}
	h, err := redlock.ParseHandle(string(text))
	if err != nil {
		t.Fatalf("ParseHandle(%q) = %v", text, err)
	}
	lr, err := receiver.resume(within(t, 5*time.Second), h, handoverReceiverTTL, &redlock.ResumeOptions{AutoExtend: true})
	if err != nil {
		t.Fatalf("Resume by the receiver = %v; want the lock", err)
	}
	resumed, resumedUntil := e.rec.Now(), lr.ValidUntil() // the key lasts on the nodes at least as long
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.Acquire && ev.Client == receiver.name {
			r.receiverShare = ev.Token
		}
	}
	if r.receiverShare == "" || r.receiverShare == ls.Token() {
		t.Fatalf("the receiver's share is recorded under token %q; want a token of its own (recordShares)", r.receiverShare)
	}
	// Where the lease now lasts the receiver's TTL: the nodes whose answer to
	// the Resume (late ones too) was no failure and that hold the lease's
	// value. Those the sender's Acquire or the Resume missed keep at most the
	// sender's TTL, and lose the key once the sender pauses.
	waitFor(2*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(answers) == e.cl.Len() })
	lockKey, _ := e.directKeys(name)
	var on []int
	for i := 0; i < e.cl.Len(); i++ {
		mu.Lock()
		err, ok := answers[i]
		mu.Unlock()
		val := e.cl.Client(i).Get(within(t, 5*time.Second), lockKey).Val()
		if ok && err == nil && strings.HasPrefix(val, ls.Token()+".") {
			on = append(on, i)
		}
	}
	// Kill two nodes, those without the lease first: a quorum that holds
	// it stays up, so the receiver's share must last.
	for i := e.cl.Len() - 1; i >= 0 && len(r.killed) < 2; i-- {
		if !slices.Contains(on, i) {
			r.killed = append(r.killed, i)
		}
	}
	for i := e.cl.Len() - 1; i >= 0 && len(r.killed) < 2; i-- {
		if slices.Contains(on, i) {
			r.killed = append(r.killed, i)
		}
	}
	t.Logf("the lease lasts the receiver's TTL on nodes %v after the hand-over; nodes %v are killed and restarted", on, r.killed)
	r.receiverWrites++
	if receiver.increment(lr, name) {
		r.receiverAccepted++
	}

	// The sender's watchdog extends once more (with the old script, that
	// cuts the key to its TTL), then its process pauses.
	extended := func() bool {
		return slices.ContainsFunc(e.rec.Events(), func(ev history.Event) bool {
			return ev.Kind == history.Extend && ev.Token == ls.Token() && ev.Detail == "" && ev.Start > resumed
		})
	}
	if !waitFor(2*time.Second, extended) {
		t.Fatalf("the sender's watchdog made no extend round within 2s of the hand-over; want one every %v", handoverSenderTTL/3)
	}
	e.testFault(history.FaultProcessPause, -1, sender.name, true)
	e.down(sender, 0, 1, 2, 3, 4)
	for _, i := range r.killed {
		e.mustFault(i, "", "kill", func() error { return e.cl.Kill(i) })
	}
	wantLost(t, row, ls, handoverSenderTTL+time.Second)
	lost := e.rec.Now()

	// The receiver's first watchdog round comes with two nodes down and
	// the sender paused: the three others must extend.
	until := lr.ValidUntil()
	waitFor(handoverReceiverTTL/3+2*time.Second, func() bool {
		return lr.ValidUntil().After(until) || lr.Err() != nil
	})
	r.roundWithoutSender = lr.ValidUntil().After(until)
	for _, i := range r.killed {
		e.mustHeal(i, "", "kill", func() error { return e.cl.Restart(i) })
	}
	r.onRestarted = map[int]string{}
	for _, i := range r.killed {
		val := e.cl.Client(i).Get(within(t, 5*time.Second), lockKey).Val()
		if slices.Contains(on, i) && time.Now().Before(resumedUntil) {
			r.onRestarted[i] = val
		}
	}
	r.receiverWrites++
	if receiver.increment(lr, name) {
		r.receiverAccepted++
	}
	time.Sleep(300 * time.Millisecond) // rivals try the restarted nodes
	r.receiverErr = lr.Err()
	released := e.rec.Now()
	r.receiverReleaseErr = receiver.release(lr)

	// A rival takes the lock and writes; then the sender's pause ends.
	rivalWrote := func() bool {
		return slices.ContainsFunc(e.rec.Events(), func(ev history.Event) bool {
			return ev.Kind == history.Write && ev.Accepted && ev.Fence > ls.Fence()
		})
	}
	if !waitFor(5*time.Second, rivalWrote) {
		t.Errorf("row %q: no rival write with a fence above %d within 5s of the receiver's release; want one (liveness)", row, ls.Fence())
	}
	e.healNet(sender, "down", 0, 1, 2, 3, 4)
	e.testFault(history.FaultProcessPause, -1, sender.name, false)
	r.staleAccepted = sender.write(ls, name, v+1)
	r.senderReleaseErr = sender.release(ls)

	stopRivals()
	wg.Wait()
	for _, ev := range e.rec.Events() {
		if ev.Kind == history.AcquireFail && ev.Lock == name && ev.At > lost && ev.At < released &&
			slices.ContainsFunc(rivals, func(c *sim) bool { return c.name == ev.Client }) {
			r.refused++
		}
	}
	r.rep = e.checkLease(ls.Token(), r.receiverShare)
	return r
}

// checkLease is check for a history in which the holds of the tokens
// shares (two or more) are the shares of one lease (see recordShares).
// Check takes holds of different tokens for different owners, so two
// shares, which overlap by design and carry one fence, would show as an
// overlap, a fence tie and fences out of order. checkLease checks one view
// of the history per share, without the lock events of the other shares
// (every write stays: the store saw them all), and keeps from each view
// the overlaps, fence and loss violations that involve its share (from the
// first view, all of them): each share is held to mutual exclusion, fence
// order and honest loss against every other hold, with its own deadline.
// The counts and the store's invariants are the whole history's.
func (e *chaosEnv) checkLease(shares ...string) *history.Report {
	e.t.Helper()
	opts := e.checkOptions()
	events := e.rec.Events()
	rep := history.Check(events, opts)
	rep.Overlaps, rep.FenceOrder, rep.FenceTies, rep.LateLoss = nil, nil, nil, nil
	for i, share := range shares {
		view := slices.DeleteFunc(slices.Clone(events), func(ev history.Event) bool {
			switch ev.Kind {
			case history.Acquire, history.AcquireFail, history.Extend, history.Release, history.Lost:
				return ev.Token != share && slices.Contains(shares, ev.Token)
			}
			return false
		})
		vr := history.Check(view, opts)
		keep := func(vs []history.Violation) []history.Violation {
			if i == 0 {
				return vs
			}
			return slices.DeleteFunc(vs, func(v history.Violation) bool { return !involves(v, share) })
		}
		rep.Overlaps = append(rep.Overlaps, keep(vr.Overlaps)...)
		rep.FenceOrder = append(rep.FenceOrder, keep(vr.FenceOrder)...)
		rep.FenceTies = append(rep.FenceTies, keep(vr.FenceTies)...)
		rep.LateLoss = append(rep.LateLoss, keep(vr.LateLoss)...)
	}
	return rep
}

// involves reports whether one of v's events is of the hold token.
func involves(v history.Violation, token string) bool {
	return slices.ContainsFunc(v.Events, func(ev history.Event) bool { return ev.Token == token })
}

// unconditionalExtendSrc is extend.lua as it was before a plain extend
// only moved a key's expiry later: it sets the key's TTL to the caller's,
// cutting short what another share of the lease gave it.
const unconditionalExtendSrc = `if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then
  return 0
end
local cur = redis.call('GET', KEYS[1])
if string.sub(cur, 1, #ARGV[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`

var (
	extendHash          = redis.NewScript(redlock.ExtendSource).Hash()
	unconditionalExtend = redis.NewScript(unconditionalExtendSrc)
)

// scriptSwapNode is a node that runs every script as it is, but the one
// with hash (source src) as with: a control's earlier form of a script. It
// has no Process or Pipeline, so the Client sends each script through
// EvalSha (and Eval after NOSCRIPT); it forwards Subscribe, so that waiting
// works as usual.
type scriptSwapNode struct {
	redis.Scripter
	rdb       redis.UniversalClient
	hash, src string
	with      *redis.Script
}

// unconditionalExtendNode wraps rdb in a node that runs the extend script
// as unconditionalExtendSrc, for clientOver.
func unconditionalExtendNode(rdb redis.UniversalClient) redlock.Node {
	return scriptSwapNode{Scripter: rdb, rdb: rdb, hash: extendHash, src: redlock.ExtendSource, with: unconditionalExtend}
}

func (n scriptSwapNode) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == n.hash {
		return n.with.Run(ctx, n.Scripter, keys, args...)
	}
	return n.Scripter.EvalSha(ctx, sha, keys, args...)
}

func (n scriptSwapNode) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if script == n.src {
		return n.with.Run(ctx, n.Scripter, keys, args...)
	}
	return n.Scripter.Eval(ctx, script, keys, args...)
}

func (n scriptSwapNode) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return n.rdb.Subscribe(ctx, channels...)
}
