// Package redlock is a distributed lock over N independent Redis masters
// (the Redlock algorithm) with fencing tokens, for critical sections that
// must stay safe when the network, the clocks and the nodes misbehave.
//
// # The algorithm
//
// [Client.Acquire] sends one Lua script to all N nodes at once. On each node
// it sets the lock key to a random 128-bit token with a TTL if the key is
// free (or already holds this token: a retry after a lost reply must not
// lock us out), and increments the name's fence counter. Acquire decides as
// soon as the outcome is known: a majority granted, or so many refused that
// a majority is impossible. A slow or dead minority never delays it: each
// node has a per-node timeout ([Options].NodeTimeout) that the client
// enforces itself. The lease is then valid for
//
//	validity = TTL - elapsed - (TTL*DriftFactor + 2ms)
//
// and the acquisition succeeds only if that is positive. Otherwise, or
// without a majority, the keys it set are deleted again, on every node
// (answers that arrive late delete themselves), and Acquire retries after a
// jittered delay, or sooner when the holder releases: waiters are woken by
// a pub/sub notice.
//
// Extend and Release are compare-then-act scripts: they touch a key only if
// it holds this lock's token. Extend needs a majority and never re-creates
// an expired key; Release deletes on every node.
//
// # Knowing you lost it
//
// The holder's local deadline is the start of the acquisition (or of the
// last extend) plus the validity, on this process's monotonic clock.
// [Lock.Done] is closed at that deadline unless an extend succeeded first;
// [Lock.Context] gives a context that is cancelled then. With
// [AcquireOptions].AutoExtend a watchdog extends the lease every TTL/3 and
// stops when the lock is released or an extend fails.
//
// # Fencing tokens
//
// Every acquisition returns a fence ([Lock.Fence]) that is larger than the
// fence of every acquisition of the same name that completed before it
// began. The acquire script increments a per-name counter on each granting
// node; the fence F is the largest value among them. Unless a majority
// already returned exactly F (the usual case, one round trip in all), F is
// written back to a majority before Acquire returns: any later majority
// overlaps that one, so its increment there exceeds F. Downstream stores
// keep the highest fence they accepted per resource and reject lower ones;
// that keeps them correct even when the lock's own assumptions break.
//
// # Where the safety ends
//
// Mutual exclusion holds only while the assumptions of Redlock hold:
//
//   - Clocks: each node expires keys on its own clock. A node whose clock
//     jumps forward (or runs faster than DriftFactor allows) drops our key
//     early, and someone else may then win a majority that includes it.
//   - Pauses: a holder that stops (GC, swap, SIGSTOP) past its deadline
//     wakes up believing it holds the lock. Done fires at the deadline, but
//     a thread already past its last check cannot be stopped.
//   - Restarts: a node that restarts without its data forgets our key, and
//     its fence counter. Run nodes that serve fenced locks with
//     appendonly yes and appendfsync always, and keep a restarted node out
//     for at least one TTL.
//   - Failover: a Sentinel or Cluster replica promoted before it received
//     our key forgets it too; it counts as one node like any other.
//
// Fencing is what keeps a downstream store safe in all these cases: a
// stale holder's writes carry a lower fence and are rejected. A fence
// counter restarted empty (no persistence) can repeat fences; that is the
// one failure fencing does not cover.
//
// A lock is not always the right tool. When the protected change fits in
// one Redis command or Lua script, an atomic script is simpler and safer;
// when a write can be made idempotent, or guarded by a unique constraint or
// a compare-and-set on a version column, no lock is needed at all.
//
// # Keys
//
// For lock name "orders:42" the lock key is "redlock:{orders:42}" and the
// fence counter "redlock:{orders:42}:fence" (the prefix is
// [Options].KeyPrefix). The counter has no TTL and is never deleted: that is
// what keeps fences increasing. Turn fencing off
// ([AcquireOptions].NoFence) for names of unbounded cardinality.
package redlock
