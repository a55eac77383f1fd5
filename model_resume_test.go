package redlock

// Resume in the protocol model (docs/model.md, "Resume: two shares of one
// lease"): a holder's handle is resumed (Client.Resume of a plain lock), a
// second share of the same lease with its own TTL and its own local
// deadline, counted from its own round. Either share may extend and
// release; property 3 counts every share as a holder.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Share phases.
const (
	shNone     uint8 = iota // the handle has not been resumed
	shResuming              // the resume round is open
	shHeld                  // resumed (believed while now < deadline)
	shDone                  // the resume failed, or the share was released or lost
)

// mshare is the resumed share of a client's lease: the same key and token
// (the call's), its own TTL, rounds and deadline. Its rounds are the plain
// extend script (kShareReq), the resume's as every extend's: Resume of a
// plain lock is an extend round with the share's TTL, and leaves nothing
// behind when it fails.
type mshare struct {
	dl       int32 // local deadline in ms of model time
	start    int16 // tick the current round began
	rs       [mNodes]uint8
	phase    uint8
	ttl      uint8 // its TTL in ticks, for the resume and every extend
	extends  uint8 // extends sent; a round's messages carry it (0: the resume)
	extRound bool  // an extend round is open (phase shHeld)
	won      uint8 // the attempt whose value the lease won (0: the grant path), from the handle
}

// open reports whether a round of the share waits for answers.
func (sh *mshare) open() bool { return sh.phase == shResuming || sh.extRound }

// hash folds the share into a state's hash, its times relative to now
// and clamped where they no longer matter (the per-node slots are in the
// nodes' signatures).
func (sh *mshare) hash(now int16) uint64 {
	x := uint64(sh.phase) | uint64(sh.ttl)<<8 | uint64(sh.extends)<<16 | uint64(sh.won)<<24
	if sh.extRound {
		x |= 1 << 32
	}
	var y uint64
	if sh.open() {
		y = uint64(uint16(min(now-sh.start, int16(sh.ttl))))
	}
	if sh.phase == shHeld {
		y |= uint64(uint32(max(sh.dl-int32(now)*int32(tick/time.Millisecond), 0))) << 16
	}
	return mix(x, y)
}

// isShare reports whether a message kind belongs to the resumed share.
func isShare(kind uint8) bool { return kind == kShareReq || kind == kShareRep }

// shareBelieves reports whether client c's resumed share believes it holds
// the lock now.
func (w *world) shareBelieves(s *mstate, c int) bool {
	sh := &s.cl[c].sh
	return sh.phase == shHeld && s.nowMs() < sh.dl
}

// extendStep is the world's extend script, for a lease of call tok that
// won with attempt att (0: through the grant path).
func (w *world) extendStep(n mnode, now, ttl int16, tok, att uint8) (mnode, bool) {
	switch {
	case w.v.oldExtend:
		return nodeExtendOld(n, now, ttl, tok)
	case w.v.anyAttemptExtend:
		return nodeExtendAnyAttempt(n, now, ttl, tok)
	}
	return nodeExtend(n, now, ttl, mval{tok, att})
}

// shareActions appends the share actions of client c enabled in s: resume
// the handle (once, while the call's lock is held, valid or not: the
// handle may be sent late, and the nodes decide), then extend and release.
func (w *world) shareActions(s *mstate, c int, out []mact) []mact {
	cl := &s.cl[c]
	a := uint8(c)
	switch cl.sh.phase {
	case shNone:
		if cl.phase == phHeld {
			for _, ttl := range w.resumeTTLs {
				out = append(out, mact{aResume, a, uint8(ttl)})
			}
		}
	case shHeld:
		if !cl.sh.extRound {
			if w.shareBelieves(s, c) && int(cl.sh.extends) < w.extends {
				out = append(out, mact{aShareExtend, a, 0})
			}
			if !w.noRelease {
				out = append(out, mact{aShareRelease, a, 0})
			}
		}
	}
	return out
}

// resume starts the resume round of client c's handle with TTL ttl ticks.
func (st *step) resume(c, ttl uint8) {
	sh := &st.s.cl[c].sh
	*sh = mshare{phase: shResuming, ttl: ttl, start: st.s.now, won: st.s.cl[c].holdAtt}
	st.logf("c%d's handle is resumed with TTL %v: share extend sent to all nodes", c, time.Duration(ttl)*tick)
	st.sendShareRound(c)
}

// shareExtend starts an extend round of client c's resumed share.
func (st *step) shareExtend(c uint8) {
	sh := &st.s.cl[c].sh
	sh.extends++
	sh.extRound, sh.start, sh.rs = true, st.s.now, [mNodes]uint8{}
	st.logf("c%d's resumed share extends: share extend sent to all nodes", c)
	st.sendShareRound(c)
}

func (st *step) sendShareRound(c uint8) {
	sh := &st.s.cl[c].sh
	for n := 0; n < st.w.nodes; n++ {
		st.s.addMsg(packMsg(kShareReq, mLive, c, uint8(n), sh.extends, sh.ttl))
	}
}

// deliverShare runs a share's extend request at its node.
func (st *step) deliverShare(m mmsg) {
	s, w := st.s, st.w
	c, n := m.client(), m.node()
	nd := &s.nodes[n]
	before := nd.exp
	var ok bool
	*nd, ok = w.extendStep(*nd, s.now, int16(m.val()), c+1, s.cl[c].sh.won)
	if ok {
		st.logf("c%d's share extend (TTL %v) delivered at n%d (key %s, expiry t=%d) → extended, expiry t=%d", c, time.Duration(m.val())*tick, n, w.show(nd.key), before, nd.exp)
	} else {
		st.logf("c%d's share extend delivered at n%d (key %s) → not ours", c, n, w.show(nd.key))
	}
	if m.mode() != mOrphan {
		r := uint8(0)
		if ok {
			r = 1
		}
		s.addMsg(packMsg(kShareRep, m.mode(), c, n, m.att(), r))
	}
}

// answerShare gives the resumed share of m's client the answer r of m's
// node, and decides its round as Resume and Lock.Extend do: a quorum that
// extended in time moves the deadline to the round's start + validity.
func (st *step) answerShare(m mmsg, r uint8) {
	s, w := st.s, st.w
	c, n := m.client(), m.node()
	sh := &s.cl[c].sh
	if !sh.open() {
		panic(fmt.Sprintf("model: an answer for c%d's share, which has no round open", c))
	}
	sh.rs[n] = r
	ok, failed, notOurs := 0, 0, 0
	for i := 0; i < w.nodes; i++ {
		switch sh.rs[i] {
		case rsOK:
			ok++
		case rsRefused:
			failed++
			notOurs++
		case rsError:
			failed++
		}
	}
	if !decided(ok, failed, w.nodes, w.quorum()) {
		return
	}
	st.giveUpRounds(c, isShare)
	ttl := time.Duration(sh.ttl) * tick
	v := validity(ttl, time.Duration(s.now-sh.start)*tick, w.factor)
	until := int32(sh.start)*int32(tick/time.Millisecond) + int32(v/time.Millisecond)
	timely := v > 0 && until > s.nowMs()
	if sh.phase == shResuming {
		if ok >= w.quorum() && timely {
			sh.phase, sh.dl = shHeld, until
			st.logf(" → c%d's resumed share HOLDS the lock, valid until %dms", c, until)
			return
		}
		sh.phase = shDone
		st.logf(" → the resume failed (%d extended, validity %v): nothing left behind", ok, v)
		return
	}
	sh.extRound = false
	if ok >= w.quorum() && timely && w.shareBelieves(s, int(c)) {
		sh.dl = until
		st.logf(" → the share's extend succeeded, valid until %dms", until)
		return
	}
	sh.dl = min(sh.dl, until)
	if notOurs >= w.quorum() || w.v.extendFailLoses {
		sh.phase = shDone
		st.logf(" → the share's extend failed: the share is lost, release sent to all nodes")
		st.sendRelease(c)
		return
	}
	st.logf(" → the share's extend failed, valid until %dms", sh.dl)
}

// lose ends client c's own lock as lost and sends its release to every
// node. Its resumed share is another process: it is not told.
func (st *step) lose(c uint8) {
	cl := &st.s.cl[c]
	var q uint8
	if st.w.v.grantsToAny {
		q = cl.queued
	}
	*cl = mclient{phase: phDone, att: cl.att, queued: q, sh: cl.sh}
	st.logf(", release sent to all nodes")
	st.sendRelease(c)
}

// coverShares counts s in the resume coverage of res.
func (w *world) coverShares(s *mstate, res *modelResult) {
	for c := 0; c < w.clients; c++ {
		if w.shareBelieves(s, c) {
			res.shareHolds++
			if w.believes(s, c) {
				res.bothShares++
			}
			break
		}
	}
}

// resumeTTLs are the TTLs a handle is resumed with in the worlds checked:
// shorter than the lock's (3 ticks), which the old extend let cut the
// lock's keys short, and longer, which the lock's own extend then cut.
var resumeTTLs = []int16{1, 5}

// withResume returns w with resume: every holder's handle may be resumed
// once, with each of resumeTTLs.
func withResume(w world) world {
	w.resumeTTLs = resumeTTLs
	return w
}

// TestModelShareNodeSteps pins the node steps' expiry: it only moves later.
func TestModelShareNodeSteps(t *testing.T) {
	const now, ttl = 5, 3
	mine := func(v mval, exp int16) mnode { return mnode{key: v, exp: exp, ctr: 4} }
	cases := []struct {
		name    string
		step    func(mnode) (mnode, bool)
		n       mnode
		ok      bool
		wantExp int16
	}{
		{"extend, key shorter than the ttl: to now+ttl", func(n mnode) (mnode, bool) { return nodeExtend(n, now, ttl, mval{1, 1}) }, mine(mval{1, 1}, 6), true, 8},
		{"extend, key as long as the ttl: left", func(n mnode) (mnode, bool) { return nodeExtend(n, now, ttl, mval{1, 1}) }, mine(mval{1, 1}, 8), true, 8},
		{"extend, key longer than the ttl: left", func(n mnode) (mnode, bool) { return nodeExtend(n, now, ttl, mval{1, 1}) }, mine(mval{1, 1}, 9), true, 9},
		{"old extend, key longer than the ttl: cut to now+ttl", func(n mnode) (mnode, bool) { return nodeExtendOld(n, now, ttl, 1) }, mine(mval{1, 1}, 9), true, 8},
		{"old extend, another call's key: not ours", func(n mnode) (mnode, bool) { return nodeExtendOld(n, now, ttl, 1) }, mine(mval{2, 1}, 9), false, 9},
		{"acquire, same value, key longer: left", func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquire(n, now, ttl, mval{1, 2})
			return n, ok
		}, mine(mval{1, 2}, 9), true, 9},
		{"acquire over an earlier attempt, key longer: kept", func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquire(n, now, ttl, mval{1, 2})
			return n, ok
		}, mine(mval{1, 1}, 9), true, 9},
		{"acquire over an earlier attempt, key shorter: to now+ttl", func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquire(n, now, ttl, mval{1, 2})
			return n, ok
		}, mine(mval{1, 1}, 6), true, 8},
		{"acquire keeping the call's grant, key longer: left", func(n mnode) (mnode, bool) {
			n, ok, _ := nodeAcquireKeep(n, now, ttl, mval{1, 2})
			return n, ok
		}, mine(mval{1, 0}, 9), true, 9},
	}
	for _, c := range cases {
		n, ok := c.step(c.n)
		if ok != c.ok || n.exp != c.wantExp {
			t.Errorf("%s: key %v expiring at %d, now %d, ttl %d: ok %v, expiry %d; want ok %v, expiry %d",
				c.name, c.n.key, c.n.exp, now, ttl, ok, n.exp, c.ok, c.wantExp)
		}
	}
}

// TestModelControlOldExtend: the plain extend script before it only moved
// the expiry later (the key's expiry set to now+ttl, whatever it was) lets
// one share cut the key short of the other share's deadline, and a rival
// acquires while that share is still valid. The world is the resume world
// of modelBounds; the check as stated (mutexOnly) shows the rival holding.
// Under -long the same in 3 nodes.
func TestModelControlOldExtend(t *testing.T) {
	v := newProtocol
	v.oldExtend = true
	w := withResume(modelWorld(v, noFault, 2, 1, 1, 1, 1))
	requireFinds(t, modelRun{w: w, props: pAll}, 3)
	w.mutexOnly = true
	requireTrace(t, requireFinds(t, modelRun{w: w, props: pAll}, 3), "c0 and c1 both believe", "resumed with TTL 100ms", "expiry t=3) → extended, expiry t=1")
	// A resume with the longer TTL only: the lock's own extend cuts the
	// resumed share short (the watchdog's case).
	w.resumeTTLs = []int16{5}
	requireTrace(t, requireFinds(t, modelRun{w: w, props: pAll}, 3), "c0's resumed share and c1 both believe", "c0 extends")
	if *modelLong {
		w = withResume(modelWorld(v, noFault, 2, 3, 1, 1, 1))
		w.mutexOnly = true
		requireFinds(t, modelRun{w: w, props: pAll}, 3)
	}
}

// requireTrace fails the test unless the violation res found, or its
// trace, says each of what: the checker found the bug the test is about.
func requireTrace(t *testing.T, res modelResult, what ...string) {
	t.Helper()
	for _, s := range what {
		if !strings.Contains(res.bad.why, s) && !strings.Contains(res.trace, s) {
			t.Errorf("the counterexample does not show %q; it is not the one this test is about:\n%s\n%s", s, res.bad.why, res.trace)
		}
	}
}

// TestModelResumeGaps pins three ways the library lets one share of a
// lease take the key from under another, found by the model with the
// extend fixed (issue 19; docs/model.md, "Resume"). Each is a test that
// fails unless the checker finds its violation of property 3 and trace;
// once the library closes a gap, its case stays as the control of the fix.
// All three delete keys of the call that a share counts: the resumed
// share's extend (and the lock's own) matches every value "T.*" of the
// call, while an attempt's cleanup deletes the exact value "T.k", and a
// lost lock releases every "T.*".
func TestModelResumeGaps(t *testing.T) {
	t.Run("late answer cleaned up after the lock ended", func(t *testing.T) {
		// The winning attempt's late answer comes after the lock's
		// deadline: the library cleaned it up, deleting the key there,
		// which the resumed share extended and counts. 3 nodes: 16 steps.
		// The library now leaves it to its TTL (call.go); the variant is
		// the control.
		v := newProtocol
		v.lateCleanupAfterLoss = true
		w := withResume(modelWorld(v, noFault, 1, 3, 1, 0, 0))
		res := requireFinds(t, modelRun{w: w, props: pAll}, 3)
		requireTrace(t, res, "c0's resumed share believes", "late: attempt 1 failed or the lock ended: cleanup sent", "cleanup of T1.1 delivered at n2 → deleted")
	})
	t.Run("failed extend releases the lease", func(t *testing.T) {
		// Lock.Extend ended a lock whose extend failed and released its
		// keys (Lock.lose): the keys of every share. The library now
		// releases only when a majority answered "not ours", as the
		// model's extend does; the variant is the control.
		v := newProtocol
		v.extendFailLoses = true
		w := withResume(modelWorld(v, noFault, 2, 1, 1, 1, 1))
		w.mutexOnly = true
		res := requireFinds(t, modelRun{w: w, props: pAll}, 3)
		requireTrace(t, res, "c0 and c1 both believe", "the share's extend failed: the share is lost, release sent", "release delivered at n0 (key T1.1) → deleted")
	})
	t.Run("failed attempt's delayed acquire", func(t *testing.T) {
		// Attempt 1 timed out and failed (its cleanup sent); attempt 2
		// won; the delayed acquire of attempt 1 then sets "T.1" on a node
		// where the lease's key expired, the resume extends it, and the
		// cleanup deletes it. 1 node, message faults: 13 steps. Extend
		// now matches the won value only (TestModelStrayAcquire); the
		// variant is the control.
		v := newProtocol
		v.anyAttemptExtend = true
		w := withResume(modelWorld(v, honest, 1, 1, 2, 1, 1))
		res := requireFinds(t, modelRun{w: w, props: pAll}, 3)
		requireTrace(t, res, "c0's resumed share believes", "acquire T1.1 delivered at n0 (key was none)", "share extend (TTL 500ms) delivered at n0 (key T1.1")
	})
}

// TestModelStrayAcquire checks the rule of docs/design.md, "What a lease
// counts": a lease counts only the value it won (and the call's grant), so
// a failed attempt's delayed acquire, landing after later requests of the
// same call, sets a stray "T.j" that no extend counts and that its exact
// cleanup may delete. In the world where the any-attempt extend let a
// resumed share hold on a stray value (TestModelResumeGaps), every state is
// checked; the same world with the old extend is the control.
func TestModelStrayAcquire(t *testing.T) {
	w := withResume(modelWorld(newProtocol, honest, 1, 1, 2, 1, 1))
	res := requireHolds(t, modelRun{w: w, props: pAll})
	if res.shareHolds == 0 {
		t.Errorf("no state in which the resumed share holds: the world checks nothing of resume")
	}
	v := newProtocol
	v.anyAttemptExtend = true
	requireTrace(t, requireFinds(t, modelRun{w: withResume(modelWorld(v, honest, 1, 1, 2, 1, 1)), props: pAll}, 3),
		"acquire T1.1 delivered at n0 (key was none)", "share extend (TTL 500ms) delivered at n0 (key T1.1")
	if !*modelLong {
		return
	}
	// Under -long, the lock's own extend in 3 nodes (issue 28's schedule,
	// no resume): attempt 1 sets "T1.1" on n0 and fails on the others'
	// timeouts, its answer from n0 still on its way; attempt 2 wins on n1
	// and n2; the any-attempt extend counts n0's "T1.1", n2's key expires,
	// and the late answer's exact cleanup may delete n0's: the lock
	// believes with one node. The control finds it in 17 steps (2.9M
	// states); the protocol holds in the same world to that depth (about
	// 35s each).
	requireTrace(t, requireFinds(t, modelRun{w: modelWorld(v, honest, 1, 3, 2, 1, 0), props: pAll, depth: 17}, 3),
		"c0 attempt 1: acquire T1.1 delivered at n0", "c0 extend delivered at n0 (key T1.1) → extended")
	requireHolds(t, modelRun{w: modelWorld(newProtocol, honest, 1, 3, 2, 1, 0), props: pAll, depth: 17})
}
