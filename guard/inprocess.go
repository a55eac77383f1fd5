package guard

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// InProcess fences access to stores inside one program: a map, a file, an
// in-memory cache that several holders of one lock may touch. Do runs an
// access only if its holder's fence is above the highest fence accepted so
// far for its resource, or equal to it and from the same holder (the rule
// [Accepts]).
//
// The zero value is ready to use. An InProcess is safe for concurrent use and
// must not be copied after first use. It remembers the highest fence of every
// resource it has seen for as long as it lives (forgetting one would let a
// stale holder back in), so use it for a bounded set of resources.
type InProcess struct {
	mu        sync.Mutex            // protects resources
	resources map[string]*fenceSlot // one per resource; never removed
}

// fenceSlot is one resource of an InProcess.
type fenceSlot struct {
	mu      sync.Mutex    // held across the check, the record and the access
	highest atomic.Uint64 // written only under mu; read without it by Highest
	owner   string        // OwnerID of the holder highest was accepted from; under mu
}

// slot returns the slot of resource, creating it if create is set; nil if
// there is none and create is not set.
func (g *InProcess) slot(resource string, create bool) *fenceSlot {
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

// Do runs access (a read or a write of resource) only if h's fence is above
// the highest fence accepted for resource, or equal to it and accepted from
// h (the same token), and records the fence and h's [OwnerID]. The check, the
// record and access run under one lock per resource, so they are atomic:
// accesses to one resource run one at a time, accesses to different
// resources in parallel. Fence reads as well as writes (the package doc says
// why).
//
// If the fence is lower than the highest accepted, or equal to it but
// accepted from another holder, Do returns an error matching
// [ErrStaleFence] and does not call access; if it is 0, one matching
// [ErrNoFence]. An error from access is returned as is, and the fence stays
// recorded (so does it if access panics). A nil access only records the
// fence. access must not call Do for the same resource: that deadlocks.
func (g *InProcess) Do(resource string, h Holder, access func() error) error {
	fence := h.Fence()
	if fence == 0 {
		return noFence(strconv.Quote(resource))
	}
	owner := OwnerID(h.Token())
	s := g.slot(resource, true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if highest := s.highest.Load(); !Accepts(highest, s.owner, fence, owner) {
		if fence == highest {
			return fenceTie(strconv.Quote(resource), fence)
		}
		return staleFence(strconv.Quote(resource), fence, strconv.FormatUint(highest, 10))
	}
	s.highest.Store(fence)
	s.owner = owner
	if access == nil {
		return nil
	}
	return access()
}

// Highest returns the highest fence accepted for resource, 0 if none. It does
// not wait for an access in progress, whose fence it already counts.
func (g *InProcess) Highest(resource string) uint64 {
	if s := g.slot(resource, false); s != nil {
		return s.highest.Load()
	}
	return 0
}
