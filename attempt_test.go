package redlock

import (
	"testing"
)

// Tests of reading an attempt's reply (parseGrant).

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  grant
	}{
		{"1:0", grant{ok: true}},
		{"1:18446744073709551615", grant{ok: true, fence: 1<<64 - 1}},
		{"1:9007199254740993", grant{ok: true, fence: 1<<53 + 1}},
		{"0:1500", grant{pttl: 1500, rank: -1}},
		{"0:-1", grant{pttl: -1, rank: -1}},
		{"0:0:3", grant{rank: 3}},
	} {
		if g, err := parseGrant(tc.reply); err != nil || g != tc.want {
			t.Errorf("parseGrant(%q) = %+v, %v; want %+v", tc.reply, g, err, tc.want)
		}
	}
	for _, bad := range []string{"", "1", "1:", "1:-1", "1:x", "2:5", "0", "0:", "0:x", "0:5:", "0:5:x", "0:5:1:2", "OK"} {
		if g, err := parseGrant(bad); err == nil {
			t.Errorf("parseGrant(%q) = %+v; want an error", bad, g)
		}
	}
}

func TestQueueParseGrantRank(t *testing.T) {
	g, err := parseGrant("0:0:2")
	if err != nil || g.ok || g.rank != 2 {
		t.Fatalf("parseGrant(\"0:0:2\") = %+v, %v; want refused at rank 2", g, err)
	}
	g, err = parseGrant("0:500")
	if err != nil || g.ok || g.rank != -1 || g.pttl != 500 {
		t.Fatalf("parseGrant(\"0:500\") = %+v, %v; want refused, not queued, pttl 500", g, err)
	}
}
