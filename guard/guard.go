// Package guard makes a downstream store reject the accesses of a lock
// holder that is no longer the newest: the fencing side of
// [github.com/redlock-go/redlock]. A guard needs from the holder only its
// fence and its token (a [Holder]); *redlock.Lock is one.
//
// Three guards: [InProcess] for stores inside one program, [Redis] for a
// Redis store, and [SQL] for a row in a SQL database. All three implement
// one rule ([Accepts]), in one atomic step per access: with highest the
// highest fence accepted for the resource so far and owner the [OwnerID] of
// the holder it was accepted from, an access with fence f from a holder with
// owner id o is accepted if f > highest, or f == highest and o == owner;
// (f, o) is then recorded. Otherwise the access changes nothing and fails
// with an error matching [ErrStaleFence]. Fence 0 (a lock taken with
// [github.com/redlock-go/redlock.AcquireOptions].NoFence) is refused with
// [ErrNoFence].
//
// Why the owner: Redlock's fences are ordered for holds that completed
// before another began, but two holds that overlap (its timing assumptions
// broke: a clock jump on a node while an acquisition was in flight) can get
// the same fence. A guard that accepted an equal fence from anyone would let
// both write. Recording the owner lets the holder that reached the store
// first keep it at that fence, while the other is refused as stale; the same
// holder rewriting at its own fence still passes.
//
// Fence reads too, not only writes. A read-modify-write under the lock is
// safe only if the read also records the fence. Otherwise a stale holder A
// (fence 1) that read before the newer holder B (fence 2) can still write
// after B has read: 1 is still the highest fence accepted until B writes, so
// A's write is accepted, and B's write, computed from what it read before,
// then silently overwrites it. A fenced read records 2 before B reads, so
// A's later write is rejected.
package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrStaleFence: the store has already accepted a higher fence for this
// resource, or the same fence from another holder; nothing was changed. The
// holder that gets it has lost its lock to a newer holder (its lease ran out
// during a pause, a slow network or a clock jump) and must stop: acquire the
// lock again before retrying. The errors the guards return match it with
// [errors.Is] and name the resource, the fence and the highest fence
// accepted.
var ErrStaleFence = errors.New("redlock: stale fence")

// ErrNoFence: a guard was given fence 0, the fence of a lock acquired with
// [github.com/redlock-go/redlock.AcquireOptions].NoFence. Such a lock cannot
// be told apart from any other holder, so every guard refuses it and
// records nothing: acquire the lock with fencing on (the default) to access
// a fenced store. The errors the guards return match it with [errors.Is].
var ErrNoFence = errors.New("redlock: fence 0: the lock was acquired with NoFence, so no guard can order it against other holders; acquire it with fencing on (AcquireOptions.NoFence false) to access a fenced store")

// Holder is what a guard needs from the holder of a lock: its fence and its
// token. *redlock.Lock implements it; a process that received a fence and a
// token from elsewhere (the CLI passes REDLOCK_FENCE and REDLOCK_TOKEN to
// its child) makes one with [HolderOf]. The guards never store the token,
// only its [OwnerID].
type Holder interface {
	Fence() uint64
	Token() string
}

// HolderOf returns a Holder with the given fence and token, for a process
// that received them from the one holding the lock.
func HolderOf(fence uint64, token string) Holder { return holder{fence, token} }

type holder struct {
	fence uint64
	token string
}

func (h holder) Fence() uint64 { return h.fence }
func (h holder) Token() string { return h.token }

// OwnerID returns the owner id the guards record with a fence for the holder
// of token: the lowercase hex of the first 16 bytes of SHA-256(token). The
// token itself is the secret proof of lock ownership (whoever knows it can
// extend or release the lock), so a store must not learn it; the owner id
// tells holders apart without revealing it. SQL users may use it to read or
// set the owner column themselves.
func OwnerID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// Accepts is the rule every guard implements (see the package doc): an
// access with fence from owner is accepted iff fence is above highest, or
// equal to it and from highestOwner, the owner it was accepted from. Owners
// are [OwnerID]s. The guards refuse fence 0 before they apply this rule; a
// guard of one's own for another store must do the same.
func Accepts(highest uint64, highestOwner string, fence uint64, owner string) bool {
	return fence > highest || (fence == highest && owner == highestOwner)
}

// AcceptsRead is the rule for a read under a shared hold of a read-write
// lock (redlock's AcquireShared): it is valid iff its fence is above
// lastWrite, the highest fence of the writes the store accepted. Readers
// share the name, so a read does not raise the guard's fence (a guard's
// Do, Set or Update would record it and then refuse a reader with a lower
// fence that is still valid): check reads with this rule against the
// writes' highest fence (Highest), and send only writes through the guard.
// Fence 0 (no fencing) is never valid.
func AcceptsRead(lastWrite, fence uint64) bool { return fence != 0 && fence > lastWrite }

// staleFence returns an error matching ErrStaleFence for resource (as it
// should be printed), the fence rejected and the highest fence accepted.
func staleFence(resource string, fence uint64, highest string) error {
	return fmt.Errorf("%w: %s: fence %d is below %s, the highest fence accepted: "+
		"a newer holder has taken the lock, so stop and acquire it again before retrying",
		ErrStaleFence, resource, fence, highest)
}

// fenceTie returns an error matching ErrStaleFence for resource (as it
// should be printed) and fence, already accepted from another holder.
func fenceTie(resource string, fence uint64) error {
	return fmt.Errorf("%w: %s: fence %d is already held by another holder: two holds of the lock "+
		"overlapped and got the same fence (Redlock's timing assumptions broke, such as a clock jump on a node); "+
		"the holder that reached the store first keeps it, so stop and acquire the lock again before retrying",
		ErrStaleFence, resource, fence)
}

// noFence returns an error matching ErrNoFence for resource (as it should be
// printed).
func noFence(resource string) error {
	return fmt.Errorf("%w: %s", ErrNoFence, resource)
}
