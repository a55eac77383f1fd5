// Package history records what the clients of a lock test saw, checks the
// record against the invariants a lock must keep, and draws it.
//
// A [Recorder] stamps every event — acquisitions, extends, releases, loss
// signals, writes to a fenced store, injected faults — with one monotonic
// clock. [Check] reads the history and returns a [Report] with every
// violation of:
//
//   - overlaps: two believed holds of a lock at once ([Report.Overlaps]);
//   - permits: more believed permits of a semaphore at once than its limit
//     ([Report.Permits]); a name is a semaphore when its Acquire events
//     carry [Event.Limit] > 1, and is then not judged by overlaps;
//   - fence order: a later acquisition with a fence not above an earlier
//     one's, across all holds or permits of a name ([Report.FenceOrder]);
//   - fence ties: two holds or permits of a name with one fence
//     ([Report.FenceTies]);
//   - stale writes: a store accepted a fence below one it had accepted
//     ([Report.StaleWrites]);
//   - lost increments: a fenced counter lost updates
//     ([Report.LostIncrements]);
//   - late loss: a holder told of its loss after its local deadline, or
//     not told after a majority of the nodes went away ([Report.LateLoss]).
//
// [SummaryTable] lines up the reports of several runs, [WriteTimeline]
// draws a history and its violations as an HTML page, and [Save] and
// [Load] keep a history as JSON to check or draw it again elsewhere. The
// package needs no Docker.
package history
