package redlock

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A lease's strings, made in one piece, are the ones every other part of
// the client names: the keys, the release channel, the token and the
// values of its attempts.
func TestLeaseStrings(t *testing.T) {
	for _, prefix := range []string{"", "app:", strings.Repeat("p", 300)} {
		testLeaseStrings(t, prefix)
	}
}

func testLeaseStrings(t *testing.T, prefix string) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := newFakeClient(t, 1, &Options{KeyPrefix: prefix})
		for _, name := range []string{"a", "orders:42", strings.Repeat("n", MaxNameLen)} {
			ls := c.newLease(name, 1500*time.Millisecond, leaseSpec{fenced: true})
			p := c.opts.KeyPrefix // DefaultKeyPrefix for ""
			lock := p + "{" + name + "}"
			want := keys{lock: lock, fence: lock + ":fence", queue: lock + ":q", queueTimes: lock + ":qt", meta: lock + ":meta", channel: p + "released:" + lock}
			if ls.keys != want {
				t.Errorf("prefix %q, name %q: lease keys %+v; want %+v", prefix, name, ls.keys, want)
			}
			if key, fenceKey := c.Keys(name); key != want.lock || fenceKey != want.fence || c.keys(name) != want {
				t.Errorf("prefix %q, name %q: Keys = %q, %q, keys = %+v; want %+v", prefix, name, key, fenceKey, c.keys(name), want)
			}
			if len(ls.token) != len(newToken()) || strings.ContainsAny(ls.token, ".:{}") || ls.prefix != ls.token+"." {
				t.Errorf("token %q, prefix %q; want a token like %q and the token and a dot", ls.token, ls.prefix, newToken())
			}
			if ls.ttlArg != "1500" || ls.fenceArg != "1" {
				t.Errorf("ttl argument %q, fence argument %q; want \"1500\", \"1\"", ls.ttlArg, ls.fenceArg)
			}
			for _, attempt := range []int{1, 2, 10} {
				if got, want := ls.value(attempt), ls.token+"."+strconv.Itoa(attempt); got != want {
					t.Errorf("value(%d) = %q; want %q", attempt, got, want)
				}
			}
			// A lease made for another call's token (Resume) makes its
			// values from that token, and keeps its own keys.
			other := c.newLease(name, time.Second, leaseSpec{token: "other"})
			if got := other.value(1); got != "other.1" || other.token != "other" || other.keys != want {
				t.Errorf("a lease of token \"other\": value(1) = %q, token %q, keys %+v; want \"other.1\", \"other\", %+v", got, other.token, other.keys, want)
			}
		}
		if ls := c.newLease("n", time.Second, leaseSpec{}); ls.fenceArg != "0" {
			t.Errorf("unfenced lease: fence argument %q; want \"0\"", ls.fenceArg)
		}
	})
}
