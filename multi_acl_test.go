package redlock

import (
	"context"
	"testing"
	"time"
)

// TestMultiACLMinimalUser: a set runs as the README's minimal lock user
// (its scripts call only the commands of that ACL): taken, refused and
// queued behind a plain lock, handed on by the release, extended, released.
func TestMultiACLMinimalUser(t *testing.T) {
	admin := nodes(t, 3)
	users := aclUser(t, admin, "multi-locker", lockUserRules)
	c1, c2 := newTestClient(t, users, patient), newTestClient(t, users, patient)
	ctx := t.Context()
	names := []string{"acl-multi-a", "acl-multi-b"}
	l, err := c1.Acquire(ctx, names[1], time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire as the minimal user = %v", err)
	}
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		m, err := c2.AcquireMulti(wctx, names, time.Minute, nil)
		if err == nil {
			if err = m.Extend(wctx, time.Minute); err == nil {
				err = m.Release(wctx)
			}
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond) // the set queues behind the plain lock
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("AcquireMulti, Extend, Release as the minimal user = %v", err)
	}
	assertNoKeysOf(t, admin, names)
}
