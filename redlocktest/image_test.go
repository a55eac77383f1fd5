package redlocktest_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// TestImageBuilt checks that New makes a missing image itself, and that its
// nodes speak TLS. It builds a
// throwaway image (minutes on a slow machine), so it runs only with
// REDLOCK_TEST_IMAGE_BUILD=1.
func TestImageBuilt(t *testing.T) {
	if os.Getenv("REDLOCK_TEST_IMAGE_BUILD") != "1" {
		t.Skip("set REDLOCK_TEST_IMAGE_BUILD=1 to build a throwaway Redis image")
	}
	ref := "redlocktest-selfbuilt:" + time.Now().Format("20060102150405")
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", "-f", ref).Run() })
	if exec.Command("docker", "image", "inspect", ref).Run() == nil {
		t.Fatalf("image %s exists before the test; want it missing", ref)
	}
	c := redlocktest.Start(t, 1, &redlocktest.Options{Image: ref})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on a node of the built image = %v; want nil", err)
	}
	if err := exec.Command("docker", "image", "inspect", ref).Run(); err != nil {
		t.Errorf("image %s after New: %v; want it present", ref, err)
	}
	// The image carries the TLS libraries redis-server links.
	tc := redlocktest.StartTLS(t, 1, &redlocktest.TLSOptions{Options: redlocktest.Options{Image: ref}})
	if err := tc.Clients()[0].Ping(ctx).Err(); err != nil {
		t.Errorf("PING over TLS on a node of the built image = %v; want nil", err)
	}
}
