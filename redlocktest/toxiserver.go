package redlocktest

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// The toxiproxy-server process behind the proxies of a Net, and the binary
// it runs. redlocktest drives the server through its HTTP API (package
// github.com/Shopify/toxiproxy/v2/client, standard library only) so that
// importing redlocktest does not pull the server's dependencies into the
// builds of the modules that use it.

const (
	// toxiproxyModule is the module of the server and of its client package.
	toxiproxyModule = "github.com/Shopify/toxiproxy/v2"
	// toxiproxyVersion is the version of toxiproxyModule in go.mod: the
	// server runs the same version as the client package. (A test binary
	// carries no dependency versions to read it from at run time.)
	toxiproxyVersion = "v2.12.0"
	// toxiproxyBinary is the server's name on PATH and in the cache.
	toxiproxyBinary = "toxiproxy-server"

	serverStartWait = 10 * time.Second      // until the API answers
	serverPoll      = 10 * time.Millisecond // readiness polling interval
	serverProbeWait = time.Second           // for one readiness probe
	serverLogTail   = 2048                  // bytes of the server's log in errors
)

// toxiServer is a running toxiproxy-server process with its HTTP API on a
// free port of 127.0.0.1. It is owned by one Net, which stops it in Close.
type toxiServer struct {
	api *toxiclient.Client
	cmd *exec.Cmd
	dir string // temporary: the server's config and log; removed by stop

	exited  chan struct{} // closed by the waiter goroutine when the process is gone
	waitErr error         // cmd.Wait's result; read only after exited is closed
}

// startToxiServer starts a toxiproxy-server process and waits until its API
// answers. Where the port it was given is taken by the time the server
// listens, it tries again on another one.
func startToxiServer() (*toxiServer, error) {
	bin, err := toxiproxyServer()
	if err != nil {
		return nil, err
	}
	var errs []error
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("finding a free port for the toxiproxy-server: %w", err)
		}
		s, retry, err := tryToxiServer(bin, port)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		if !retry {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// tryToxiServer starts the server with its API on port of 127.0.0.1.
// retry says whether it failed because the port is taken.
func tryToxiServer(bin, port string) (s *toxiServer, retry bool, err error) {
	dir, err := os.MkdirTemp("", "redlocktest-toxiproxy-")
	if err != nil {
		return nil, false, fmt.Errorf("creating the toxiproxy-server's temporary directory: %w", err)
	}
	// The config makes one disabled proxy with a random name: only this
	// process answers for it, not another server that took the port.
	marker := "redlocktest-" + randomHex(8)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, fmt.Appendf(nil, `[{"name":%q,"listen":"127.0.0.1:0","upstream":"127.0.0.1:9","enabled":false}]`, marker), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, false, fmt.Errorf("writing the toxiproxy-server's config: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, false, fmt.Errorf("creating the toxiproxy-server's log: %w", err)
	}
	defer logf.Close() // the process has its own descriptor
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", port, "-config", config)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=error")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, false, fmt.Errorf("starting %s: %w", bin, err)
	}
	s = &toxiServer{
		api:    toxiclient.NewClient("127.0.0.1:" + port),
		cmd:    cmd,
		dir:    dir,
		exited: make(chan struct{}),
	}
	go func() { // owner: s; stop: s.stop kills the process; join: <-s.exited
		defer close(s.exited)
		s.waitErr = cmd.Wait()
	}()

	deadline := time.Now().Add(serverStartWait)
	probe := &http.Client{Timeout: serverProbeWait, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		log := s.log()
		switch {
		case strings.Contains(log, "address already in use"):
			s.stop()
			return nil, true, fmt.Errorf("toxiproxy-server: port %s of 127.0.0.1 is taken", port)
		case s.gone():
			s.stop()
			return nil, false, fmt.Errorf("toxiproxy-server (%s) exited at start: %v\n%s", bin, s.waitErr, log)
		case serves(probe, "http://127.0.0.1:"+port+"/proxies/"+marker):
			return s, false, nil
		case time.Now().After(deadline):
			s.stop()
			return nil, false, fmt.Errorf("toxiproxy-server (%s) did not answer on 127.0.0.1:%s within %v; its log:\n%s", bin, port, serverStartWait, log)
		}
		time.Sleep(serverPoll)
	}
}

// serves reports whether url answers 200 OK within the probe's timeout.
// (The API client's own timeout is 30s: too long for a port taken by a
// process that accepts and never answers.)
func serves(probe *http.Client, url string) bool {
	resp, err := probe.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// gone reports whether the process has exited.
func (s *toxiServer) gone() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// log returns the tail of the server's log (its errors: LOG_LEVEL=error).
func (s *toxiServer) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > serverLogTail {
		b = b[len(b)-serverLogTail:]
	}
	return strings.TrimSpace(string(b))
}

// explain adds to err, an error of the API, what became of the process if
// it is no longer running.
func (s *toxiServer) explain(err error) error {
	if err == nil || !s.gone() {
		return err
	}
	return fmt.Errorf("%w (the toxiproxy-server process has exited: %v; create a new Net)\n%s", err, s.waitErr, s.log())
}

// stop kills the process, which closes every proxy and connection, waits
// for it, and removes its temporary directory. stop is called once.
func (s *toxiServer) stop() {
	_ = s.cmd.Process.Kill() // fails only if it has already exited
	<-s.exited
	os.RemoveAll(s.dir)
}

// toxiproxyServer returns the path of a toxiproxy-server binary of
// toxiproxyVersion, building it at most once per process (see findServer).
var toxiproxyServer = sync.OnceValues(func() (string, error) {
	return findServer(toxiproxyVersion)
})

// findServer returns a toxiproxy-server binary of version: the one on PATH
// if it is that version, else the one in the user's cache, which it builds
// with `go install` from the module proxy when missing. Concurrent test
// processes wait for the first one's build under a lock file, and the
// binary appears under its final name only once complete.
func findServer(version string) (string, error) {
	if bin, err := exec.LookPath(toxiproxyBinary); err == nil && serverIs(bin, version) {
		return bin, nil
	}
	dir, err := serverCacheDir(version)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, toxiproxyBinary+exeSuffix())
	if serverIs(bin, version) {
		return bin, nil
	}
	unlock, err := lockFile(bin + ".lock")
	if err != nil {
		return "", fmt.Errorf("locking %s.lock to build toxiproxy-server: %w; %s", bin, err, serverHelp(version))
	}
	defer unlock()
	if serverIs(bin, version) { // another process built it
		return bin, nil
	}
	if err := buildServer(version, dir, bin); err != nil {
		return "", err
	}
	if !serverIs(bin, version) {
		return "", fmt.Errorf("%s was built but does not report version %s; remove it and run again", bin, version)
	}
	return bin, nil
}

// serverCacheDir returns, creating it, the directory of the cached server
// of version: os.UserCacheDir()/redlocktest/toxiproxy-server-VERSION.
func serverCacheDir(version string) (string, error) {
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	dir := filepath.Join(root, "redlocktest", toxiproxyBinary+"-"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache directory of toxiproxy-server: %w; make it writable or %s", err, serverHelp(version))
	}
	return dir, nil
}

// serverIs reports whether bin runs and says it is toxiproxy-server of
// version ("toxiproxy-server version 2.12.0").
func serverIs(bin, version string) bool {
	out, err := exec.Command(bin, "-version").Output()
	if err != nil {
		return false
	}
	got := strings.TrimPrefix(strings.TrimSpace(string(out)), toxiproxyBinary+" version ")
	return strings.TrimPrefix(got, "v") == strings.TrimPrefix(version, "v")
}

// serverHelp says how to provide toxiproxy-server of version by hand.
func serverHelp(version string) string {
	return fmt.Sprintf("put on PATH a toxiproxy-server whose `toxiproxy-server -version` says %s: "+
		"a release of github.com/Shopify/toxiproxy, or the binary `go %s` installs as server, renamed",
		strings.TrimPrefix(version, "v"), strings.Join(installArgs(version), " "))
}

// installArgs is the go command that builds toxiproxy-server of version,
// stamped with its version as the releases are.
func installArgs(version string) []string {
	return []string{"install", "-trimpath",
		"-ldflags=-X=" + toxiproxyModule + ".Version=" + strings.TrimPrefix(version, "v"),
		toxiproxyModule + "/cmd/server@" + version}
}

// buildServer builds toxiproxy-server of version with the go command into
// a temporary directory inside dir and renames it to bin, so that no
// process ever sees a partial binary.
func buildServer(version, dir, bin string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("toxiproxy-server %s is missing, and the go command that builds it is not on PATH; put go on PATH, or %s", version, serverHelp(version))
	}
	tmp, err := os.MkdirTemp(dir, ".install-")
	if err != nil {
		return fmt.Errorf("building toxiproxy-server: %w", err)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(os.Stderr, "redlocktest: building toxiproxy-server %s into %s with go install (once per machine, up to a few minutes)...\n", version, dir)
	cmd := exec.Command(goCmd, installArgs(version)...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(),
		"GOBIN="+tmp, "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0",
		"GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("toxiproxy-server %s is missing, and `go %s` failed: %w\n%s\nlet the go command reach the module proxy (GOPROXY) once, or %s",
			version, strings.Join(installArgs(version), " "), err, strings.TrimSpace(out.String()), serverHelp(version))
	}
	if err := os.Rename(filepath.Join(tmp, "server"+exeSuffix()), bin); err != nil {
		return fmt.Errorf("installing the built toxiproxy-server as %s: %w", bin, err)
	}
	return nil
}

// exeSuffix is the suffix of executables on this system.
func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
