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
	if _, err := (Handle{}).MarshalText(); err == nil {
		t.Errorf("MarshalText of the zero Handle succeeded; want an error")
	}
}
