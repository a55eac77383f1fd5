package redlock

import (
	"context"
	"sync"
	"sync/atomic"
)

// call is one Acquire call (or Resume, Reenter) as its lock will know it:
// its lease, its local turn, and what it shares with the answers that reach
// it after the attempt that asked was decided (late answers). A late grant
// is our key on that node; so may be a late error, since the script may
// have run before the reply was lost, or may still run, however late. Such
// a key holds that attempt's own value, so deleting it with that exact
// value never touches another attempt's key, nor what the lease counts
// (the won attempt's value: lease.counted). Who deletes it:
//   - while its attempt is being decided: it is recorded, and cleaned up
//     with the attempt if the attempt fails;
//   - once its attempt won, while the lock is held: it is the lease's own
//     value, which its extend counts and its release deletes; and after
//     the lock was lost too: another share of the lease (a resumed handle)
//     may count it, so it is left to its TTL;
//   - otherwise (its attempt failed, or the lock was released): at once,
//     by an exact cleanup sent after the answer came (so after the acquire
//     ran: a cleanup sent earlier may overtake it on the network).
type call struct {
	ls *lease
	// ctx is the context of the Acquire (Resume, Reenter) call: its lock's
	// events that no call causes are reported with its values, without
	// its cancellation (see Lock.ownContext).
	ctx       context.Context
	leaveTurn func() // hands this client's turn for the name to the next Acquire (see turns); idempotent
	// retry, when the call may wait, is signalled (buffered 1) when a late
	// answer shows that an attempt of the call took the key on a node after
	// the attempt had failed: the key was freed meanwhile (a release found
	// no entry of the call there to grant it to), and the call's next
	// attempt may win at once, where it would sleep until its next poll.
	retry chan struct{}
	// releaseQueued is set once a release of the call's lock is queued on
	// every node's sender (see lateCovered).
	releaseQueued atomic.Bool

	mu      sync.Mutex // protects the fields below
	attempt int        // the attempt being decided, or the one that won
	open    bool       // attempt is being decided
	held    bool       // attempt won and its lock has not ended, or was lost (not released)
	late    []int      // nodes of attempt that answered late while it was open
	fences  []uint64   // a set's fence per name, once it won (multi.go)
}

// newCall returns the call of ls made by a call with context ctx, with no
// local turn to leave.
func newCall(ctx context.Context, ls *lease) *call {
	return &call{ls: ls, ctx: ctx, leaveTurn: func() {}}
}

// begin marks attempt as being decided.
func (cl *call) begin(attempt int) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.attempt, cl.open, cl.late = attempt, true, nil
}

// lateAnswer records a late answer of attempt from node and reports whether
// the caller must clean it up now.
func (cl *call) lateAnswer(attempt, node int) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case attempt == cl.attempt && cl.open:
		cl.late = append(cl.late, node)
		return false
	case attempt == cl.attempt && cl.held:
		return false
	}
	return true
}

// lateWin tells the waiting call that a late answer took the key (see
// retry).
func (cl *call) lateWin() {
	if cl.retry != nil {
		poke(cl.retry)
	}
}

// fail closes the current attempt as failed and returns the late answers
// recorded for it, which the caller must clean up. Later ones clean up
// themselves.
func (cl *call) fail() []int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	late := cl.late
	cl.open, cl.late = false, nil
	return late
}

// win closes the current attempt as won: its late answers belong to the lock.
func (cl *call) win() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.open, cl.held, cl.late = false, true, nil
}

// winGrant marks the call as won from the releases' grants (takeGrant),
// not by an attempt: late answers of its attempts clean up themselves.
func (cl *call) winGrant() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.attempt, cl.open, cl.held, cl.late = 0, false, true, nil
}

// released marks the call's lock as released: late answers clean up
// after themselves.
func (cl *call) released() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.held = false
}

// poke sends on ch, buffered 1, unless a send is pending already: a wake-up
// or kick that is not yet taken stands for this one too.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
