package redlocktest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
)

// CIEnv is the environment variable that turns a missing Docker from a
// skip into a failure: when it is set (to anything but ""), as CI services
// set it, the tests that need Docker fail instead of skipping.
const CIEnv = "CI"

// dockerPool returns a Docker client for the daemon that DOCKER_HOST names
// (the local socket when unset), once it has answered a ping. If the ping
// fails, the client is returned with the error.
func dockerPool() (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("redlocktest: cannot create a Docker client (check DOCKER_HOST): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(ctx); err != nil {
		return pool, fmt.Errorf("redlocktest: Docker is not reachable at %s (is the Docker daemon running? set DOCKER_HOST to use another one): %w",
			pool.Client.Endpoint(), err)
	}
	return pool, nil
}

// docker is the answer of the first reachability check of the process.
var docker struct {
	once sync.Once
	err  error  // nil: Docker answered
	why  string // err in a few words, for skip messages
}

// dockerErr returns why Docker is unreachable (nil if it answers) and the
// same in a few words. Only the first call asks Docker.
func dockerErr() (why string, err error) {
	docker.once.Do(func() {
		pool, err := dockerPool()
		docker.err, docker.why = err, fmt.Sprint(err)
		if err != nil && pool != nil {
			docker.why = "nothing answers at " + pool.Client.Endpoint()
		}
	})
	return docker.why, docker.err
}

// RequireDocker skips the test, with one line saying what it needs and how
// to run it, if Docker is unreachable; with the environment variable CI set
// ([CIEnv]) it fails the test instead, naming Docker, since CI must never
// skip the tests that need containers. Docker is asked once per process.
//
// [Start], [StartTLS], [StartSentinel], [StartRedisCluster] and
// [Shared.Cluster] call it first. Call it in tests that call New (or
// NewTLS, NewSentinel, NewRedisCluster) themselves.
func RequireDocker(tb testing.TB) {
	tb.Helper()
	why, err := dockerErr()
	if err == nil {
		return
	}
	if os.Getenv(CIEnv) != "" {
		tb.Fatalf("%v; %s is set, so a test that needs Docker fails instead of skipping", err, CIEnv)
	}
	tb.Skipf("needs Docker for Redis containers (redlocktest), and %s; start Docker (or set DOCKER_HOST), or run make test", why)
}

// SkipExamplesWithoutDocker is for the TestMain of a package whose examples
// start containers: an example cannot skip itself. If Docker is
// unreachable and CI ([CIEnv]) is not set, it adds pattern to the
// -test.skip flag, so that the examples matching it do not run, and prints
// one line saying so. It parses the command line if m.Run has not yet;
// call it before m.Run. With Docker up, or CI set, it does nothing (without
// Docker, those examples then fail).
func SkipExamplesWithoutDocker(pattern string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	why, err := dockerErr()
	if err == nil || os.Getenv(CIEnv) != "" {
		return
	}
	skip := flag.Lookup("test.skip")
	if skip == nil {
		return
	}
	if old := skip.Value.String(); old != "" {
		pattern = old + "|" + pattern
	}
	if err := skip.Value.Set(pattern); err != nil {
		fmt.Fprintf(os.Stderr, "redlocktest: -test.skip %q: %v\n", pattern, err)
		return
	}
	fmt.Printf("skipping the examples that need Docker for Redis containers (redlocktest), as %s; start Docker (or set DOCKER_HOST), or run make test\n", why)
}

// Shared is a [Cluster] that the tests of a package share, started on
// first use, so that the tests that need no container run without Docker.
// Declare it as a package variable with N set (Options may be nil), get it
// with Cluster in each test, and run the tests with Run, which closes it:
//
//	var shared = redlocktest.Shared{N: 3}
//
//	func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }
//
// Its methods are safe for concurrent use. A Shared must not be copied.
type Shared struct {
	N       int      // the number of nodes
	Options *Options // for New; nil means defaults

	mu      sync.Mutex // protects the fields below; held while the cluster starts
	started bool       // New was called
	c       *Cluster   // nil if New failed
	err     error      // New's error
}

// Cluster returns the shared cluster, starting it on the first call. It
// skips tb if Docker is unreachable (fails it with CI set), as
// [RequireDocker] does, and fails tb if the cluster does not start: then
// every later call fails too, with the same error.
func (s *Shared) Cluster(tb testing.TB) *Cluster {
	tb.Helper()
	RequireDocker(tb)
	s.mu.Lock()
	if !s.started {
		s.started = true
		s.c, s.err = New(s.N, s.Options)
	}
	c, err := s.c, s.err
	s.mu.Unlock()
	if err != nil {
		tb.Fatalf("starting the shared Redis containers: %v", err)
	}
	return c
}

// Run runs the tests (m.Run), then closes the cluster if a test started it,
// and returns the exit code for os.Exit: m.Run's, or 1 if the tests passed
// but Close failed (its error is printed on stderr).
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if err := s.Close(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// Close closes the cluster if a test started it.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
