package redlock

import "time"

// EventKind says what an [Event] reports.
type EventKind int

// The kinds of [Event].
const (
	// EventAcquire: an Acquire call returned, with the lock or (Err set)
	// without it.
	EventAcquire EventKind = iota + 1
	// EventExtend: one extend round, by Extend or by the watchdog (Auto).
	// A failed watchdog round (Err set) does not end the lock by itself.
	EventExtend
	// EventRelease: Release returned; Err joins the nodes' failures known
	// then. Nodes still answering (stragglers) are not waited for: their
	// failures go to [Options].Logger.
	EventRelease
	// EventLost: the lock was lost, at its deadline or when a majority of
	// the nodes no longer held it; Err is the cause (matches ErrLost).
	EventLost
)

func (k EventKind) String() string {
	switch k {
	case EventAcquire:
		return "acquire"
	case EventExtend:
		return "extend"
	case EventRelease:
		return "release"
	case EventLost:
		return "lost"
	}
	return "unknown"
}

// Event is one thing a lock did, reported to [Options].Observe: enough to
// record a history of who held which lock when, with which fence, and to
// count attempts, extends and losses.
type Event struct {
	Kind     EventKind
	Name     string    // lock name
	Token    string    // the lock's token (empty for a failed Acquire)
	Hold     string    // tells apart locks that share Token ([Lock.Reenter], [Client.Resume]): random for each such lock, "" for one made by Acquire
	Fence    uint64    // the lock's fence, 0 without fencing
	Start    time.Time // when the operation began (monotonic)
	End      time.Time // when it ended; for EventLost, when the loss was noticed
	Until    time.Time // the local deadline after the operation (EventLost: the one in force); zero if not held
	Attempts int       // EventAcquire: attempts made
	Auto     bool      // EventExtend: made by the watchdog
	Err      error     // nil on success
}

// observe reports e if the client has an observer.
func (c *Client) observe(e Event) {
	if c.opts.Observe != nil {
		c.opts.Observe(e)
	}
}
