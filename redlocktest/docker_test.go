package redlocktest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/redlocktest"
)

// TestWithoutDocker runs tests and examples of this package in a child test
// process whose DOCKER_HOST points nowhere: without CI they are skipped,
// saying what they need; with CI set the tests fail, naming Docker.
func TestWithoutDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs this test binary again")
	}
	run := func(ci, pattern string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run", pattern, "-test.v", "-test.count=1")
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "DOCKER_HOST=") && !strings.HasPrefix(kv, redlocktest.CIEnv+"=") {
				env = append(env, kv)
			}
		}
		env = append(env, "DOCKER_HOST=unix:///nonexistent/docker.sock")
		if ci != "" {
			env = append(env, redlocktest.CIEnv+"="+ci)
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	contains := func(what, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", what, w, out)
			}
		}
	}

	out, err := run("", "^(TestStartFive|TestDockerUnreachable|Example)$")
	if err != nil {
		t.Errorf("without Docker, CI unset: %v; want success:\n%s", err, out)
	}
	contains("without Docker, CI unset", out,
		"--- SKIP: TestStartFive", "needs Docker for Redis containers (redlocktest)",
		"--- PASS: TestDockerUnreachable", "skipping the examples that need Docker")
	if strings.Contains(out, "=== RUN   Example") {
		t.Errorf("without Docker, CI unset: an example ran; want it skipped:\n%s", out)
	}

	out, err = run("true", "^TestStartFive$")
	if err == nil {
		t.Errorf("without Docker, CI=true: the run passed; want it failed:\n%s", out)
	}
	contains("without Docker, CI=true", out, "--- FAIL: TestStartFive", "Docker is not reachable", "CI is set")
}
