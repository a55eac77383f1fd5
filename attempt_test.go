package redlock

import (
	"strconv"
	"testing"
)

// Tests of reading an attempt's reply (takeOf, parseTake).

// takeText is an acquire script's reply as text, for tests that read it
// so: the common case's integer fence as "1:<fence>", a string as it is.
func takeText(v any) string {
	if n, ok := v.(int64); ok {
		return "1:" + strconv.FormatInt(n, 10)
	}
	s, _ := v.(string)
	return s
}

// The common case answers with an integer, the fence (0 without
// fencing); every other case with a string.
func TestTakeOfIntegerOrString(t *testing.T) {
	for _, tc := range []struct {
		reply any
		want  take
	}{
		{int64(0), take{ok: true}},
		{int64(7), take{ok: true, fence: 7}},
		{int64(1<<53 - 1), take{ok: true, fence: 1<<53 - 1}},
		{"1:9007199254740993", take{ok: true, fence: 1<<53 + 1}},
		{"0:1500", take{pttl: 1500, rank: -1}},
	} {
		if g, err := takeOf(tc.reply); err != nil || g != tc.want {
			t.Errorf("takeOf(%#v) = %+v, %v; want %+v", tc.reply, g, err, tc.want)
		}
	}
	for _, bad := range []any{int64(-1), nil, []any{int64(1)}, "OK"} {
		if g, err := takeOf(bad); err == nil {
			t.Errorf("takeOf(%#v) = %+v; want an error", bad, g)
		}
	}
}

func TestParseTake(t *testing.T) {
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

func TestQueueParseTakeRank(t *testing.T) {
	g, err := parseTake("0:0:2")
	if err != nil || g.ok || g.rank != 2 {
		t.Fatalf("parseTake(\"0:0:2\") = %+v, %v; want refused at rank 2", g, err)
	}
	g, err = parseTake("0:500")
	if err != nil || g.ok || g.rank != -1 || g.pttl != 500 {
		t.Fatalf("parseTake(\"0:500\") = %+v, %v; want refused, not queued, pttl 500", g, err)
	}
}
