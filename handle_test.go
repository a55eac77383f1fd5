package redlock

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestHandleText(t *testing.T) {
	h := Handle{name: "orders:42/é", token: newToken(), fence: 1<<63 + 5, reentrant: true}
	b, err := json.Marshal(struct{ H Handle }{h})
	if err != nil {
		t.Fatalf("json.Marshal = %v", err)
	}
	var back struct{ H Handle }
	if err := json.Unmarshal(b, &back); err != nil || back.H != h {
		t.Fatalf("round trip through JSON %s = %+v, %v; want %+v", b, back.H, err, h)
	}
	if s := h.String(); strings.Contains(s, h.token) || !strings.Contains(s, "orders:42") {
		t.Errorf("String() = %q; want the name without the token", s)
	}
	for _, bad := range []string{"", "rlh1.r.1.tok", "rlh2.r.1.tok.bmFtZQ", "rlh1.x.1.tok.bmFtZQ", "rlh1.r.-1.tok.bmFtZQ",
		"rlh1.r.1..bmFtZQ", "rlh1.r.1.tok.!!", "rlh1.r.1.tok." /* empty name */, "rlh1.r.1.tok.e30" /* "{}" */} {
		if _, err := ParseHandle(bad); err == nil || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("ParseHandle(%q) = %v; want a redlock: error", bad, err)
		}
	}
	// What a handle may carry is bounded: Resume sends the token to
	// every node.
	tok := newToken()
	for _, bad := range []string{
		"rlh1.p.1." + strings.Repeat("A", 10<<20) + ".bmFtZQ", // a 10 MiB token
		"rlh1.p.1." + tok + "A.bmFtZQ",                        // one character too many
		"rlh1.p.1." + tok[:21] + "*.bmFtZQ",                   // not base64
		"rlh1.p.1." + tok + "." + strings.Repeat("QUFB", 200), // a 600-byte name
	} {
		if _, err := ParseHandle(bad); err == nil || !strings.HasPrefix(err.Error(), "redlock: ") || len(err.Error()) > 300 {
			t.Errorf("ParseHandle(%.40q…) = %.300v; want a short redlock: error", bad, err)
		}
	}
	if h, err := ParseHandle("rlh1.p.7." + tok + ".bmFtZQ"); err != nil || h.Name() != "name" || h.Fence() != 7 {
		t.Errorf("ParseHandle of a valid handle = %v, %v; want name \"name\", fence 7", h, err)
	}
	if _, err := (Handle{}).MarshalText(); err == nil {
		t.Errorf("MarshalText of the zero Handle succeeded; want an error")
	}
}
