package redlock

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/transport"
)

// TestAnnounceMatchesTheWonValue: the announce records a leader's term
// only on a node that holds what the leader's lease counts (the value it
// won, or its call's grant), as extend matches it: not on a node where a
// failed attempt of its Campaign left a stray value (issue 28; docs/design.md,
// "What a lease counts"), nor on another owner's key or a hash.
func TestAnnounceMatchesTheWonValue(t *testing.T) {
	rdb := nodes(t, 1)[0]
	ctx := t.Context()
	c := newTestClient(t, []redis.UniversalClient{rdb}, nil)
	ls := c.newLease("announce-won", 10*time.Second, leaseSpec{form: formMeta, fenced: true, meta: "me"})
	k, won := ls.keys, ls.counted(2)
	for _, tc := range []struct {
		key  string // the lock key's value; "" none; "hash" a hash
		want bool
	}{
		{ls.value(2), true},       // the value the lease won
		{ls.value(0), true},       // the call's grant
		{ls.value(1), false},      // a failed attempt's stray value
		{ls.value(3), false},      // a later attempt's (none of the lease's)
		{"other.2", false},        // another owner's
		{"", false},               // none
		{"hash", false},           // the re-entrant form
		{ls.token + ".20", false}, // an attempt that starts with the won value
	} {
		rdb.Del(ctx, k.lock, k.meta)
		switch tc.key {
		case "":
		case "hash":
			rdb.HSet(ctx, k.lock, "rl-owner", ls.token)
			rdb.PExpire(ctx, k.lock, time.Minute)
		default:
			rdb.Set(ctx, k.lock, tc.key, time.Minute)
		}
		r := sendRound(ctx, c, ls.announceRequest("7", won), &transport.Spec[int64]{PerNode: time.Second, Parse: int64Reply, Accept: anyAnswer[int64]})
		n, err := r.Replies[0].Val, r.Replies[0].Err
		if err != nil {
			t.Fatalf("announce over %q: %v", tc.key, err)
		}
		meta := rdb.Get(ctx, k.meta).Val()
		if got := n >= 0; got != tc.want || got != (meta != "") {
			t.Errorf("announce over %q with the lease won as %q = %d, meta %q; want recorded %v", tc.key, won, n, meta, tc.want)
		}
	}
	rdb.Del(ctx, k.lock, k.meta)
}
