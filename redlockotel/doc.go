// Package redlockotel reports a redlock client's locks to OpenTelemetry:
// metrics and spans made from the [redlock.Event] values the client gives
// its [redlock.Options].Observe hook. It is a module of its own, so a
// program that does not use OpenTelemetry never downloads it.
//
//	obs, err := redlockotel.New() // the global meter and tracer providers
//	if err != nil { ... }
//	c, err := redlock.New(nodes, &redlock.Options{OnEvent: obs.Observe})
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
//	redlock.held              updowncounter, {lock} locks held now: +1 when Acquire (Resume,
//	                                               Reenter) returns one, -1 at its release or at
//	                                               its loss (a Release after the loss does not
//	                                               count it again); a failed Acquire never counts
//	redlock.waiting           updowncounter, {call} Acquire calls waiting now ([redlock.EventWait]):
//	                                               +1 when a call starts waiting (for its turn or
//	                                               after a failed attempt), -1 when it returns,
//	                                               with the lock or without it
//
// The two gauges are UpDownCounters, not observable gauges: each event
// moves them, and they have no redlock.outcome. With [WithLockName] they
// are per lock name, and a name's series stays (at 0) once its locks are
// gone; without it each is one series for the whole client.
//
// # Spans
//
// The spans join the caller's trace: each starts from the context the
// client passes to the observer, the context of the call that caused it
// ([redlock.Options].Observe). A redlock.acquire span (Acquire's call to
// return; status Error when it failed) is a child of the span in Acquire's
// context; for an acquired lock a redlock.hold span, the acquire span's
// child, runs from Acquire's return to the end of Release or to the loss.
// A redlock.extend span (each Extend call) and a redlock.release span are
// children of the span in their call's context, linked to the hold span;
// without a span there, children of the hold span. The hold span carries an
// event redlock.extend.failed for each failed watchdog round, and an event
// redlock.lost with status Error when the lock is lost. Without a span in
// Acquire's context, a lock's life is a trace of its own. Attributes:
// redlock.lock.name, redlock.attempts, redlock.fence (when fenced),
// redlock.outcome, redlock.auto, and with [WithOwnerID] redlock.owner_id.
// Node answers ([redlock.EventNode]) are metrics only: there are several per
// operation.
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
