package redlocktest

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// redisImageScript makes sure an image exists: it pulls it, else builds it
// FROM scratch around the host's redis-server (installed with apt-get if
// missing and run as root). scripts/redis-image.sh runs the same file.
//
//go:embed redis-image.sh
var redisImageScript string

// imageMu serializes ensureImage within this process; imageLock, across
// the processes of the machine (go test runs packages in parallel).
var imageMu sync.Mutex

// ensureImage makes sure the image ref exists locally. If it is missing it
// runs redisImageScript once per machine: under a lock file in the
// temporary directory, so that concurrent test processes wait for the
// first one and then find the image. It says what it does on stderr.
func ensureImage(pool *dockertest.Pool, ref string) error {
	present := func() (bool, error) {
		_, err := pool.Client.InspectImage(ref)
		if errors.Is(err, dc.ErrNoSuchImage) {
			return false, nil
		}
		return err == nil, err
	}
	if ok, err := present(); ok || err != nil {
		if err != nil {
			return fmt.Errorf("redlocktest: cannot inspect image %q: %w", ref, err)
		}
		return nil
	}
	imageMu.Lock()
	defer imageMu.Unlock()
	lockPath := filepath.Join(os.TempDir(), "redlocktest-image-"+sanitize(ref)+".lock")
	unlock, err := lockFile(lockPath)
	if err != nil {
		return fmt.Errorf("redlocktest: image %q is missing, and locking %s to build it failed: %w; run scripts/redis-image.sh", ref, lockPath, err)
	}
	defer unlock()
	if ok, err := present(); ok || err != nil { // another process made it
		if err != nil {
			return fmt.Errorf("redlocktest: cannot inspect image %q: %w", ref, err)
		}
		return nil
	}
	fmt.Fprintf(os.Stderr, "redlocktest: image %q is missing; pulling it, else building it FROM scratch from the host's redis-server (once per machine, up to a few minutes)...\n", ref)
	cmd := exec.Command("bash", "-s")
	cmd.Stdin = strings.NewReader(redisImageScript)
	cmd.Env = append(os.Environ(), ImageEnv+"="+ref)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("redlocktest: image %q is missing and could not be pulled or built: %w\n%s\nbuild it by hand with scripts/redis-image.sh (REDLOCK_REDIS_IMAGE=%s), or set %s to an image you have",
			ref, err, strings.TrimSpace(out.String()), ref, ImageEnv)
	}
	fmt.Fprintf(os.Stderr, "%s\n", strings.TrimSpace(out.String()))
	if ok, err := present(); !ok {
		return fmt.Errorf("redlocktest: image %q still missing after scripts/redis-image.sh said %q (inspect: %v)", ref, strings.TrimSpace(out.String()), err)
	}
	return nil
}

// sanitize makes s usable in a file name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// splitImage splits "repository[:tag]" as dockertest.RunOptions wants it.
func splitImage(image string) (repo, tag string, err error) {
	if strings.Contains(image, "@") {
		return "", "", fmt.Errorf("redlocktest: image %q: digest references are not supported; tag the image and use the tag", image)
	}
	repo, tag = image, "latest"
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, tag = image[:i], image[i+1:]
	}
	if repo == "" || tag == "" {
		return "", "", fmt.Errorf("redlocktest: invalid image reference %q", image)
	}
	return repo, tag, nil
}
