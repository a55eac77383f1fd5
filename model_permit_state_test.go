package redlock

// The state of the semaphore model (model_permit_test.go, docs/model.md):
// nodes holding slot keys, clients each making one acquire call for a
// permit, and the messages in flight. It is a world of its own, apart from
// the lock's (model_state_test.go); each slot key is stepped by the lock's
// own node steps (model_node_test.go).

import (
	"fmt"
	"time"
)

// Sizes of the fixed arrays of a semaphore model state. A world uses a
// prefix.
const (
	semNodes   = 3
	semSlots   = 3
	semClients = 3
	semMsgs    = 32
)

// semDesign is how a node decides a permit.
type semDesign uint8

const (
	// semSlotted: a permit is one of limit slots, each slot a lock key of
	// its own on every node, won on a quorum of the nodes (the library's
	// design).
	semSlotted semDesign = iota
	// semCounted: each node counts the permits it granted and grants while
	// fewer than limit; a permit needs a quorum of grants and names no slot
	// (the naive design, for a control).
	semCounted
)

// semWorld is a configuration of the semaphore model.
type semWorld struct {
	design   semDesign
	loss     bool // a request or reply may fail (the client sees an error; the request may still run), a message nobody waits for may be lost
	nodes    int
	limit    int // permits: slots in the slotted design, the per-node count in the counted one
	clients  int
	attempts int   // attempts per acquire call
	need     int   // grants a permit needs; 0: a majority, quorumOf(nodes)
	ttl      int16 // TTL in ticks
	factor   float64
	noTime   bool // time stands still: no key expires, no permit lapses
}

func (w *semWorld) quorum() int {
	if w.need > 0 {
		return w.need
	}
	return quorumOf(w.nodes)
}

func (w *semWorld) ttlDur() time.Duration { return time.Duration(w.ttl) * tick }

// semModelWorld is a world with the lock model's time: tick = 100ms, TTL =
// 3 ticks, drift factor 0.01.
func semModelWorld(d semDesign, loss bool, nodes, limit, clients, attempts int) semWorld {
	return semWorld{design: d, loss: loss, nodes: nodes, limit: limit, clients: clients,
		attempts: attempts, ttl: 3, factor: DefaultDriftFactor}
}

// Message kinds of the semaphore model. The client learns a take's answer
// when the node runs it (the reply is part of the delivery): a reply that
// is lost or late is a request that failed (the client saw an error) and
// may still run at the node later.
const (
	skTake    uint8 = iota // take the slot if free (the acquire script on the slot's key)
	skCleanup              // compare-and-delete of the exact value of a failed attempt
	skRelease              // delete any value of the call on the slot
)

var semKindNames = [...]string{"take", "cleanup", "release"}

// semMsg is one message in flight, packed so that the message list sorts
// and hashes as plain integers: kind 2 bits, mode 2, client 2, node 2, slot
// 2, attempt 2. The mode is the lock model's: mLive (the open round waits
// for the answer), mLate (a take of a decided round: a grant is cleaned up
// unless its attempt holds the permit), mOrphan (nobody waits).
type semMsg uint16

func packSemMsg(kind, mode, c, node, slot, att uint8) semMsg {
	return semMsg(uint16(kind) | uint16(mode)<<2 | uint16(c)<<4 | uint16(node)<<6 |
		uint16(slot)<<8 | uint16(att)<<10)
}

func (m semMsg) kind() uint8   { return uint8(m & 3) }
func (m semMsg) mode() uint8   { return uint8(m>>2) & 3 }
func (m semMsg) client() uint8 { return uint8(m>>4) & 3 }
func (m semMsg) node() uint8   { return uint8(m>>6) & 3 }
func (m semMsg) slot() uint8   { return uint8(m>>8) & 3 }
func (m semMsg) att() uint8    { return uint8(m>>10) & 3 }
func (m semMsg) withMode(mode uint8) semMsg {
	return m&^(3<<2) | semMsg(mode)<<2
}

// Client phases of the semaphore model.
const (
	spIdle   uint8 = iota // the acquire call has not begun
	spTrying              // an attempt's round is open
	spFailed              // the attempt failed; a retry may follow
	spHeld                // an attempt won its slot (believed while now < deadline)
	spLapsed              // the deadline passed: the permit is no longer believed
	spDone                // released, or no attempt left
)

// semClient is one client with one acquire call (token client+1).
type semClient struct {
	phase uint8
	att   uint8           // current (or last) attempt
	slot  uint8           // the slot of the current attempt, or of the permit
	start int16           // tick the current attempt began
	rs    [semNodes]uint8 // the open round's answers (rsPending, rsOK, rsRefused, rsError)
	dl    int32           // local deadline in ms of model time (phase held)
}

// semState is the whole world. Times are absolute ticks; the hash takes
// them relative to now.
type semState struct {
	now   int16
	nodes [semNodes][semSlots]mnode // each slot's key on each node (counted design: the node's permits, in any order)
	cl    [semClients]semClient
	nmsg  uint8
	msgs  [semMsgs]semMsg // sorted
}

func (s *semState) nowMs() int32 { return int32(s.now) * int32(tick/time.Millisecond) }

func (s *semState) addMsg(m semMsg) {
	if int(s.nmsg) == semMsgs {
		panic("semaphore model: too many messages in flight; raise semMsgs")
	}
	insertSorted(s.msgs[:], int(s.nmsg), m)
	s.nmsg++
}

func (s *semState) delMsg(i int) {
	copy(s.msgs[i:s.nmsg], s.msgs[i+1:s.nmsg])
	s.nmsg--
	s.msgs[s.nmsg] = 0
}

// believes reports whether client c believes it holds a valid permit now.
func (s *semState) believes(c int) bool {
	return s.cl[c].phase == spHeld && s.nowMs() < s.cl[c].dl
}

// semValue is the value attempt att of client c writes: "T.k", as the
// lock's attempts do, so that an attempt's cleanup never matches another's.
func semValue(c, att uint8) mval { return mval{c + 1, att} }

// semSlot names a slot in a trace; semNoSlot is the counted design's
// permit, which names none.
type semSlot uint8

const semNoSlot semSlot = 0xff

func (k semSlot) String() string {
	if k == semNoSlot {
		return "a permit"
	}
	return fmt.Sprintf("slot %d", uint8(k))
}

func (w *semWorld) slot(k uint8) semSlot {
	if w.design == semCounted {
		return semNoSlot
	}
	return semSlot(k)
}

// semDeleted says what a delete did, in a trace.
type semDeleted bool

func (d semDeleted) String() string {
	if d {
		return "deleted"
	}
	return "nothing"
}

// hash returns the state's hash, the same for every state that differs from
// s only in ways that cannot matter, as the lock model's hash does
// (model_answers_test.go): times relative to now (clamped where they no
// longer change anything), nodes interchangeable (their signatures hashed
// in sorted order), clients interchangeable up to their tokens and, in the
// slotted design, slots interchangeable. For the last two it is the least
// hash over the renamings that sort the clients and the slots by a key that
// no renaming changes (clientKey, slotKey): a function of the state's
// orbit, and mostly one or two renamings to hash.
func (w *semWorld) hash(s *semState) uint64 {
	// (The renamings are written out for up to 3 clients and 2 slots.)
	cperms := [][semClients]uint8{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	sperms := [][semSlots]uint8{{0, 1, 2}, {1, 0, 2}}
	switch w.clients {
	case 1:
		cperms = cperms[:1]
	case 2:
		cperms = [][semClients]uint8{{0, 1, 2}, {1, 0, 2}}
	}
	if w.limit != 2 || w.design == semCounted {
		sperms = sperms[:1]
	}
	var ck [semClients]uint64
	for c := 0; c < w.clients; c++ {
		ck[c] = w.clientKey(s, c)
	}
	var sk [semSlots]uint64
	if len(sperms) > 1 {
		for k := 0; k < w.limit; k++ {
			sk[k] = w.slotKey(s, uint8(k))
		}
	}
	best := ^uint64(0)
	for _, p := range cperms {
		if !sortedBy(p[:w.clients], ck[:]) {
			continue
		}
		for _, q := range sperms {
			if len(sperms) > 1 && !sortedBy(q[:w.limit], sk[:]) {
				continue
			}
			best = min(best, w.hashAs(s, p, q))
		}
	}
	return best
}

// sortedBy reports whether renaming i to p[i] puts the keys in order.
func sortedBy(p []uint8, key []uint64) bool {
	var at [semClients]uint64
	for i, to := range p {
		at[to] = key[i]
	}
	for i := 1; i < len(p); i++ {
		if at[i] < at[i-1] {
			return false
		}
	}
	return true
}

// clientKey hashes what no renaming of nodes, slots or other clients
// changes about client c: its own state, its keys and its messages.
func (w *semWorld) clientKey(s *semState, c int) uint64 {
	cl := &s.cl[c]
	h := mix(uint64(cl.phase), uint64(cl.att))
	switch cl.phase {
	case spTrying:
		h = mix(h, uint64(uint8(min(s.now-cl.start, w.ttl))))
		for n := 0; n < w.nodes; n++ {
			h += mix(4, uint64(cl.rs[n]))
		}
	case spHeld:
		h = mix(h, uint64(uint32(cl.dl-s.nowMs())))
	}
	for n := 0; n < w.nodes; n++ {
		for k := 0; k < w.limit; k++ {
			if key := &s.nodes[n][k]; key.key.tok == uint8(c+1) {
				h += mix(2, uint64(key.key.att)|uint64(uint8(key.exp-s.now))<<8)
			}
		}
	}
	for i := 0; i < int(s.nmsg); i++ {
		if m := s.msgs[i]; m.client() == uint8(c) {
			h += mix(3, uint64(m.kind())|uint64(m.mode())<<2|uint64(m.att())<<4)
		}
	}
	return h
}

// slotKey hashes what no renaming of nodes, clients or other slots changes
// about slot k: its keys, the clients trying or holding it, its messages.
func (w *semWorld) slotKey(s *semState, k uint8) uint64 {
	var h uint64
	for n := 0; n < w.nodes; n++ {
		if key := &s.nodes[n][k]; key.key.tok != 0 {
			h += mix(5, uint64(key.key.att)|uint64(uint8(key.exp-s.now))<<8)
		}
	}
	for c := 0; c < w.clients; c++ {
		if cl := &s.cl[c]; cl.slot == k && (cl.phase == spTrying || cl.phase == spHeld || cl.phase == spLapsed) {
			h += mix(6, uint64(cl.phase))
		}
	}
	for i := 0; i < int(s.nmsg); i++ {
		if m := s.msgs[i]; m.slot() == k {
			h += mix(7, uint64(m.kind())|uint64(m.mode())<<2|uint64(m.att())<<4)
		}
	}
	return h
}

// hashAs hashes s with client c renamed to p[c] and slot k to q[k].
func (w *semWorld) hashAs(s *semState, p [semClients]uint8, q [semSlots]uint8) uint64 {
	var inv [semClients]uint8
	for c := 0; c < w.clients; c++ {
		inv[p[c]] = uint8(c)
	}
	var qinv [semSlots]uint8
	for k := 0; k < w.limit; k++ {
		qinv[q[k]] = uint8(k)
	}
	var msum [semNodes]uint64
	for i := 0; i < int(s.nmsg); i++ {
		m := s.msgs[i]
		r := packSemMsg(m.kind(), m.mode(), p[m.client()], 0, q[m.slot()], m.att())
		msum[m.node()] += mix(1, uint64(r))
	}
	var sig [semNodes]uint64
	for n := 0; n < w.nodes; n++ {
		var places [semSlots]uint64
		for k := 0; k < w.limit; k++ {
			key := s.nodes[n][qinv[k]]
			if key.key.tok != 0 {
				places[k] = uint64(p[key.key.tok-1]+1) | uint64(key.key.att)<<8 | uint64(uint8(key.exp-s.now))<<16
			}
		}
		if w.design == semCounted { // a node's permits are a multiset
			for i := 1; i < w.limit; i++ {
				for j := i; j > 0 && places[j] < places[j-1]; j-- {
					places[j], places[j-1] = places[j-1], places[j]
				}
			}
		}
		h := msum[n]
		for k := 0; k < w.limit; k++ {
			h = mix(h, places[k])
		}
		for k := 0; k < w.clients; k++ {
			h = mix(h, uint64(s.cl[inv[k]].rs[n]))
		}
		sig[n] = h
	}
	for i := 1; i < w.nodes; i++ {
		for j := i; j > 0 && sig[j] < sig[j-1]; j-- {
			sig[j], sig[j-1] = sig[j-1], sig[j]
		}
	}
	h := uint64(w.nodes)
	for n := 0; n < w.nodes; n++ {
		h = mix(h, sig[n])
	}
	for k := 0; k < w.clients; k++ {
		cl := &s.cl[inv[k]]
		x := uint64(cl.phase) | uint64(cl.att)<<8
		switch cl.phase {
		case spDone:
			x = uint64(cl.phase)
		case spTrying:
			x |= uint64(q[cl.slot])<<16 | uint64(uint8(min(s.now-cl.start, w.ttl)))<<24
		case spHeld:
			x |= uint64(q[cl.slot])<<16 | uint64(uint32(cl.dl-s.nowMs()))<<32
		case spLapsed:
			x |= uint64(q[cl.slot]) << 16
		}
		h = mix(h, x)
	}
	return h
}
