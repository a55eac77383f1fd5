package redlock

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrStaleFence: the store has already accepted a higher fence for this
// resource; nothing was changed. The holder that gets it has lost its lock to
// a newer holder (its lease ran out during a pause, a slow network or a clock
// jump) and must stop: acquire the lock again before retrying. The errors the
// guards return match it with [errors.Is] and name the resource, the fence
// and the highest fence accepted.
//
// Three guards make a downstream store reject a stale holder's access:
// [FenceGuard] for stores inside one program, [RedisGuard] for a Redis
// store, and [SQLGuard] for a row in a SQL database. Each accepts an access
// only if its fence is at least the highest fence accepted for the resource
// so far, and records it, in one atomic step.
//
// Fence reads too, not only writes. A read-modify-write under the lock is
// safe only if the read also records the fence. Otherwise a stale holder A
// (fence 1) that read before the newer holder B (fence 2) can still write
// after B has read: 1 is still the highest fence accepted until B writes, so
// A's write is accepted, and B's write, computed from what it read before,
// then silently overwrites it. A fenced read records 2 before B reads, so
// A's later write is rejected.
var ErrStaleFence = errors.New("redlock: stale fence")

// staleFence returns an error matching ErrStaleFence for resource (as it
// should be printed), the fence rejected and the highest fence accepted.
func staleFence(resource string, fence uint64, highest string) error {
	return fmt.Errorf("%w: %s: fence %d is below %s, the highest fence accepted: "+
		"a newer holder has taken the lock, so stop and acquire it again before retrying",
		ErrStaleFence, resource, fence, highest)
}

// FenceGuard fences access to stores inside one program: a map, a file, an
// in-memory cache that several holders of one lock may touch. Do runs an
// access only if its fence is at least the highest fence accepted so far for
// its resource.
//
// The zero value is ready to use. A FenceGuard is safe for concurrent use and
// must not be copied after first use. It remembers the highest fence of every
// resource it has seen for as long as it lives (forgetting one would let a
// stale holder back in), so use it for a bounded set of resources.
type FenceGuard struct {
	mu        sync.Mutex            // protects resources
	resources map[string]*fenceSlot // one per resource; never removed
}

// fenceSlot is one resource of a FenceGuard.
type fenceSlot struct {
	mu      sync.Mutex    // held across the check, the record and the access
	highest atomic.Uint64 // written only under mu; read without it by Highest
}

// slot returns the slot of resource, creating it if create is set; nil if
// there is none and create is not set.
func (g *FenceGuard) slot(resource string, create bool) *fenceSlot {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.resources[resource]
	if s == nil && create {
		if g.resources == nil {
			g.resources = make(map[string]*fenceSlot)
		}
		s = new(fenceSlot)
		g.resources[resource] = s
	}
	return s
}

// Do runs access (a read or a write of resource) only if fence is at least
// the highest fence accepted for resource, and records fence. The check, the
// record and access run under one lock per resource, so they are atomic:
// accesses to one resource run one at a time, accesses to different
// resources in parallel. Fence reads as well as writes (see [ErrStaleFence]
// for why).
//
// If fence is lower than the highest accepted, Do returns an error matching
// [ErrStaleFence] and does not call access. An error from access is returned
// as is, and the fence stays recorded (so does it if access panics). A nil
// access only records the fence. access must not call Do for the same
// resource: that deadlocks.
func (g *FenceGuard) Do(resource string, fence uint64, access func() error) error {
	s := g.slot(resource, true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.highest.Load(); fence < h {
		return staleFence(strconv.Quote(resource), fence, strconv.FormatUint(h, 10))
	}
	s.highest.Store(fence)
	if access == nil {
		return nil
	}
	return access()
}

// Highest returns the highest fence accepted for resource, 0 if none. It does
// not wait for an access in progress, whose fence it already counts.
func (g *FenceGuard) Highest(resource string) uint64 {
	if s := g.slot(resource, false); s != nil {
		return s.highest.Load()
	}
	return 0
}
