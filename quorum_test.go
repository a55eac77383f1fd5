package redlock

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// Tests of the quorum on real Redis.

func TestAcquireWithMinorityDown(t *testing.T) {
	cl := redlocktest.Start(t, 5, nil)
	for _, i := range []int{3, 4} {
		if err := cl.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	logs := &logSink{}
	rc := newTestClient(t, cl.Clients(), &Options{NodeTimeout: time.Second, Logger: slog.New(logs)})
	l, err := rc.Acquire(t.Context(), "minority", time.Second, nil)
	if err != nil {
		t.Fatalf("Acquire with 3 of 5 up = %v", err)
	}
	// Release returns once 3 nodes deleted; the dead nodes' failures are
	// in its error if they came first, in the log (by Close) otherwise.
	reported := map[int]bool{}
	if err := l.Release(t.Context()); err != nil {
		for _, e := range flattenErrors(err) {
			var ne *NodeError
			if !errors.As(e, &ne) || (ne.Node != 3 && ne.Node != 4) {
				t.Errorf("Release = %v; want only nodes 3 and 4 reported", err)
				continue
			}
			reported[ne.Node] = true
		}
	}
	rc.Close() // waits for the stragglers
	for _, a := range logs.find(msgStraggler) {
		reported[int(a["node"].(int64))] = true
	}
	if !reported[3] || !reported[4] || len(reported) != 2 {
		t.Errorf("nodes reported by Release or the log: %v; want 3 and 4", reported)
	}
	c := newTestClient(t, cl.Clients(), nil)
	cl.Kill(2)
	_, err = c.Acquire(t.Context(), "minority", time.Second, &AcquireOptions{Retry: NoRetry()})
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Agreed != 2 || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire with 2 of 5 up = %v; want a QuorumError with 2 agreed", err)
	}
	for _, s := range []string{"2 of 5 nodes agreed, quorum is 3", cl.Addr(2), cl.Addr(3)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	key, _ := c.Keys("minority")
	assertNoLockKey(t, []redis.UniversalClient{cl.Client(0), cl.Client(1)}, key)
}
