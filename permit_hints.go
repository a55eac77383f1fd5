package redlock

import (
	"math/rand/v2"
	"sync"
)

// permitHints remembers, per semaphore name, the slot this Client last
// released: the first slot its next AcquirePermit of the name tries, most
// likely still free. Bounded: it forgets everything when full.
type permitHints struct {
	mu    sync.Mutex
	slots map[string]int
}

const maxPermitHints = 4096

func (h *permitHints) get(name string, limit int) int {
	h.mu.Lock()
	slot, ok := h.slots[name]
	h.mu.Unlock()
	if !ok || slot >= limit {
		return rand.IntN(limit)
	}
	return slot
}

func (h *permitHints) put(name string, slot int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.slots == nil || len(h.slots) >= maxPermitHints {
		h.slots = map[string]int{}
	}
	h.slots[name] = slot
}
