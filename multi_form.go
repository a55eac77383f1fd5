package redlock

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/internal/transport"
)

// How a set of names is sent to the nodes: its lease, its form (the
// scripts and their keys and arguments), its fences and its wake-ups.

// newMultiLease makes the lease of the set of names (sorted) for ttl.
func (c *Client) newMultiLease(names []string, ttl time.Duration, fenced bool) *lease {
	spec := &multiSpec{locks: make([]string, len(names)), fence: make([]string, len(names))}
	for i, name := range names {
		lock := c.opts.KeyPrefix + "{" + name + "}" // as appendKeys writes it
		spec.locks[i], spec.fence[i] = lock, lock+":fence"
	}
	first := c.keys(names[0])
	return c.newLease(strings.Join(names, ","), ttl, leaseSpec{form: formMulti, fenced: fenced,
		token: newToken() + setSuffix(len(names)), keys: &first, multi: spec})
}

// multiForm is a set of names (multi.go): every name's key holds the
// call's value, written and extended together on each node. Its waiters
// are never granted a key by a release (a grant is for one name), so they
// take the set with an attempt.
type multiForm struct{}

var formMulti form = multiForm{}

var (
	multiAcquireScript = script("multi_acquire.lua", "counter.lua", "queue.lua", "multi_acquire_rest.lua")
	multiExtendScript  = script("multi_extend.lua")
	multiLeaveScript   = script("multi_leave.lua")
	multiReleaseScript = eachKeyScript(false, "multi_release.lua", "meta_none.lua", "channel_lock.lua", "release.lua", "handon.lua", "release_queued.lua")
	multiCleanupScript = eachKeyScript(false, "", "meta_none.lua", "channel_lock.lua", "cleanup.lua", "handon.lua", "cleanup_queued.lua")
	multiFenceScript   = eachKeyScript(true, "", "fence.lua")
)

// eachKeyScript returns the script that runs the one-key script made of
// files for each of its KEYS in turn, in one atomic step, and returns the
// sum of their integer replies; after common, a script's common case for
// every key at once, when not "". With perKey, key i takes ARGV[i] in
// place of ARGV[1]. The one-key script must read no other key argument.
func eachKeyScript(perKey bool, common string, files ...string) *transport.Script {
	body := strings.ReplaceAll(luaSource(files...), "KEYS[1]", "key")
	if perKey {
		body = strings.ReplaceAll(body, "ARGV[1]", "ARGV[i]")
	}
	if strings.Contains(body, "KEYS[") {
		panic("redlock: " + strings.Join(files, "+") + " reads more than one key or argument") // embedded: cannot happen
	}
	head := ""
	if common != "" {
		head = luaSource(common)
	}
	return transport.NewScript(head + "local function one(key, i)\n" + body +
		"\nend\nlocal n = 0\nfor i = 1, #KEYS do\n  n = n + one(KEYS[i], i)\nend\nreturn n\n")
}

func (multiForm) acquire(ls *lease, w place, value string) *transport.Request {
	var buf [8]string
	return transport.NewRequest(multiAcquireScript, ls.multi.locks, acquireArgs(&buf, ls, w, value)...)
}

func (multiForm) extend(ls *lease, ttlArg, won string) *transport.Request {
	return transport.NewRequest(multiExtendScript, ls.multi.locks, won, ttlArg)
}

func (multiForm) release(ls *lease) *transport.Request {
	return transport.NewRequest(multiReleaseScript, ls.multi.locks, ls.prefix)
}

func (multiForm) cleanup(ls *lease, value string) *transport.Request {
	return transport.NewRequest(multiCleanupScript, ls.multi.locks, value)
}

func (multiForm) counted(ls *lease, attempt int) string { return ls.value(attempt) }
func (multiForm) grantable() bool                       { return false }
func (multiForm) reported(EventKind) bool               { return true }
func (multiForm) fence(_ *lease, n uint64) uint64       { return n }
func (multiForm) handleKind() byte                      { return 0 }

// leaveRequest takes the call's entry w out of every name's queue.
func (s *multiSpec) leaveRequest(w place) *transport.Request {
	return transport.NewRequest(multiLeaveScript, s.locks, w.member)
}

// settleMultiFences picks each name's fence from the counters the granting
// nodes of round r returned, as settleFence does for one name, and writes
// every name's back to a quorum when any name needs it (one request per
// node). It keeps the fences in cl and returns the first name's, the
// acquisition's validity, and the write-back round when it failed.
func (c *Client) settleMultiFences(ctx context.Context, cl *call, r *transport.Round[take], start time.Time) (uint64, time.Duration, *transport.Round[int64]) {
	ls := cl.ls
	k := len(ls.multi.locks)
	granted := make([][]uint64, k)
	for i, rp := range r.Replies {
		if !r.Answered[i] || rp.Err != nil || !rp.Val.ok {
			continue
		}
		fs, ok := setFences(rp.Val, k)
		if !ok {
			continue
		}
		for j, f := range fs {
			granted[j] = append(granted[j], f)
		}
	}
	fences := make([]uint64, k)
	args := make([]string, k)
	writeBack := false
	for j := range granted {
		p := planFence(granted[j], c.quorum)
		fences[j], args[j] = p.fence, strconv.FormatUint(p.fence, 10)
		writeBack = writeBack || p.writeBack
	}
	v := validity(ls.ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
	if writeBack {
		want := int64(k)
		wb := sendRound(ctx, c, transport.NewRequest(multiFenceScript, ls.multi.fence, args...), &transport.Spec[int64]{
			Need: c.quorum, PerNode: min(ls.timeout, v), Parse: int64Reply,
			Accept: func(n int64, err error) bool { return err == nil && n == want }})
		if wb.OK < c.quorum {
			return fences[0], v, wb
		}
		v = validity(ls.ttl, c.clock.Now().Sub(start), c.opts.DriftFactor)
	}
	cl.fences = fences
	return fences[0], v, nil
}

// setFences reads the fences of a set's k names from a node's answer: its
// first name's in g.fence, the others' in g.more, comma-separated.
func setFences(g take, k int) ([]uint64, bool) {
	fs := make([]uint64, 1, k)
	fs[0] = g.fence
	for rest := g.more; rest != ""; {
		var f string
		f, rest, _ = strings.Cut(rest, ",")
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, false
		}
		fs = append(fs, n)
	}
	return fs, len(fs) == k
}

// wakeAlso returns the channels, besides wakeOn's, that a waiting call of
// ls listens on: for a set waiting in its names' queues, the other names'
// (a release of any of them may make it the head of every queue).
func (c *Client) wakeAlso(ls *lease, w *waiter) []string {
	if ls.multi == nil || w.mode != queueWait {
		return nil
	}
	more := make([]string, 0, len(ls.multi.locks)-1)
	for _, lock := range ls.multi.locks[1:] {
		more = append(more, c.opts.KeyPrefix+"released:"+lock+":"+c.waker.id)
	}
	return more
}
