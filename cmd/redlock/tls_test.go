package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/redlocktest"
)

// TestTLSRun runs the built binary against nodes that accept only TLS and
// require a client certificate.
func TestTLSRun(t *testing.T) {
	tc := redlocktest.StartTLS(t, 3, &redlocktest.TLSOptions{ClientAuth: true})
	files, err := tc.Certs().WriteFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nodes := strings.Join(tc.URLs(), ",")
	name := lockName(t)
	printFence := []string{name, "--", "sh", "-c", `echo "$REDLOCK_FENCE"`}

	fence := func(code int, stdout, stderr string) uint64 {
		t.Helper()
		f, err := strconv.ParseUint(strings.TrimSpace(stdout), 10, 64)
		if code != 0 || err != nil || f == 0 {
			t.Fatalf("run over rediss:// = %d, REDLOCK_FENCE %q; want 0 and a fence; stderr:\n%s", code, stdout, stderr)
		}
		return f
	}
	// The files as flags, then from the environment.
	first := fence(execCLI(t, append([]string{"run", "--nodes", nodes,
		"--cacert", files.CA, "--cert", files.ClientCert, "--key", files.ClientKey}, printFence...)...))
	p := startCLIEnv(t, []string{
		nodesEnv + "=" + nodes,
		"REDLOCK_CACERT=" + files.CA, "REDLOCK_CERT=" + files.ClientCert, "REDLOCK_KEY=" + files.ClientKey,
	}, append([]string{"run"}, printFence...)...)
	second := fence(p.wait(t), p.stdout.String(), p.stderr.String())
	if second <= first {
		t.Errorf("fences of two runs = %d, %d; want increasing", first, second)
	}

	other, err := redlocktest.NewCerts("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := other.WriteFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"wrong CA", []string{"--nodes", nodes, "--cacert", wrong.CA, "--cert", files.ClientCert, "--key", files.ClientKey},
			exitUnavailable, []string{"only 0 of 3 nodes reachable", "not signed by a CA in --cacert", "give the CA that signed it"}},
		{"no CA", []string{"--nodes", nodes, "--cert", files.ClientCert, "--key", files.ClientKey},
			exitUnavailable, []string{"only 0 of 3 nodes reachable", "give the CA that signed it with --cacert"}},
		{"no client certificate", []string{"--nodes", nodes, "--cacert", files.CA},
			exitUnavailable, []string{"requires a client certificate: give --cert and --key"}},
		{"TLS files for redis://", []string{"--nodes", "redis://" + tc.Addrs()[0], "--cacert", files.CA},
			exitUsage, []string{"this node is not TLS: use rediss://"}},
		{"missing CA file", []string{"--nodes", nodes, "--cacert", filepath.Join(t.TempDir(), "none.pem")},
			exitUsage, []string{"--cacert", "no such file", "give the PEM file of the CA"}},
		{"CA file not PEM", []string{"--nodes", nodes, "--cacert", files.ClientKey},
			exitUsage, []string{"holds no PEM certificate"}},
		{"cert without key", []string{"--nodes", nodes, "--cacert", files.CA, "--cert", files.ClientCert},
			exitUsage, []string{"--cert and --key go together"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			args := append(append([]string{"run"}, tt.args...), name, "--", "touch", marker)
			code, _, stderr := execCLI(t, args...)
			if code != tt.code {
				t.Errorf("exit code %d; want %d; stderr:\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr = %q; want it to contain %q", stderr, w)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran without the lock")
			}
		})
	}
}
