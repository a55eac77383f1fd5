package redlock

import (
	"context"
	"testing"
	"time"
)

// TestReadWriteMinimalACL: the README's minimal ACL suffices for both sides
// of a read-write lock, their waits, Inspect and ForceRelease: every call
// the shared scripts make is one the ACL allows.
func TestReadWriteMinimalACL(t *testing.T) {
	admin := cluster(t).Clients()[:3]
	users := aclUser(t, admin, "rwlocker", lockUserRules)
	name := "rw-acl"
	c1 := newTestClient(t, users, nil)
	c2 := newTestClient(t, users, nil)
	r1, err := c1.AcquireShared(t.Context(), name, 10*time.Second, &AcquireOptions{Metadata: "acl reader"})
	if err != nil {
		t.Fatalf("AcquireShared under the minimal ACL = %v", err)
	}
	r2, err := c2.AcquireShared(t.Context(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatalf("second AcquireShared under the minimal ACL = %v", err)
	}
	if err := r1.Extend(t.Context(), 10*time.Second); err != nil {
		t.Fatalf("Extend(reader) under the minimal ACL = %v", err)
	}
	wch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return c2.Acquire(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, c1, name, 1)
	rch := acquireAsync(t, func(ctx context.Context) (*Lock, error) { return c1.AcquireShared(ctx, name, 10*time.Second, nil) })
	waitForWaiters(t, c1, name, 2)
	st, err := c1.Inspect(t.Context(), name)
	meta := map[string]string{}
	for _, r := range st.ReaderList {
		meta[r.Token] = r.Metadata
	}
	if err != nil || !st.Shared || st.Readers != 2 || meta[r1.Token()] != "acl reader" {
		t.Fatalf("Inspect under the minimal ACL = %+v, %v; want 2 readers, one with metadata \"acl reader\"", st, err)
	}
	for _, r := range []*Lock{r1, r2} {
		if err := r.Release(t.Context()); err != nil {
			t.Fatalf("Release(reader) under the minimal ACL = %v", err)
		}
	}
	w := within(t, wch, 2*time.Second, "Acquire under the minimal ACL after the readers released")
	if err := w.l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	within(t, rch, 2*time.Second, "AcquireShared under the minimal ACL after the writer released")
	if _, err := c1.ForceRelease(t.Context(), name); err != nil {
		t.Fatalf("ForceRelease of readers under the minimal ACL = %v", err)
	}
}
