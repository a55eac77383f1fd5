// Package transport carries the lock's script calls to its nodes: one
// request alike for every node, a sender per node that pipelines calls
// while the node is busy, and a round that sends a request to every node
// at once and returns as soon as its caller's rule decides the outcome,
// handing later answers to a late handler. Every goroutine it starts
// belongs to a [Tracker], which the Client joins on Close.
//
// It knows nothing of locks: what the scripts mean, what a quorum is and
// what an answer says are the redlock package's.
package transport
