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
	// A deliberate bug, for a control: the permit's lease counts from the
	// decision, as if the round had taken no time.
	leaseFromDecision bool
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
