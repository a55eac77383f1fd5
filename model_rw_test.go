package redlock

// The read-write model: 2 readers and a writer on 3 nodes, every
// interleaving of their requests (a request may land any time after it was
// sent, after requests sent later, or after its round timed out: then its
// answer is late, and a late success is cleaned up), message loss, and
// time in whole units. A reply reaches its client with the request's run
// (a reply's own delay is a request landing later, or a timeout). It checks, after every step:
//
//	1. an exclusive hold is never believed valid while another hold is;
//	2. each reader's lease is its own: a step that is not one of reader
//	   Y's own requests never moves Y's live expiry on a node earlier, and
//	   the marker never expires before a live reader.
//
// Each broken node (rwVariant) is a control the checker must catch. The
// queue is not modelled (every call barges): the order decides only who
// tries first, never what a node grants.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

const (
	rwNodes   = 3
	rwClients = rwReaders + 1 // the writer is the last
	rwDrift   = 1
	rwMsgs    = 30
)

// rwTTLs are each client's TTL: readers with different TTLs, so that a
// shared TTL would shorten one of them.
var rwTTLs = [rwClients]uint8{4, 2, 3}

// rwMaxAttempts are each client's attempts: two for reader r0 (a late
// cleanup of one attempt meets the other), one for r1 and the writer.
var rwMaxAttempts = [rwClients]uint8{2, 1, 1}

// rwMaxExtends are each client's extends: r0's only (one TTL shared by
// the readers shows at r1's acquire already).
var rwMaxExtends = [rwClients]uint8{1, 0, 0}

// message kinds
const (
	rkAcq uint8 = iota
	rkAcqRep
	rkExt
	rkExtRep
	rkRel
	rkClean
)

var rwKindNames = [...]string{"acquire", "acquire reply", "extend", "extend reply", "release", "cleanup"}

// rwMsg is a message in flight. live: its round still waits for it (an
// orphan's reply is dropped, but a late successful acquire is cleaned up).
type rwMsg struct{ kind, c, n, att, ok, live uint8 }

const (
	rpIdle uint8 = iota
	rpAcq
	rpFailed
	rpHeld
	rpDone
)

type rwClient struct {
	phase    uint8
	att      uint8 // the current (or winning) attempt
	start    uint8 // the round's start
	okm, anm uint8 // nodes that answered ok / answered, this round
	deadline uint8
	ext      uint8 // extends made
	extOpen  bool
	extStart uint8
}

type rwState struct {
	now   uint8
	nodes [rwNodes]rwNode
	cl    [rwClients]rwClient
	nmsg  uint8
	msgs  [rwMsgs]rwMsg
}

func (s *rwState) add(m rwMsg) {
	if int(s.nmsg) == rwMsgs {
		panic("model: too many messages in flight; raise rwMsgs")
	}
	i := int(s.nmsg)
	for i > 0 && rwLess(m, s.msgs[i-1]) {
		s.msgs[i] = s.msgs[i-1]
		i--
	}
	s.msgs[i] = m
	s.nmsg++
}

// rwLess orders messages, so that a state's bag of them has one form.
func rwLess(a, b rwMsg) bool {
	return slices.Compare([]uint8{a.kind, a.c, a.n, a.att, a.ok, a.live}, []uint8{b.kind, b.c, b.n, b.att, b.ok, b.live}) < 0
}

func (s *rwState) del(i int) {
	copy(s.msgs[i:s.nmsg], s.msgs[i+1:s.nmsg])
	s.nmsg--
	s.msgs[s.nmsg] = rwMsg{}
}

type rwWorld struct {
	v        rwVariant
	loss     bool
	tmax     uint8
	timeouts uint8 // the clients (bits) whose rounds may time out
	only1    bool  // check property 1 only (a control of exclusion)
}

func (w *rwWorld) believes(s *rwState, c int) bool {
	return s.cl[c].phase == rpHeld && s.now < s.cl[c].deadline
}

type rwAct struct{ kind, arg uint8 }

const (
	raBegin uint8 = iota
	raRetry
	raExtend
	raRelease
	raDeliver
	raLose
	raTimeout
	raTick
)

func (w *rwWorld) actions(s *rwState) []rwAct {
	var out []rwAct
	for c := range rwClients {
		cl := &s.cl[c]
		a := uint8(c)
		switch cl.phase {
		case rpIdle:
			out = append(out, rwAct{raBegin, a})
		case rpFailed:
			if cl.att < rwMaxAttempts[c] {
				out = append(out, rwAct{raRetry, a})
			}
		case rpAcq:
			if w.timeouts&(1<<c) != 0 {
				out = append(out, rwAct{raTimeout, a})
			}
		case rpHeld:
			if cl.extOpen {
				if w.timeouts&(1<<c) != 0 {
					out = append(out, rwAct{raTimeout, a})
				}
			} else {
				if cl.ext < rwMaxExtends[c] && w.believes(s, c) {
					out = append(out, rwAct{raExtend, a})
				}
				out = append(out, rwAct{raRelease, a})
			}
		}
	}
	for i := 0; i < int(s.nmsg); i++ {
		if i > 0 && s.msgs[i] == s.msgs[i-1] {
			continue
		}
		out = append(out, rwAct{raDeliver, uint8(i)})
		if w.loss {
			out = append(out, rwAct{raLose, uint8(i)})
		}
	}
	if s.now < w.tmax {
		out = append(out, rwAct{raTick, 0})
	}
	return out
}

// rwStep is one step's log and first violation.
type rwStep struct {
	w   *rwWorld
	s   *rwState
	log *strings.Builder
	bad string
}

func (st *rwStep) logf(format string, args ...any) {
	if st.log != nil {
		fmt.Fprintf(st.log, format, args...)
	}
}

func rwWho(c uint8) string {
	if int(c) < rwReaders {
		return fmt.Sprintf("reader r%d", c)
	}
	return "writer w"
}

func (st *rwStep) send(kind, c, att uint8, live bool) {
	for n := range rwNodes {
		st.s.add(rwMsg{kind: kind, c: c, n: uint8(n), att: att, live: b2u(live)})
	}
}

// rwRequest reports whether kind is a request to a node (not a reply).
func rwRequest(kind uint8) bool { return kind != rkAcqRep && kind != rkExtRep }

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// orphan turns client c's live messages of kind into orphans (the round
// gave up on them), dropping replies.
func (st *rwStep) orphan(c uint8, kinds ...uint8) {
	s := st.s
	for i := int(s.nmsg) - 1; i >= 0; i-- {
		m := s.msgs[i]
		if m.c != c || m.live == 0 || !slices.Contains(kinds, m.kind) {
			continue
		}
		s.del(i)
		if rwRequest(m.kind) { // still in the network
			m.live = 0
			s.add(m)
		}
	}
}

func (w *rwWorld) apply(s *rwState, a rwAct, log *strings.Builder) string {
	st := &rwStep{w: w, s: s, log: log}
	st.logf("t=%d ", s.now)
	before := *s
	var actor = -1 // the reader whose own request the step runs, if any
	c := a.arg
	switch a.kind {
	case raBegin, raRetry:
		cl := &s.cl[c]
		cl.phase, cl.att, cl.start, cl.okm, cl.anm = rpAcq, cl.att+1, s.now, 0, 0
		st.logf("%s sends attempt %d", rwWho(c), cl.att)
		st.send(rkAcq, c, cl.att, true)
	case raExtend:
		cl := &s.cl[c]
		cl.ext++
		cl.extOpen, cl.extStart, cl.okm, cl.anm = true, s.now, 0, 0
		st.logf("%s extends", rwWho(c))
		st.send(rkExt, c, cl.att, true)
	case raRelease:
		st.logf("%s releases", rwWho(c))
		st.orphan(c, rkExt, rkExtRep)
		s.cl[c] = rwClient{phase: rpDone, att: s.cl[c].att}
		st.send(rkRel, c, 0, false)
	case raTimeout:
		cl := &s.cl[c]
		if cl.phase == rpAcq {
			st.logf("%s's attempt %d times out", rwWho(c), cl.att)
			st.failAttempt(c)
		} else {
			st.logf("%s's extend times out", rwWho(c))
			cl.extOpen = false
			st.orphan(c, rkExt, rkExtRep)
		}
	case raLose:
		m := s.msgs[a.arg]
		st.logf("%s's %s to/from n%d lost", rwWho(m.c), rwKindNames[m.kind], m.n)
		s.del(int(a.arg))
	case raDeliver:
		m := s.msgs[a.arg]
		if rwRequest(m.kind) && int(m.c) < rwReaders {
			actor = int(m.c)
		}
		s.del(int(a.arg))
		st.deliver(m)
	case raTick:
		s.now++
		st.logf("time passes → t=%d", s.now)
		for n := range s.nodes {
			s.nodes[n] = nodeRWExpire(s.nodes[n], s.now)
		}
	}
	st.logf("\n")
	if st.bad == "" {
		st.bad = w.props(&before, s, actor, a.kind == raTick)
	}
	return st.bad
}

// failAttempt ends client c's attempt: its live requests become orphans,
// and every node is sent the attempt's exact cleanup.
func (st *rwStep) failAttempt(c uint8) {
	cl := &st.s.cl[c]
	cl.phase = rpFailed
	st.orphan(c, rkAcq, rkAcqRep)
	// The nodes that took it: the others' requests are orphans now, whose
	// late success is cleaned up when it lands (see deliver).
	for n := range rwNodes {
		if cl.okm&(1<<n) != 0 {
			st.s.add(rwMsg{kind: rkClean, c: c, n: uint8(n), att: cl.att})
		}
	}
}

func (st *rwStep) deliver(m rwMsg) {
	s, w := st.s, st.w
	nd := &s.nodes[m.n]
	reader := int(m.c) < rwReaders
	ttl := rwTTLs[m.c]
	var ok bool
	switch m.kind {
	case rkAcq:
		if reader {
			*nd, ok, _ = nodeRWShared(*nd, s.now, ttl, int(m.c), int(m.att), w.v)
		} else {
			*nd, ok, _ = nodeRWWrite(*nd, s.now, ttl, int(m.att), w.v)
		}
		st.logf("n%d runs %s's acquire %d: %v", m.n, rwWho(m.c), m.att, ok)
		if m.live == 1 {
			st.logf("; ")
			st.acqReply(rwMsg{kind: rkAcqRep, c: m.c, n: m.n, att: m.att, ok: b2u(ok), live: 1})
		} else if ok {
			// A late answer: the client cleans up that attempt there.
			s.add(rwMsg{kind: rkClean, c: m.c, n: m.n, att: m.att})
		}
	case rkExt:
		if reader {
			*nd, ok = nodeRWSharedExtend(*nd, s.now, ttl, int(m.c), int(m.att), w.v)
		} else {
			*nd, ok = nodeRWWriteExtend(*nd, s.now, ttl, int(m.att))
		}
		st.logf("n%d runs %s's extend: %v", m.n, rwWho(m.c), ok)
		if m.live == 1 {
			st.logf("; ")
			st.extReply(rwMsg{kind: rkExtRep, c: m.c, n: m.n, att: m.att, ok: b2u(ok), live: 1})
		}
	case rkRel, rkClean:
		if reader {
			*nd, ok = nodeRWSharedEnd(*nd, s.now, int(m.c), int(m.att))
		} else {
			*nd, ok = nodeRWWriteEnd(*nd, int(m.att))
		}
		st.logf("n%d runs %s's %s %d: %v", m.n, rwWho(m.c), rwKindNames[m.kind], m.att, ok)
	case rkAcqRep:
		st.acqReply(m)
	case rkExtRep:
		st.extReply(m)
	}
}

const rwQuorum = rwNodes/2 + 1

func (st *rwStep) acqReply(m rwMsg) {
	s := st.s
	cl := &s.cl[m.c]
	cl.anm |= 1 << m.n
	if m.ok == 1 {
		cl.okm |= 1 << m.n
	}
	ok, an := popcount(cl.okm), popcount(cl.anm)
	st.logf("%s hears n%d: %v (%d ok of %d)", rwWho(m.c), m.n, m.ok == 1, ok, an)
	switch {
	case ok >= rwQuorum:
		deadline := cl.start + rwTTLs[m.c] - rwDrift
		if s.now >= deadline {
			st.logf("; too late: fails")
			st.failAttempt(m.c)
			return
		}
		cl.phase, cl.deadline = rpHeld, deadline
		st.orphan(m.c, rkAcq, rkAcqRep)
		// The nodes still to answer may take it late: those answers are
		// cleaned up (the late handler), which the orphans model.
		st.logf("; holds until t=%d", deadline)
	case an-ok > rwNodes-rwQuorum:
		st.logf("; fails")
		st.failAttempt(m.c)
	}
}

func (st *rwStep) extReply(m rwMsg) {
	s := st.s
	cl := &s.cl[m.c]
	cl.anm |= 1 << m.n
	if m.ok == 1 {
		cl.okm |= 1 << m.n
	}
	ok, an := popcount(cl.okm), popcount(cl.anm)
	st.logf("%s hears n%d's extend: %v", rwWho(m.c), m.n, m.ok == 1)
	switch {
	case ok >= rwQuorum:
		cl.extOpen = false
		st.orphan(m.c, rkExt, rkExtRep)
		if d := cl.extStart + rwTTLs[m.c] - rwDrift; s.now < d && s.now < cl.deadline {
			cl.deadline = d
			st.logf("; holds until t=%d", d)
		}
	case an-ok > rwNodes-rwQuorum:
		cl.extOpen = false
		st.orphan(m.c, rkExt, rkExtRep)
		cl.phase = rpDone // a majority says not ours: lost
		st.logf("; lost")
	}
}

func popcount(b uint8) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// props checks the properties after a step from before to s; actor is the
// reader whose own request ran (-1: none), tick whether time passed.
func (w *rwWorld) props(before, s *rwState, actor int, tick bool) string {
	if w.believes(s, rwClients-1) {
		for r := range rwReaders {
			if w.believes(s, r) {
				return fmt.Sprintf("property 1: the writer and reader r%d both believe they hold at t=%d", r, s.now)
			}
		}
	}
	if w.only1 {
		return ""
	}
	for n := range rwNodes {
		b, a := &before.nodes[n], &s.nodes[n]
		for r := range rwReaders {
			for att := 1; att <= rwAttempts; att++ {
				if !tick && r != actor && b.live(before.now, r, att) && a.rd[r][att] < b.rd[r][att] {
					return fmt.Sprintf("property 2: a step not of reader r%d moved its expiry on n%d from t=%d to t=%d", r, n, b.rd[r][att], a.rd[r][att])
				}
				if a.live(s.now, r, att) && (a.key != rwMarker || a.exp < a.rd[r][att]) && !w.v.readerIgnoresWriter {
					return fmt.Sprintf("property 2: on n%d reader r%d lives until t=%d but the marker does not (key %d until t=%d)", n, r, a.rd[r][att], a.key, a.exp)
				}
			}
		}
	}
	return ""
}

// rwHash is FNV-1a over the state's bytes.
func rwHash(s *rwState) uint64 {
	b := unsafe.Slice((*byte)(unsafe.Pointer(s)), unsafe.Sizeof(*s))
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// simulate runs walks random walks from the start state (seeded: the same
// walks every run), each until no action is enabled, and returns the first
// violation with its trace, and how many distinct states the walks saw.
// The world with every fault is too large to search exhaustively here
// (tens of millions of states past a depth of a few ticks); the walks
// cover it in part, and every control is caught within them.
func (w *rwWorld) simulate(walks int, seed uint64) (string, int) {
	r := rand.New(rand.NewPCG(seed, 31))
	seen := map[uint64]struct{}{}
	var path []rwAct
	for range walks {
		var s rwState
		path = path[:0]
		for {
			acts := w.actions(&s)
			if len(acts) == 0 {
				break
			}
			a := acts[r.IntN(len(acts))]
			path = append(path, a)
			if bad := w.apply(&s, a, nil); bad != "" {
				var log strings.Builder
				var s rwState
				for _, p := range path {
					w.apply(&s, p, &log)
				}
				return bad + "\n" + log.String(), len(seen)
			}
			seen[rwHash(&s)] = struct{}{}
		}
	}
	return "", len(seen)
}

func TestReadWriteModel(t *testing.T) {
	walks := 200_000
	if testing.Short() {
		walks = 20_000
	}
	all := uint8(1<<rwClients - 1)
	for _, tc := range []struct {
		name    string
		w       rwWorld
		control bool
		want    string
	}{
		{"clean", rwWorld{tmax: 5, timeouts: all}, false, ""},
		{"clean, message loss", rwWorld{tmax: 5, timeouts: all, loss: true}, false, ""},
		{"control: a reader ignores the exclusive key", rwWorld{tmax: 5, timeouts: all, only1: true, v: rwVariant{readerIgnoresWriter: true}}, true, "property 1"},
		{"control: a writer ignores the readers", rwWorld{tmax: 5, timeouts: all, only1: true, v: rwVariant{writerIgnoresReader: true}}, true, "property 1"},
		{"control: one TTL shared by all readers", rwWorld{tmax: 5, timeouts: all, v: rwVariant{oneTTL: true}}, true, "property 2"},
		{"control: one TTL shared by all readers, exclusion", rwWorld{tmax: 5, timeouts: all, only1: true, v: rwVariant{oneTTL: true}}, true, "property 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, n := tc.w.simulate(walks, 1)
			t.Logf("%d distinct states", n)
			switch {
			case !tc.control && bad != "":
				t.Errorf("violation:\n%s", bad)
			case tc.control && !strings.HasPrefix(bad, tc.want):
				t.Errorf("control not caught (the checker must be able to fail): got %q; want %s", bad, tc.want)
			case tc.control:
				t.Logf("caught:\n%s", bad)
			}
		})
	}
}
