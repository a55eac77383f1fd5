package redlock

import (
	"context"
	"testing"
	"time"
)

// TestACLSemaphoreAndElection: a semaphore's scripts (a permit taken,
// extended, waited for at the gate, released; InspectPermits) and an
// election's (Campaign's announce, Leader, Observe) run under the README's
// minimal ACL.
func TestACLSemaphoreAndElection(t *testing.T) {
	admin := nodes(t, 3)
	users := aclUser(t, admin, "permits", lockUserRules)
	c, other := newTestClient(t, users, patient), newTestClient(t, users, patient)
	ctx := t.Context()

	p, err := c.AcquirePermit(ctx, "acl-sem", 1, time.Minute, nil)
	if err != nil {
		t.Fatalf("AcquirePermit as the minimal user = %v", err)
	}
	if err := p.Extend(ctx, 2*time.Minute); err != nil {
		t.Errorf("Permit.Extend as the minimal user = %v", err)
	}
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q, err := other.AcquirePermit(wctx, "acl-sem", 1, time.Minute, nil)
		if err == nil {
			err = q.Release(wctx)
		}
		got <- err
	}()
	waitUntil(t, "the second permit's call waits at the gate", func() bool {
		st, err := c.InspectPermits(ctx, "acl-sem", 1)
		return err == nil && st.Held == 1 && st.Waiting >= 1
	})
	if err := p.Release(ctx); err != nil {
		t.Fatalf("Permit.Release as the minimal user = %v", err)
	}
	if err := <-got; err != nil {
		t.Errorf("the waiter's permit, as the minimal user = %v; want it after the release", err)
	}

	l, err := c.Campaign(ctx, "acl-elect", time.Minute, "node-a")
	if err != nil {
		t.Fatalf("Campaign as the minimal user = %v", err)
	}
	if info, err := other.Leader(ctx, "acl-elect"); err != nil || !info.Held || info.Value != "node-a" || info.Term != l.Term() {
		t.Errorf("Leader as the minimal user = %+v, %v; want node-a at term %d", info, err, l.Term())
	}
	if err := l.Resign(ctx); err != nil {
		t.Errorf("Resign as the minimal user = %v", err)
	}
}
