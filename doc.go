// Package redlock is a distributed lock over N independent Redis masters
// (the Redlock algorithm) with fencing tokens, for critical sections that
// must stay safe when the network, the clocks and the nodes misbehave.
//
//	client, err := redlock.New(nodes, nil) // nodes: []redis.UniversalClient, independent masters
//	if err != nil {
//		return err
//	}
//	defer client.Close()
//
//	wait, cancel := context.WithTimeout(ctx, 10*time.Second) // Acquire waits until the lock is free or ctx ends
//	defer cancel()
//	lock, err := client.Acquire(wait, "invoice:42", 30*time.Second, nil)
//	if err != nil {
//		return err // matches ErrNotAcquired, and ErrHeld if another owner holds it
//	}
//	err = work(lock.Context(ctx), lock.Fence()) // cancelled if the lock is lost; send the fence with every write
//	if rerr := lock.Release(ctx); errors.Is(rerr, redlock.ErrLost) {
//		// The lease ran out before the work was done: another holder may have run meanwhile.
//		return fmt.Errorf("critical section may have overlapped another holder: %w", rerr)
//	}
//	return err
//
// [Client.TryAcquire] makes one attempt; [AcquireOptions].AutoExtend keeps
// the lock while the work runs ([AcquireOptions].MaxHold caps it);
// [Client.Do] wraps all of it around a function. Semaphores
// ([Client.AcquirePermit]) and leader election ([Client.Campaign]) are the
// same lock. The package's Example runs on miniredis, without Docker; the
// README has a complete program and how to start three nodes. What follows is the
// design: the algorithm, knowing when the lock is lost, fencing, and where
// the safety ends.
//
// # The algorithm
//
// [Client.Acquire] draws a random 128-bit token and sends one Lua script to
// all N nodes at once. Attempt k of the call sets the lock key to its own
// value "<token>.<k>" with a TTL if the key is free, holds that very value
// (a resent request after a lost reply must not lock us out), or holds an
// earlier attempt of the same call (a late grant of ours); and it
// increments the name's fence counter. Acquire decides as soon as the
// outcome is known: a majority granted, or so many refused that a majority
// is impossible. A slow or dead minority never delays it: each node has a
// per-node timeout ([Options].NodeTimeout) that the client enforces itself.
// The lease is then valid for
//
//	validity = TTL - elapsed - (TTL*DriftFactor + 2ms)
//
// until the local deadline start + validity, and the acquisition succeeds
// only if that deadline is still ahead when Acquire returns. Otherwise, or
// without a majority, the attempt's keys are deleted again with the
// attempt's exact value (answers that arrive late, grants or errors, clean
// up after themselves), and Acquire retries after a jittered delay, or
// sooner when the holder releases: waiters are woken by a pub/sub notice.
// [Client.TryAcquire] makes one attempt and never waits; [Client.Do] runs a
// function under the lock and releases it when the function returns.
// Because each attempt deletes only its own value, a cleanup that reaches a
// node late never deletes the key of a later attempt.
//
// A semaphore admits at most limit holders: [Client.AcquirePermit] takes
// one of limit slots, each a lock on the quorum (counting holders per node
// would not be safe), and returns a [Permit] with the lock's lease, fence
// and signals; waiters queue in the fair order below.
//
// Several names are taken at once, all or nothing, by
// [Client.AcquireMulti]: one script per node takes the whole set or nothing
// of it, a waiting set queues in every name's queue, and the [MultiLock]
// has one lease for the set and a fence per name; sets that overlap in any
// order, and the plain locks of their names, exclude each other without
// deadlock.
//
// Leader election is the lock with a value: [Client.Campaign] waits until
// the client leads (holds the lock, its value as the metadata, extended by
// the watchdog) and returns a [Leadership] whose term is the lock's fence;
// [Client.Leader] reads who leads and [Client.Observe] follows the changes.
//
// Waiting calls line up in one order that every node keeps alike: each node
// grants a free key only to the head of the name's queue (ordered by the
// time each call began to contend, as its client saw it), and a release
// wakes only that head. A release hands a plain lock's key to the head in
// the same step (the key set to "<token>.0" for its TTL, a fence taken), and
// a head that hears of such grants from a majority holds the lock without a
// round of its own, its validity counted from the start of its first
// attempt, which came before every grant. A try-lock never queues, and
// [AcquireOptions].Barging opts out (see the README, "Waiting in order").
//
// Extend and Release are compare-then-act scripts: they touch a key only if
// it holds a value of this lock's call ("<token>." and any attempt). Extend
// needs a majority and never re-creates an expired key; Release deletes on
// every node.
//
// # Knowing you lost it
//
// The holder's local deadline is the start of the acquisition (or of the
// last extend) plus the validity, on this process's monotonic clock.
// [Lock.Done] is closed at that deadline unless an extend succeeded first;
// [Lock.Context] gives a context that is cancelled then, whose cause
// ([Lock.Err]) says why. An extend that returns after the deadline never
// revives the lock. With [AcquireOptions].AutoExtend a watchdog extends the
// lease every TTL/3. One round that misses its quorum (a node restarting, a
// slow link) does not end a lease that still has two thirds of its TTL: the
// watchdog retries, jittered, until the deadline minus one node timeout.
// The lock is lost when the deadline passes or when a majority answers that
// the key is no longer ours; the failed round's [*QuorumError] is then the
// cause.
//
// # Fencing tokens
//
// Every acquisition returns a fence ([Lock.Fence]) that is larger than the
// fence of every acquisition of the same name that completed before it
// began. The acquire script increments a per-name counter on each granting
// node and returns it exactly (as a decimal string: no Lua number, so no
// rounding past 2^53); the fence F is the largest value among them. Unless
// a majority already returned exactly F (the usual case, one round trip in
// all), F is written back to a majority before Acquire returns: any later
// majority overlaps that one, so its increment there exceeds F.
//
// Two holds that overlap in time (possible only when Redlock's assumptions
// break, say a clock jump during an acquisition) can reach the same F
// through different majorities. So the guards of package
// [github.com/redlock-go/redlock/guard] (in-process, Redis, SQL) record the
// owner with the fence: they accept a fence above the highest accepted, or
// equal to it from the same owner only. No two
// holders ever both get an access accepted at one fence, and a stale
// holder's lower fence is rejected: that keeps a store correct even when
// the lock's own assumptions break. Fence 0 (fencing off) is refused.
//
// # Re-entry, resume, inspection
//
// A lock taken with [AcquireOptions].Reentrant is kept on each node as one
// hash (one TTL, no other key) holding the owner's token, the holder's
// metadata, the longest TTL asked for, and one field per hold. [Lock.Reenter]
// adds a hold in this process and [Client.Resume] in another (from
// [Lock.Handle]); each hold is released on its own, and the nodes free the
// lock with its last hold. Holds are a set, not a counter: a node that
// missed a hold has nothing to remove, so the quorum that granted a hold
// keeps the key until that hold is released or the TTL ends. Re-entry and
// resume keep the fence; a resumed lock's deadline counts from its own
// round with the nodes. A plain lock (the default, a string) and a
// re-entrant one on the same name exclude each other. [AcquireOptions].Metadata
// keeps a plain lock plain: its text lives in a key beside the lock key,
// written, extended and deleted with it. [Client.Inspect] reads a lock on
// every node, with its holder's metadata and who waits in its queue, for
// how long; [Client.ForceRelease] breaks it (dangerous), and [Client.Do]
// runs a function under it.
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
// [Options].KeyPrefix); the braces are a Redis Cluster hash tag, so names
// may not contain '{' or '}', and are at most [MaxNameLen] bytes. The
// counter has no TTL and is never deleted: that is what keeps fences
// increasing. A counter that is not a decimal in [0, 2^63-2] fails the
// acquire with [ErrBadCounter] before anything is written. Turn fencing off
// ([AcquireOptions].NoFence) for names of unbounded cardinality.
package redlock
