package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// The shared side of a read-write lock (docs/design.md, "Read-write
// locks"). The exclusive side is the plain lock ([Client.Acquire]),
// unchanged: while readers hold a name, its lock key keeps readersMarker,
// which no attempt's value equals (a value is "<token>.<attempt>"), with
// the last reader's expiry, so a writer's SET NX fails on it as on any
// holder. The readers are a sorted set beside the key, one member per
// reader (the value its lease counts) scored by its own expiry.

// readersMarker is what a lock key holds while readers hold its name (the
// scripts' "rl-readers").
const readersMarker = "rl-readers"

// readersSuffix is the reader set's key: <lock key>:r.
const readersSuffix = ":r"

// readerEntryMark ends a reader's queue entry: a release never grants the
// key to it (handon.lua), and a reader behind only readers may enter.
const readerEntryMark = ":s"

// AcquireShared takes name's shared side for ttl on a quorum of the nodes:
// a read lock. Any number of shared holds of name may be valid at once; an
// exclusive hold ([Client.Acquire], in any form) never is while another
// hold of name is. Each reader's lease is its own: one reader's Extend,
// Release or expiry never shortens another's.
//
// The wait is fair across both sides: a reader that comes after a writer
// already waits in name's queue waits behind it, and the readers queued
// behind a writer come in together when it releases. Barging keeps its
// meaning (the queue is not looked at).
//
// With fencing on, [Lock.Fence] is the name's counter value the reader's
// acquisition took: larger than the fence of every hold of name (either
// side) that completed before it began. A guard accepts a read whose fence
// is above the last exclusive fence it recorded (see the guard package).
//
// It waits and fails as [Client.Acquire] does. opts.Metadata is kept with
// the reader and shown by [Client.Inspect]; Reentrant is refused
// ([ErrInvalid]). The returned lock's Handle resumes as a reader.
func (c *Client) AcquireShared(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions) (*Lock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "AcquireShared"); err != nil {
		return nil, err
	}
	return c.acquireShared(ctx, name, ttl, opts)
}

// TryAcquireShared is [Client.AcquireShared] with one attempt: it takes
// the shared side only if no writer holds name or waits for it.
func (c *Client) TryAcquireShared(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions) (*Lock, error) {
	if err := c.made(); err != nil {
		return nil, err
	}
	if err := checkCtx(ctx, "TryAcquireShared"); err != nil {
		return nil, err
	}
	o, err := oneTry("TryAcquireShared", "AcquireShared", name, opts)
	if err != nil {
		return nil, err
	}
	return c.acquireShared(ctx, name, ttl, o)
}

func (c *Client) acquireShared(ctx context.Context, name string, ttl time.Duration, opts *AcquireOptions) (*Lock, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if err := c.checkTTL(ttl); err != nil {
		return nil, err
	}
	var o AcquireOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Reentrant:
		return nil, invalidf("redlock: AcquireShared %q: Reentrant: a shared hold is not re-entrant; take another shared hold, or use Resume", name)
	}
	if err := checkMetadata(o.Metadata); err != nil {
		return nil, err
	}
	if err := checkMaxHold(name, &o); err != nil {
		return nil, err
	}
	if o.Retry == nil {
		o.Retry = DefaultRetry()
	}
	start := c.clock.Now()
	ls := c.newLease(name, ttl, leaseSpec{form: formShared, fenced: !o.NoFence, meta: o.Metadata})
	return c.acquireLease(ctx, ls, o, start)
}

// sharedForm is a reader of a read-write lock: its lease's value is a
// member of the name's reader set, scored by its expiry, under the marker
// at the lock key (rw_shared_*.lua). A release never grants it the key.
type sharedForm struct{}

func (sharedForm) acquire(ls *lease, w place, value string) *transport.Request {
	var buf [8]string
	return transport.NewRequest(sharedAcquireScript, []string{ls.keys.lock}, acquireArgs(&buf, ls, w, value, ls.meta)...)
}

func (sharedForm) extend(ls *lease, ttlArg, won string) *transport.Request {
	return transport.NewRequest(sharedExtendScript, []string{ls.keys.lock}, won, ttlArg)
}

func (sharedForm) release(ls *lease) *transport.Request {
	return transport.NewRequest(sharedReleaseScript, []string{ls.keys.lock}, ls.prefix, "release")
}

func (sharedForm) cleanup(ls *lease, value string) *transport.Request {
	return transport.NewRequest(sharedReleaseScript, []string{ls.keys.lock}, value, "cleanup")
}

func (sharedForm) counted(ls *lease, attempt int) string { return ls.value(attempt) }
func (sharedForm) grantable() bool                       { return false }
func (sharedForm) reported(EventKind) bool               { return true }
func (sharedForm) fence(_ *lease, n uint64) uint64       { return n }
func (sharedForm) handleKind() byte                      { return 's' }

var (
	sharedAcquireScript = script("rw_shared_acquire.lua", "counter.lua", "queue.lua", "rw_shared_acquire_rest.lua")
	sharedExtendScript  = script("rw_shared_extend.lua")
	sharedReleaseScript = script("rw_shared_release.lua", "handon.lua", "rw_shared_release_queued.lua")
)

// Shared reports whether the lock is a shared hold ([Client.AcquireShared]).
func (l *Lock) Shared() bool { return l.ls.form == formShared }

// Shared reports whether h is a shared hold's handle: Resume makes it a
// reader's share of the same lease.
func (h Handle) Shared() bool { return h.kind == 's' }

// Reader is one reader of a read-write lock, as [Client.Inspect] reads it.
type Reader struct {
	Token    string        // the reader's lock's token (show it to admins only)
	Metadata string        // its AcquireOptions.Metadata
	TTL      time.Duration // its remaining time on the node; in a LockState the longest of the nodes'
	Nodes    int           // in a LockState, on how many nodes it reads; 1 in a NodeState
}

// MaxInspectReaders is the most readers [Client.Inspect] lists per node.
const MaxInspectReaders = MaxInspectWaiters

// readReaders fills ns from the inspect script's reply for readers: pttl
// the marker's, n their number, list {token, ms left, metadata, ...}, then
// the queue.
func (ns *NodeState) readReaders(pttl, n int64, list any, queue []any) error {
	ns.Held, ns.Shared, ns.Readers, ns.Holds = true, true, int(n), int(n)
	ns.TTL = time.Duration(pttl) * time.Millisecond
	f, _ := list.([]any)
	for i := 0; i+2 < len(f); i += 3 {
		token, _ := f[i].(string)
		left, _ := f[i+1].(string)
		meta, _ := f[i+2].(string)
		ms, err := strconv.ParseInt(left, 10, 64)
		if err != nil {
			return fmt.Errorf("reader %q with %q ms left is not a reader's", token, left)
		}
		ns.ReaderList = append(ns.ReaderList, Reader{Token: token, TTL: time.Duration(ms) * time.Millisecond, Metadata: meta, Nodes: 1})
	}
	return ns.readQueue(queue)
}

// mergeReaders returns the readers of every node, each once, by their
// longest remaining time, at most MaxInspectReaders.
func mergeReaders(nodes []NodeState) []Reader {
	var all []Reader
	at := map[string]int{}
	for _, ns := range nodes {
		for _, r := range ns.ReaderList {
			i, ok := at[r.Token]
			if !ok {
				at[r.Token] = len(all)
				all = append(all, r)
				continue
			}
			all[i].Nodes++
			all[i].TTL = max(all[i].TTL, r.TTL)
		}
	}
	slices.SortFunc(all, func(a, b Reader) int { return cmp.Or(cmp.Compare(a.TTL, b.TTL), strings.Compare(a.Token, b.Token)) })
	return all[:min(len(all), MaxInspectReaders)]
}
