package redlock

// The nodes of the semaphore model (model_permit_test.go): the take step of
// both designs. Each slot key, or each place of the counted design, is
// stepped by the lock model's node steps (model_node_test.go), which
// TestModelStepsMatchScripts compares with the scripts.

import (
	"fmt"
	"strings"
)

// firstPlace and lastPlace bound the places of a node that a request for
// slot looks at: the slot's key, or (counted design) every place.
func (w *semWorld) firstPlace(slot uint8) int {
	if w.design == semCounted {
		return 0
	}
	return int(slot)
}

func (w *semWorld) lastPlace(slot uint8) int {
	if w.design == semCounted {
		return w.limit - 1
	}
	return int(slot)
}

// take runs the take step for v at node nd, and reports whether it granted.
// The slotted design runs the lock's acquire step (nodeAcquire) on the
// slot's key. The counted design runs it on the node's permit of the call,
// if it has one, else on a free place while fewer than limit are taken.
func (w *semWorld) take(nd *[semSlots]mnode, slot uint8, now int16, v mval) bool {
	k := int(slot)
	if w.design == semCounted {
		k = -1
		taken, free := 0, -1
		for j := 0; j < w.limit; j++ {
			switch {
			case nd[j].key.tok == v.tok:
				k = j
			case nd[j].key.tok != 0:
				taken++
			case free < 0:
				free = j
			}
		}
		if k < 0 {
			if taken >= w.limit {
				return false
			}
			k = free
		}
	}
	key, ok, _ := nodeAcquire(nd[k], now, w.ttl, v)
	key.ctr = 0 // permits are not fenced in this model
	nd[k] = key
	return ok
}

// showNode prints what a node holds, for a trace.
func (w *semWorld) showNode(nd *[semSlots]mnode) string {
	var b strings.Builder
	for k := 0; k < w.limit; k++ {
		if k > 0 {
			b.WriteString(", ")
		}
		if w.design == semCounted {
			fmt.Fprintf(&b, "%s", nd[k].key)
		} else {
			fmt.Fprintf(&b, "slot %d: %s", k, nd[k].key)
		}
	}
	return b.String()
}
