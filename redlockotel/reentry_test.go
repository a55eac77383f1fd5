package redlockotel

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// TestOTelNestedHoldsShareToken: the locks of one re-entrant lock (Reenter,
// Resume) share its token; each is timed as a hold of its own, and a
// nested release does not end the outer hold.
func TestOTelNestedHoldsShareToken(t *testing.T) {
	h := newHarness(t)
	ev := func(kind redlock.EventKind, hold string, start, end time.Duration) redlock.Event {
		return redlock.Event{Kind: kind, Name: "n", Token: "T", Hold: hold, Fence: 3,
			Start: at(start), End: at(end), Until: at(end + time.Second), Attempts: 1}
	}
	for _, e := range []redlock.Event{
		ev(redlock.EventAcquire, "", 0, 1*ms),
		ev(redlock.EventAcquire, "nested", 2*ms, 3*ms),
		ev(redlock.EventRelease, "nested", 4*ms, 5*ms),
		ev(redlock.EventRelease, "", 6*ms, 7*ms),
	} {
		h.obs.Observe(context.Background(), e)
	}
	var holds []time.Time
	for _, s := range h.spans.Ended() {
		if s.Name() == "redlock.hold" {
			holds = append(holds, s.EndTime())
		}
	}
	if len(holds) != 2 || !holds[0].Equal(at(5*ms)) || !holds[1].Equal(at(7*ms)) {
		t.Errorf("hold spans ended at %v; want the nested one at %v and the outer one at %v", holds, at(5*ms), at(7*ms))
	}
	if n := h.obs.tracked(); n != 0 {
		t.Errorf("%d holds still timed after both releases; want 0", n)
	}
}
