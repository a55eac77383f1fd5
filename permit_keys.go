package redlock

import (
	"strconv"

	"github.com/redlock-go/redlock/internal/transport"
)

// A semaphore's keys and the requests of its slots (permit.go): its
// scripts are registered in scripts.go with the lock's.

// semKeys are the names of what a semaphore keeps on each node, besides
// its slots' lock keys (slotKeys). All live in the name's hash slot, next
// to the keys of a lock of the same name, and apart from them.
type semKeys struct {
	base  string // <prefix>{<name>}: the start of every key below
	limit string // <base>:permits:limit: the limit the live permits were taken with
	gate  keys   // the lock the semaphore's waiters queue for: <base>:permits, its queue <base>:permits:q, :qt
	fence string // <base>:permits:fence: the fence counter of every slot, never deleted
	slots string // <prefix>released:<base>:permit: where a slot's release is announced while the gate is held
}

// semKeysOf returns the keys of the semaphore name under prefix.
func semKeysOf(prefix, name string) semKeys {
	base := prefix + "{" + name + "}"
	g := base + ":permits"
	return semKeys{base: base, limit: g + ":limit", fence: g + ":fence", slots: prefix + "released:" + base + ":permit",
		gate: keys{lock: g, fence: g + ":fence", queue: g + ":q", queueTimes: g + ":qt", meta: g + ":meta",
			channel: prefix + "released:" + g}}
}

// slotKeys returns the lock keys of slot i: the lock key <base>:permit:<i>,
// with its meta key; the semaphore's fence counter and release channel;
// queue keys that nothing ever writes (a slot's waiters queue at the gate).
func (s semKeys) slotKeys(i int) keys {
	lock := s.base + ":permit:" + strconv.Itoa(i)
	return keys{lock: lock, fence: s.fence, queue: lock + ":q", queueTimes: lock + ":qt", meta: lock + ":meta", channel: s.slots}
}

// permitScanRequest reads the limit key and limit slots of s.
func permitScanRequest(s semKeys, limit int) *transport.Request {
	ks := make([]string, 0, limit+1)
	for i := range limit {
		ks = append(ks, s.slotKeys(i).lock)
	}
	return transport.NewRequest(permitScanScript, append(ks, s.limit))
}
