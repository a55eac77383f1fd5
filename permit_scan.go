package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// The semaphore's scan: one read-only round over its slots
// (lua/permit_scan.lua) that finds a slot free on a quorum.

// scanned is what a scan of the slots found.
type scanned struct {
	slot  int           // a slot free on a quorum, at random among those; -1: none (or too few answers to tell)
	soon  time.Duration // with none free: how soon the first frees on a quorum, by the nodes' TTLs (0: unknown)
	nodes []error       // per node: the slots it holds (slotsHeldError), or why it did not answer
	held  int           // nodes that hold one of the slots or more
}

// scan reads the slots on the nodes and finds one free on a quorum of them
// (at random among those, so that calls that scan together spread out).
// A limit in force on a quorum (another than the call's) fails the call.
func (s *semCall) scan(ctx context.Context) (scanned, error) {
	c := s.c
	timeout := c.nodeTimeout(s.ttl)
	r := sendRound(ctx, c, permitScanRequest(s.keys, s.limit), &transport.Spec[[]any]{
		Need: c.quorum, PerNode: timeout, Parse: sliceReply, Accept: func(_ []any, err error) bool { return err == nil }})
	sc := scanned{slot: -1}
	var free []int
	ttls := make([][]int64, s.limit) // per slot, each answering node's PTTL (0: free)
	limits := make([]error, len(r.Replies))
	mismatched := 0
	for i, rp := range r.Replies {
		if !r.Answered[i] || rp.Err != nil || len(rp.Val) != s.limit+1 {
			continue
		}
		if had, _ := rp.Val[0].(string); had != "" && had != s.limitArg {
			mismatched++
			limits[i] = &NodeError{Node: i, Addr: c.nodes[i].addr, Err: limitMismatchError{errors.New(
				"LIMIT semaphore " + s.keys.limit + " is in use with limit " + had + ", not " + s.limitArg)}}
		}
		for j := range s.limit {
			ttl, _ := rp.Val[j+1].(int64)
			ttls[j] = append(ttls[j], max(ttl, 0))
		}
	}
	if mismatched >= c.quorum {
		return sc, &QuorumError{Op: "acquire permit", Name: s.name, Quorum: c.quorum, Attempts: s.attempts, Nodes: limits, sentinel: ErrNotAcquired}
	}
	sc.nodes = nodeErrorsOf(c, r, timeout, func(v []any) error {
		e := slotsHeldError{limit: s.limit}
		if len(v) != s.limit+1 {
			return fmt.Errorf("unexpected reply of %d values from the slot scan; want %d", len(v), s.limit+1)
		}
		for _, t := range v[1:] {
			switch ttl, _ := t.(int64); {
			case ttl == -1: // held with no expiry
				e.held++
				if e.first == 0 {
					e.first = -1
				}
			case ttl > 0:
				e.held++
				if d := time.Duration(ttl) * time.Millisecond; e.first <= 0 || d < e.first {
					e.first = d
				}
			}
		}
		if e.held > 0 {
			sc.held++
		}
		return e
	})
	for j, ts := range ttls {
		if len(ts) < c.quorum {
			return sc, nil // too few answers to tell
		}
		slices.Sort(ts)
		if ts[c.quorum-1] == 0 {
			free = append(free, j)
		} else if d := time.Duration(ts[c.quorum-1]) * time.Millisecond; sc.soon == 0 || d < sc.soon {
			sc.soon = d
		}
	}
	if len(free) > 0 {
		sc.slot = free[rand.IntN(len(free))]
	}
	return sc, nil
}

// allHeld is the error of a call that found no slot free on a quorum (sc),
// with cause when it ended the wait.
func (s *semCall) allHeld(sc scanned, cause error) *QuorumError {
	return &QuorumError{Op: "acquire permit", Name: s.name, Quorum: s.c.quorum, Held: sc.held, Attempts: s.attempts,
		Nodes: sc.nodes, Err: cause, sentinel: ErrNotAcquired}
}

// slotsHeldError is one node's part in a call that found no slot free on a
// quorum: how many of the limit slots it holds, and how soon the first of
// them frees there (negative: a slot with no expiry). It matches [ErrHeld]
// when the node holds one or more.
type slotsHeldError struct {
	held, limit int
	first       time.Duration
}

func (e slotsHeldError) Error() string {
	switch {
	case e.held == 0:
		return fmt.Sprintf("none of the %d permits held here (no slot is free on a quorum)", e.limit)
	case e.first < 0:
		return fmt.Sprintf("%d of %d permits held here, one with no expiry", e.held, e.limit)
	}
	return fmt.Sprintf("%d of %d permits held here, the first frees in %v", e.held, e.limit, e.first)
}

func (e slotsHeldError) Is(target error) bool { return target == ErrHeld && e.held > 0 }
