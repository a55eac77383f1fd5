package transport

import (
	"sync"
	"time"
)

// Tracker owns goroutines that outlive the call that started them: node
// calls still running after a round was decided, the cleanups and straggler
// reports their late answers start, watchdogs. It is a sync.WaitGroup that
// may be waited on with a bound and added to at any time, even while or
// after someone waits (a WaitGroup forbids an Add from zero concurrent with
// Wait). The zero value is ready to use.
type Tracker struct {
	mu   sync.Mutex    // protects the fields below
	n    int           // goroutines running
	idle chan struct{} // closed when n drops to 0; nil while n == 0

	// timers are stopped timers that the waits of rounds run with the
	// Tracker reuse: a round takes one only while it waits, so a busy
	// client holds about as many as it has callers. (Per Tracker, not per
	// process: a timer belongs to the synctest bubble that made it.)
	timers sync.Pool
}

// Go runs f in a goroutine the Tracker owns.
func (t *Tracker) Go(f func()) {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
	go func() {
		defer t.done()
		f()
	}()
}

func (t *Tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
		t.idle = nil
	}
}

// Running returns how many goroutines are running.
func (t *Tracker) Running() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Idle returns a channel that is closed once no goroutine runs (at once
// if none does now). Goroutines started later need a new call.
func (t *Tracker) Idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return t.idle
}

// timer returns a timer of the Tracker's that fires after d.
func (t *Tracker) timer(d time.Duration) *time.Timer {
	if tm, ok := t.timers.Get().(*time.Timer); ok {
		tm.Reset(d)
		return tm
	}
	return time.NewTimer(d)
}

// putTimer stops tm and keeps it for the next timer. (Since Go 1.23 a
// stopped timer's channel holds no stale tick.)
func (t *Tracker) putTimer(tm *time.Timer) {
	tm.Stop()
	t.timers.Put(tm)
}
