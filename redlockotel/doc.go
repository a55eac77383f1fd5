// Package redlockotel reports a redlock client's locks to OpenTelemetry:
// metrics and spans made from the [redlock.Event] values the client gives
// its [redlock.Options].Observe hook. It is a module of its own, so a
// program that does not use OpenTelemetry never downloads it.
//
//	obs, err := redlockotel.New() // the global meter and tracer providers
//	if err != nil { ... }
//	c, err := redlock.New(nodes, &redlock.Options{Observe: obs.Observe})
//
// # Metrics
//
// All durations are in seconds. Every instrument has the attribute
// redlock.outcome; with [WithLockName] each also has redlock.lock.name (off by
// default: one series per lock name can be a cardinality problem).
//
//	redlock.acquire.duration  histogram, s         Acquire calls, from call to return
//	                                               outcome: acquired, held (another owner holds it),
//	                                               not_acquired (no quorum otherwise: nodes down,
//	                                               quorum too late), canceled (the caller's
//	                                               context ended the wait), error (anything else)
//	redlock.acquire.attempts  histogram, {attempt} attempts per Acquire call; same outcomes
//	redlock.hold.duration     histogram, s         from Acquire's return to the end of Release or
//	                                               to the moment the loss was noticed
//	                                               outcome: released, lost
//	redlock.extends           counter, {extend}    extend rounds; attribute redlock.auto (the
//	                                               watchdog's); outcome: extended, failed (a watchdog
//	                                               round failed; it retries while the lease lasts),
//	                                               lost (a failed Extend call, which ends the lock,
//	                                               or a round that found the lock ended)
//	redlock.losses            counter, {loss}      locks lost (outcome: lost)
//	redlock.releases          counter, {release}   Release calls; outcome: released, lost (the
//	                                               lock was lost before), error (a node failed)
//	redlock.holds.untracked   counter, {hold}      holds not timed because [WithMaxHeld] locks
//	                                               were already being timed (outcome: acquired)
//	redlock.node.duration     histogram, s         one node's answer to one acquire, extend or
//	                                               release round trip ([redlock.EventNode]), as
//	                                               the round saw it; attributes redlock.node (its
//	                                               index), redlock.node.address, redlock.operation
//	                                               (acquire, extend, release); outcome: ok, error
//	redlock.node.errors       counter, {error}     those round trips that failed (outcome: error)
//
// # Spans
//
// One lock's life is one trace: a redlock.acquire span (Acquire's call to
// return; status Error when it failed), then for an acquired lock a
// redlock.hold span, its child, from Acquire's return to the end of Release
// or to the loss. The hold span carries the children redlock.extend (each
// Extend call) and redlock.release, an event redlock.extend.failed for each
// failed watchdog round, and an event redlock.lost with status Error when
// the lock is lost. A failed Acquire's span is the whole trace. Attributes:
// redlock.lock.name, redlock.attempts, redlock.fence (when fenced),
// redlock.outcome, redlock.auto, and with [WithOwnerID] redlock.owner_id.
// Node answers ([redlock.EventNode]) are metrics only: there are several per
// operation.
//
// The [redlock.Event] carries no context, so these spans do not join the
// caller's trace; they are roots.
//
// # Secrets
//
// A lock's token is the secret proof that one holds it: whoever knows it can
// extend or release the lock. It is never put in an attribute, an event or a
// status. [WithOwnerID] records
// [github.com/redlock-go/redlock/guard.OwnerID] of it instead (a hash the
// fenced guards record too), off by default. Errors are recorded with their
// messages, which name locks and node addresses, never tokens or passwords.
package redlockotel
