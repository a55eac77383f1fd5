package history

import (
	"sync"
	"time"
)

// Recorder collects what the clients of a test saw — acquisitions, extends,
// releases, loss signals, writes to a fenced downstream store — and the
// faults the test injected, all stamped with one monotonic clock, so that
// [Check] can compare events of different clients and [WriteTimeline] can draw
// them on one axis.
//
// A Recorder is safe for concurrent use by any number of goroutines. Create it
// with [NewRecorder]; the zero value is not usable.
type Recorder struct {
	start time.Time // carries a monotonic reading; the origin of the clock

	mu     sync.Mutex // protects events
	events []Event
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// Now returns the time elapsed since NewRecorder on the monotonic clock: the
// recorder's clock. It never goes backwards, whatever the wall clock does.
func (r *Recorder) Now() time.Duration {
	return time.Since(r.start)
}

// Stamp converts t to the recorder's clock, such as a lock's local deadline
// (redlock's Lock.ValidUntil) for [Event.Until]. If t carries a monotonic
// clock reading, as every time.Time from time.Now and times derived from it
// with Add do, the conversion uses it and is immune to wall-clock jumps;
// otherwise it falls back to the wall clock.
func (r *Recorder) Stamp(t time.Time) time.Duration {
	return t.Sub(r.start)
}

// Record appends e to the history. If e.At is zero it is set to r.Now(), so a
// client can record what just happened with Record(Event{Kind: Lost, ...}).
// For kinds other than [Fault] and [Heal], e.Node is set to -1 (the field
// only means something for faults). Record keeps events in the order of the
// calls, which for events of different goroutines may differ slightly from
// the order of their At fields; [Check] and [WriteTimeline] go by the
// timestamps.
func (r *Recorder) Record(e Event) {
	if e.At == 0 {
		e.At = r.Now()
	}
	if e.Kind != Fault && e.Kind != Heal {
		e.Node = -1
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of the history, in recording order. It is safe to
// call while other goroutines are still recording.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Kind says what an [Event] records. The comment of each constant lists the
// Event fields that kind uses; all times are on the [Recorder]'s clock.
type Kind string

// The kinds of events. Client events are recorded by the client that saw
// them; Fault, Heal and MajorityGone by the test that injected the fault.
const (
	// Acquire: Client acquired Lock. Token identifies the hold, Fence is
	// its fencing token (0 without fencing), Start is when Acquire was
	// called, At when it returned, Until the holder's local deadline. For
	// a permit of a semaphore, Limit is the semaphore's number of permits
	// (see [Report.Permits]); 0 or 1 means Lock is a lock.
	Acquire Kind = "acquire"

	// AcquireFail: an Acquire of Client on Lock returned an error (Detail),
	// called at Start, returned at At.
	AcquireFail Kind = "acquire-fail"

	// Extend: Client extended its hold Token of Lock, called at Start,
	// returned at At; Until is the new local deadline. Detail is set (the
	// error) if the extend failed; a failed extend does not move Until.
	Extend Kind = "extend"

	// Release: Client called Release on its hold Token of Lock at At. From
	// then on it no longer believes it holds the lock.
	Release Kind = "release"

	// Lost: Client was told at At (Done fired) that its hold Token of Lock
	// is lost.
	Lost Kind = "lost"

	// Write: Client sent a write to the downstream resource Lock under its
	// hold Token with fence Fence at Start; the store answered at At.
	// Accepted says whether the store took it; Seq is the store's order of
	// acceptance (for a counter, the value it stored; 0 if rejected); Value
	// is the value written (for a counter, the new count).
	Write Kind = "write"

	// Fault: a fault began at At on Node (or -1 if the fault is not a
	// node's), for Client only if the fault is per client (a proxy between
	// that client and the node). Event.Fault says which (a [FaultKind]),
	// Detail says more ("300ms").
	Fault Kind = "fault"

	// Heal: the fault with the same Node, Client and Event.Fault ended at
	// At.
	Heal Kind = "heal"

	// MajorityGone: at At the test made a majority of the nodes unreachable
	// for the holders of Lock. Every holder of Lock then must be told it
	// lost the lock before its local deadline; see [Report.LateLoss].
	MajorityGone Kind = "majority-gone"
)

// Event is one thing a client saw or the test did. Which fields are used
// depends on Kind (see the Kind constants); unused fields stay zero. Times are
// on the [Recorder]'s clock: durations since NewRecorder.
type Event struct {
	Kind     Kind          `json:"kind"`
	Client   string        `json:"client,omitempty"`   // the client that saw it (or the client a fault is for)
	Node     int           `json:"node"`               // Fault and Heal: node index, or -1; -1 for other kinds
	Lock     string        `json:"lock,omitempty"`     // lock name, or the downstream resource for Write
	Token    string        `json:"token,omitempty"`    // identifies one hold (the lock's token)
	Fence    uint64        `json:"fence,omitempty"`    // fencing token of the hold; 0 without fencing
	Start    time.Duration `json:"start_ns,omitempty"` // when the operation began
	At       time.Duration `json:"at_ns"`              // when it ended or was observed
	Until    time.Duration `json:"until_ns,omitempty"` // Acquire, Extend: the holder's local deadline
	Limit    int           `json:"limit,omitempty"`    // Acquire: permits of the semaphore Lock; 0 or 1 for a lock
	Shared   bool          `json:"shared,omitempty"`   // Acquire: a shared hold (a reader of a read-write lock): it may overlap other shared holds, never an exclusive one
	Accepted bool          `json:"accepted,omitempty"` // Write: the downstream store accepted it
	Seq      int64         `json:"seq,omitempty"`      // Write: the store's order of acceptance; 0 if rejected
	Value    int64         `json:"value,omitempty"`    // Write: the value written (for counters: the new count)
	Detail   string        `json:"detail,omitempty"`   // error text, or more about a fault ("300ms")
	Fault    FaultKind     `json:"fault,omitempty"`    // Fault and Heal: which fault
}

// FaultKind says which fault a [Fault] or [Heal] event is about. The
// Cluster and Net of redlocktest record their faults with these kinds; a
// test may record faults of its own with them, or with a kind of its own.
type FaultKind string

// The kinds of faults. Node faults are seen by every client; network
// faults (down to hold) by the client of one Net only.
const (
	FaultKill         FaultKind = "kill"          // node killed (SIGKILL), until Restart
	FaultStop         FaultKind = "stop"          // node stopped cleanly, until Restart
	FaultAmnesia      FaultKind = "amnesia"       // node restarted with no data (RestartEmpty)
	FaultPause        FaultKind = "pause"         // node process frozen, until Unpause
	FaultClockJump    FaultKind = "clock-jump"    // node clock jumped forward past a key's TTL
	FaultClientPause  FaultKind = "client-pause"  // CLIENT PAUSE on a node, for Detail
	FaultProcessPause FaultKind = "process-pause" // a client process stopped (a GC pause)
	FaultDown         FaultKind = "down"          // path refused
	FaultBlackhole    FaultKind = "blackhole"     // path drops every byte
	FaultLatency      FaultKind = "latency"       // replies late by Detail
	FaultDelay        FaultKind = "delay"         // requests late by Detail, in order
	FaultHold         FaultKind = "hold"          // requests held by Detail, overtaken by later ones
)
