package guard_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock/guard"
	"github.com/redlock-go/redlock/internal/guardtest"
)

func TestInProcessDo(t *testing.T) {
	var g guard.InProcess
	if h := g.Highest("r"); h != 0 {
		t.Errorf("zero guard.InProcess: Highest(%q) = %d; want 0", "r", h)
	}
	boom := errors.New("boom")
	if err := g.Do("r", guardtest.HolderAt(3), func() error { return boom }); err != boom {
		t.Errorf("Do(access failing) = %v; want the access's error as is", err)
	}
	if h := g.Highest("r"); h != 3 {
		t.Errorf("Highest after a failed access = %d; want 3 (the fence stays recorded)", h)
	}
	called := false
	err := g.Do("r", guardtest.HolderAt(2), func() error { called = true; return nil })
	guardtest.AssertStale(t, "Do(fence 2)", err, `"r"`, 2, 3)
	if called {
		t.Errorf("Do(fence 2) called access; want it not called for a stale fence")
	}
	if err := g.Do("r", guardtest.HolderAt(7), nil); err != nil {
		t.Errorf("Do(nil access) = %v; want nil", err)
	}
	if h := g.Highest("r"); h != 7 {
		t.Errorf("Highest after Do(nil access) = %d; want 7", h)
	}
	if err := g.Do("other", guardtest.HolderAt(1), nil); err != nil {
		t.Errorf("Do(%q, fence 1) = %v; want nil: resources are independent", "other", err)
	}
	func() {
		defer func() { recover() }()
		g.Do("r", guardtest.HolderAt(8), func() error { panic("access panics") })
	}()
	done := make(chan error, 1)
	go func() { done <- g.Do("r", guardtest.HolderAt(8), nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Do after a panicking access = %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Do after a panicking access is still waiting; want the lock released by the panic")
	}
	t.Run("BigFences", func(t *testing.T) {
		var val string // the store behind the guard
		guardtest.BigFences(t, `"big"`,
			func(h guard.Holder, v string) error { return g.Do("big", h, func() error { val = v; return nil }) },
			func() (string, uint64, error) { return val, g.Highest("big"), nil })
	})
}
