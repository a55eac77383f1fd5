package redlock

import (
	"testing"
)

// Tests of reading an attempt's reply (parseTake).

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  take
	}{
		{"1:0", take{ok: true}},
		{"1:18446744073709551615", take{ok: true, fence: 1<<64 - 1}},
		{"1:9007199254740993", take{ok: true, fence: 1<<53 + 1}},
		{"0:1500", take{pttl: 1500, rank: -1}},
		{"0:-1", take{pttl: -1, rank: -1}},
		{"0:0:3", take{rank: 3}},
	} {
		if g, err := parseTake(tc.reply); err != nil || g != tc.want {
			t.Errorf("parseTake(%q) = %+v, %v; want %+v", tc.reply, g, err, tc.want)
		}
	}
	for _, bad := range []string{"", "1", "1:", "1:-1", "1:x", "2:5", "0", "0:", "0:x", "0:5:", "0:5:x", "0:5:1:2", "OK"} {
		if g, err := parseTake(bad); err == nil {
			t.Errorf("parseTake(%q) = %+v; want an error", bad, g)
		}
	}
}

func TestQueueParseGrantRank(t *testing.T) {
	g, err := parseTake("0:0:2")
	if err != nil || g.ok || g.rank != 2 {
		t.Fatalf("parseTake(\"0:0:2\") = %+v, %v; want refused at rank 2", g, err)
	}
	g, err = parseTake("0:500")
	if err != nil || g.ok || g.rank != -1 || g.pttl != 500 {
		t.Fatalf("parseTake(\"0:500\") = %+v, %v; want refused, not queued, pttl 500", g, err)
	}
}
