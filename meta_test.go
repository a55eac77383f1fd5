package redlock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests of this file hold a plain lock with metadata: the metadata in
// a meta key beside the lock key, written, kept and deleted with it.

// metaTTLs returns the PTTL of the lock key and of its meta key on each node.
func metaTTLs(t *testing.T, ns []redis.UniversalClient, k keys) (lock, meta []time.Duration) {
	t.Helper()
	for i, n := range ns {
		// Both at one instant: a script runs alone on its node.
		both, err := n.Eval(t.Context(), "return {redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}", []string{k.lock, k.meta}).Int64Slice()
		if err != nil {
			t.Fatalf("node %d: PTTLs: %v", i, err)
		}
		lock = append(lock, time.Duration(both[0])*time.Millisecond)
		meta = append(meta, time.Duration(both[1])*time.Millisecond)
	}
	return lock, meta
}

// assertNoMetaKey fails unless no node keeps the meta key of k.
func assertNoMetaKey(t *testing.T, ns []redis.UniversalClient, k keys) {
	t.Helper()
	assertNoLockKey(t, ns, k.lock)
	assertNoLockKey(t, ns, k.meta)
}

// TestMetadataPlainLock: Metadata alone keeps the lock plain; Inspect
// shows it; an extend keeps the meta key exactly as long as the lock key;
// a release deletes both.
func TestMetadataPlainLock(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	const name, meta = "meta-plain", "host-a pid 4242: backup"
	k := c.keys(name)
	l, err := c.Acquire(t.Context(), name, 10*time.Second, &AcquireOptions{Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reenter(t.Context(), time.Second, nil); err == nil || !strings.Contains(err.Error(), "not re-entrant") {
		t.Errorf("Reenter of a plain lock with metadata = %v; want: not re-entrant", err)
	}
	waitUntil(t, "every node holds the lock", func() bool { return inspect(t, c, name).HeldOn == 3 })
	st := inspect(t, c, name)
	for i, n := range st.Nodes {
		if !n.Held || n.Reentrant || n.Metadata != meta || n.Token != l.Token() {
			t.Errorf("node %d: %+v; want the plain lock of %s with metadata %q", i, n, l.Token(), meta)
		}
		if typ := ns[i].Type(t.Context(), k.lock).Val(); typ != "string" {
			t.Errorf("node %d: lock key is a %s; want a string (the plain form)", i, typ)
		}
	}
	lockTTL, metaTTL := metaTTLs(t, ns, k)
	for i := range ns {
		if metaTTL[i] <= 0 || metaTTL[i] > lockTTL[i] {
			t.Errorf("node %d: meta key PTTL %v, lock key %v; want in (0, the lock key's]", i, metaTTL[i], lockTTL[i])
		}
	}
	if err := l.Extend(t.Context(), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Extend returns at a quorum: the third node's extend may still be on
	// its way.
	waitUntil(t, "every node extended", func() bool {
		lt, _ := metaTTLs(t, ns, k)
		return slices.Min(lt) > 50*time.Second
	})
	lockTTL, metaTTL = metaTTLs(t, ns, k)
	for i := range ns {
		if metaTTL[i] < 50*time.Second || metaTTL[i] > lockTTL[i] {
			t.Errorf("node %d after Extend(1m): meta key PTTL %v, lock key %v; want the meta key extended, no longer than the lock", i, metaTTL[i], lockTTL[i])
		}
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertNoMetaKey(t, ns, k)

	// Without metadata, no meta key at all.
	l, err = c.Acquire(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range ns {
		if got := n.Exists(t.Context(), k.meta).Val(); got != 0 {
			t.Errorf("node %d: a lock without metadata has a meta key", i)
		}
	}
	l.Release(t.Context())
}

// TestMetadataExpiresWithLock: a holder that dies leaves nothing: the meta
// key expires with the lock key.
func TestMetadataExpiresWithLock(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	const name = "meta-expiry"
	k := c.keys(name)
	if _, err := c.Acquire(t.Context(), name, 300*time.Millisecond, &AcquireOptions{Metadata: "short-lived"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	assertNoMetaKey(t, ns, k)
}

// TestMetadataBrokenAndCleanedUp: a break deletes the meta key and says
// whose metadata it was; a failed attempt's cleanup deletes what it wrote.
func TestMetadataBrokenAndCleanedUp(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	const name, meta = "meta-break", "job 7"
	k := c.keys(name)
	l, err := c.Acquire(t.Context(), name, time.Minute, &AcquireOptions{Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every node holds the lock", func() bool { return inspect(t, c, name).HeldOn == 3 })
	broken, err := c.ForceRelease(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		if !b.Deleted || b.Token != l.Token() || b.Metadata != meta {
			t.Errorf("ForceRelease on node %d = %+v; want the lock of %s with metadata %q deleted", b.Node, b, l.Token(), meta)
		}
	}
	assertNoMetaKey(t, ns, k)

	// Another owner on two nodes of three: a try-lock with metadata wins
	// the third, misses its quorum and cleans up there, meta key and all.
	for _, i := range []int{0, 1} {
		ns[i].Set(t.Context(), k.lock, "someone.1", time.Minute)
	}
	t.Cleanup(func() {
		for _, n := range ns {
			n.Del(context.Background(), k.lock)
		}
	})
	_, err = c.Acquire(t.Context(), name, time.Minute, &AcquireOptions{Metadata: meta, Retry: NoRetry()})
	if !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire against a holder on 2 of 3 nodes = %v; want ErrNotAcquired", err)
	}
	assertNoLockKey(t, ns[2:], k.lock)
	assertNoLockKey(t, ns, k.meta)
}

// TestMetadataWaiterTakesLockWithIt: a waiter with metadata is not granted
// the key by the release (a grant could not write its metadata): the
// release's notice wakes it and its attempt takes the key and writes the
// metadata beside it.
func TestMetadataWaiterTakesLockWithIt(t *testing.T) {
	ns := nodes(t, 3)
	c := newTestClient(t, ns, nil)
	other := newTestClient(t, ns, nil)
	const name, meta = "meta-waiter", "the waiter"
	k := c.keys(name)
	holder := acquireFenced(t, c, name, time.Minute)
	got := make(chan *Lock, 1)
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() {
		l, err := other.Acquire(ctx, name, time.Minute, &AcquireOptions{Metadata: meta})
		if err != nil {
			errc <- err
			return
		}
		got <- l
	}()
	st := waitDepth(t, c, name, 1)
	for i, n := range ns {
		q := n.ZRange(t.Context(), k.queue, 0, -1).Val()
		if len(q) != 1 || strings.Count(q[0], ":") != 1 {
			t.Errorf("node %d: queue %v; want the waiter's entry without TTL and fencing (not grantable)", i, q)
		}
	}
	if err := holder.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	var l *Lock
	select {
	case l = <-got:
	case err := <-errc:
		t.Fatalf("waiter: %v", err)
	}
	if l.Token() != st.Head.Token {
		t.Errorf("the lock went to %s; want the head %s", l.Token(), st.Head.Token)
	}
	st = inspect(t, c, name)
	held := 0
	for i, n := range st.Nodes {
		if n.Held && n.Token == l.Token() {
			held++
			if n.Metadata != meta || strings.HasSuffix(ns[i].Get(t.Context(), k.lock).Val(), ".0") {
				t.Errorf("node %d: %+v, value %q; want the waiter's own attempt with metadata %q", i, n, ns[i].Get(t.Context(), k.lock).Val(), meta)
			}
		}
	}
	if held < 2 {
		t.Errorf("the waiter holds the lock on %d nodes; want a quorum", held)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertNoMetaKey(t, ns, k)
}

// TestMetadataAddsNoCommand: a lock without metadata runs the same
// commands on a node as before the meta key existed (counted by the
// node's commandstats); one with metadata adds a SET, a PEXPIRE per extend
// and nothing to the release (one DEL of both keys).
func TestMetadataAddsNoCommand(t *testing.T) {
	ns := nodes(t, 1)
	c := newTestClient(t, ns, nil)
	cycle := func(meta string) map[string]int64 {
		if err := ns[0].ConfigResetStat(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(t.Context(), "meta-commands", 10*time.Second, &AcquireOptions{Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(t.Context(), 20*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		return commandCalls(t, ns[0])
	}
	// What acquire.lua, extend.lua and release.lua call for a plain lock
	// nobody waits for (extend's GET answers for its key's type too; the
	// release announces nothing: no barging waiter marked the key).
	want := map[string]int64{"exists": 2, "incr": 1, "set": 1, "get": 2, "pttl": 1, "pexpire": 1, "del": 1}
	if got := cycle(""); !sameCalls(got, want) {
		t.Errorf("commands of a cycle without metadata = %v; want %v", got, want)
	}
	want["set"], want["pexpire"] = 2, 2
	if got := cycle("m"); !sameCalls(got, want) {
		t.Errorf("commands of a cycle with metadata = %v; want %v", got, want)
	}
}

// commandCalls returns the node's calls per data command since the last
// CONFIG RESETSTAT (the scripts' calls included; the scripts, PINGs and
// admin commands left out).
func commandCalls(t *testing.T, rdb redis.UniversalClient) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok || strings.Contains(name, "|") {
			continue
		}
		switch name {
		case "evalsha", "eval", "ping", "config", "info", "hello", "client", "subscribe", "unsubscribe", "script":
			continue
		}
		var n int64
		for _, ch := range rest {
			if ch < '0' || ch > '9' {
				break
			}
			n = n*10 + int64(ch-'0')
		}
		out[name] = n
	}
	return out
}

func sameCalls(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
