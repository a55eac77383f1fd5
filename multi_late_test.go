package redlock

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// TestMultiLateRequests runs a set's requests on a real node in the orders
// a network may deliver them after their timeouts (docs/design.md, "What a
// lease counts"): a set's lease counts only the value its winning attempt
// wrote on every name, a cleanup deletes only its attempt's exact value, an
// attempt never takes a name back from a later attempt, and a late acquire
// after the release leaves values nobody counts, which expire.
func TestMultiLateRequests(t *testing.T) {
	n := nodes(t, 1)[0]
	c := newTestClient(t, []redis.UniversalClient{n}, nil)
	ctx := t.Context()
	names := multiNames(t, 2)
	ls := c.newMultiLease(names, 300*time.Millisecond, true)
	barge := place{mode: queueBarge}
	run := func(what string, req *transport.Request) any {
		t.Helper()
		v, err := req.Run(ctx, n)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	values := func() [2]string {
		var out [2]string
		for i, name := range names {
			v, err := n.Get(ctx, c.keys(name).lock).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("GET: %v", err)
			}
			out[i] = v
		}
		return out
	}
	v1, v2 := ls.value(1), ls.value(2)

	// Attempt 2 wins; attempt 1's acquire lands after it: refused, the
	// names keep attempt 2's value.
	if got := run("acquire 2", ls.acquireRequest(barge, v2)); !taken(parseTake(got.(string))) {
		t.Fatalf("acquire of attempt 2 = %v; want taken", got)
	}
	if got := run("late acquire 1", ls.acquireRequest(barge, v1)); taken(parseTake(got.(string))) || values() != [2]string{v2, v2} {
		t.Errorf("late acquire of attempt 1 = %v and left %v; want refused, %v on both", got, values(), v2)
	}
	// A late cleanup of attempt 1 deletes nothing of attempt 2's.
	run("late cleanup 1", ls.cleanupRequest(v1))
	if values() != [2]string{v2, v2} {
		t.Errorf("after a late cleanup of attempt 1: %v; want %v on both", values(), v2)
	}
	// An extend counts attempt 2's value only, and only on every name.
	if got := run("extend 1", ls.extendRequest(ls.ttlArg, v1)); got != int64(0) {
		t.Errorf("extend with attempt 1's value = %v; want 0", got)
	}
	if got := run("extend 2", ls.extendRequest(ls.ttlArg, v2)); got != int64(1) {
		t.Errorf("extend with the won value = %v; want 1", got)
	}
	if err := n.Set(ctx, c.keys(names[1]).lock, "someone-else.1", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if got := run("extend, one name lost", ls.extendRequest("5000", v2)); got != int64(0) {
		t.Errorf("extend with one name held by another = %v; want 0", got)
	}
	if pttl := n.PTTL(ctx, c.keys(names[0]).lock).Val(); pttl > time.Second {
		t.Errorf("extend that failed on one name moved the other's expiry to %v; want it untouched", pttl)
	}
	// The release deletes the set's value, never another owner's.
	run("release", ls.releaseRequest())
	if got := values(); got != [2]string{"", "someone-else.1"} {
		t.Errorf("after the release: %v; want the set's name gone, the other owner's kept", got)
	}
	n.Del(ctx, c.keys(names[1]).lock)

	// Attempt 1's acquire lands after the release: it writes values that
	// no lease counts (the lock's extend matched attempt 2 only) and that
	// expire with their TTL.
	if got := run("late acquire after release", ls.acquireRequest(barge, v1)); !taken(parseTake(got.(string))) {
		t.Fatalf("late acquire after the release = %v; want taken", got)
	}
	if got := run("extend 2 after", ls.extendRequest(ls.ttlArg, v2)); got != int64(0) {
		t.Errorf("the lease's extend over a late attempt's values = %v; want 0", got)
	}
	time.Sleep(400 * time.Millisecond)
	assertNoKeysOf(t, []redis.UniversalClient{n}, names)

	// All or nothing under a late request too: one name held by another,
	// nothing written on the other.
	if err := n.Set(ctx, c.keys(names[0]).lock, "someone-else.1", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if got := run("acquire over a held name", ls.acquireRequest(barge, v1)); taken(parseTake(got.(string))) {
		t.Errorf("acquire over a held name = %v; want refused", got)
	}
	if got := values(); got != [2]string{"someone-else.1", ""} {
		t.Errorf("after a refused acquire: %v; want nothing written", got)
	}
	n.Del(ctx, c.keys(names[0]).lock)
}
