package main

import (
	"debug/buildinfo"
	"strings"
	"testing"
)

// TestDemoMoved: the demo is a module of its own; 'redlock demo' and
// 'redlock help demo' say how to run it, on one line, and exit 64, and the
// main usage no longer lists it.
func TestDemoMoved(t *testing.T) {
	for _, args := range [][]string{{"demo"}, {"demo", "--duration", "8s"}, {"help", "demo"}} {
		code, stdout, stderr := execCLI(t, args...)
		if code != exitUsage || stdout != "" || stderr != demoMoved+"\n" || !strings.Contains(stderr, "make demo") {
			t.Errorf("redlock %q = %d, stdout %q, stderr %q; want %d and the one line %q", args, code, stdout, stderr, exitUsage, demoMoved)
		}
	}
	if code, stdout, _ := execCLI(t, "help"); code != 0 || strings.Contains(stdout, "demo") {
		t.Errorf("redlock help = %d:\n%s\nwant 0 and no demo command listed", code, stdout)
	}
}

// TestBinaryLinksNoDocker: the redlock command links the library and
// go-redis, not the test harness's Docker SDK or toxiproxy.
func TestBinaryLinksNoDocker(t *testing.T) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range bi.Deps {
		for _, bad := range []string{"github.com/docker/", "github.com/ory/dockertest", "github.com/Shopify/toxiproxy"} {
			if strings.HasPrefix(dep.Path, bad) {
				t.Errorf("the redlock binary links %s %s; want no Docker or toxiproxy module in it", dep.Path, dep.Version)
			}
		}
	}
}
