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
			ls := c.newLease(name, 1500*time.Millisecond, true)
			key, fenceKey := c.Keys(name)
			q, qt := queueKeys(key)
			if ls.key != key || ls.fenceKey != fenceKey || ls.queueKey != q || ls.queueTimesKey != qt {
				t.Errorf("prefix %q, name %q: lease keys %q %q %q %q; want %q %q %q %q", prefix, name,
					ls.key, ls.fenceKey, ls.queueKey, ls.queueTimesKey, key, fenceKey, q, qt)
			}
			if want := c.releaseChannel(key); ls.channel != want {
				t.Errorf("prefix %q, name %q: lease channel %q; want %q", prefix, name, ls.channel, want)
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
			// A lease that takes over another call's token (Resume)
			// makes its values from that token.
			ls.token, ls.prefix = "other", "other."
			if got := ls.value(1); got != "other.1" {
				t.Errorf("value(1) after the token changed = %q; want \"other.1\"", got)
			}
		}
		if ls := c.newLease("n", time.Second, false); ls.fenceArg != "0" {
			t.Errorf("unfenced lease: fence argument %q; want \"0\"", ls.fenceArg)
		}
	})
}
