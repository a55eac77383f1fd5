package redlock

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHandleText(t *testing.T) {
	for _, h := range []Handle{
		{name: "orders:42/é", token: newToken(), fence: 1<<63 + 5, kind: 'r'},
		{name: "orders:42", token: newToken(), attempt: 17, fence: 3, kind: 'p'},
		{name: "orders:42", token: newToken(), attempt: 0, fence: 3, kind: 'p'}, // won through the releases' grants
		{name: "orders:42", token: newToken(), attempt: 2, fence: 3, kind: 'm'}, // with metadata
	} {
		b, err := json.Marshal(struct{ H Handle }{h})
		if err != nil {
			t.Fatalf("json.Marshal = %v", err)
		}
		var back struct{ H Handle }
		if err := json.Unmarshal(b, &back); err != nil || back.H != h {
			t.Fatalf("round trip through JSON %s = %+v, %v; want %+v", b, back.H, err, h)
		}
	}
	h := Handle{name: "orders:42/é", token: newToken(), fence: 1<<63 + 5, kind: 'r'}
	if s := h.String(); strings.Contains(s, h.token) || !strings.Contains(s, "orders:42") {
		t.Errorf("String() = %q; want the name without the token", s)
	}
	tok := newToken()
	for _, bad := range []string{"", "rlh2.r.1.tok", "rlh3.r.1.tok.0.bmFtZQ", "rlh2.x.1.tok.0.bmFtZQ", "rlh2.r.-1.tok.0.bmFtZQ",
		"rlh2.r.1..0.bmFtZQ", "rlh2.r.1.tok.0.!!", "rlh2.r.1.tok.0." /* empty name */, "rlh2.r.1.tok.0.e30", /* "{}" */
		"rlh2.p.1." + tok + ".-1.bmFtZQ", "rlh2.p.1." + tok + ".01.bmFtZQ", "rlh2.p.1." + tok + ".x.bmFtZQ",
		"rlh2.r.1." + tok + ".2.bmFtZQ", /* a re-entrant handle has no attempt */
		"rlh1.p.7." + tok + ".bmFtZQ" /* version 1: no winning attempt */} {
		if _, err := ParseHandle(bad); err == nil || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("ParseHandle(%q) = %v; want a redlock: error", bad, err)
		}
	}
	// What a handle may carry is bounded: Resume sends the token to
	// every node.
	for _, bad := range []string{
		"rlh2.p.1." + strings.Repeat("A", 10<<20) + ".1.bmFtZQ", // a 10 MiB token
		"rlh2.p.1." + tok + "A.1.bmFtZQ",                        // one character too many
		"rlh2.p.1." + tok[:21] + "*.1.bmFtZQ",                   // not base64
		"rlh2.p.1." + tok + ".1." + strings.Repeat("QUFB", 200), // a 600-byte name
	} {
		if _, err := ParseHandle(bad); err == nil || !strings.HasPrefix(err.Error(), "redlock: ") || len(err.Error()) > 300 {
			t.Errorf("ParseHandle(%.40q…) = %.300v; want a short redlock: error", bad, err)
		}
	}
	if h, err := ParseHandle("rlh2.p.7." + tok + ".3.bmFtZQ"); err != nil || h.Name() != "name" || h.Fence() != 7 || h.attempt != 3 {
		t.Errorf("ParseHandle of a valid handle = %v, %v; want name \"name\", fence 7", h, err)
	}
	if _, err := (Handle{}).MarshalText(); err == nil {
		t.Errorf("MarshalText of the zero Handle succeeded; want an error")
	}
}
