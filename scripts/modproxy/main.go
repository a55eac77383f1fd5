// Command modproxy writes a file-based Go module proxy (GOPROXY=file://DIR)
// holding modules of this repository's working tree at one version, so
// that a consumer can go get them as from a real proxy before they are
// tagged. make consumer-check (scripts/consumer-check.sh) uses it.
//
//	go run . -out DIR -version v0.1.0 MODULEDIR...
//
// For each module directory it writes, under DIR/<escaped module path>/@v/,
// VERSION.info, VERSION.mod (its go.mod), VERSION.zip (the directory's
// files as the go command would zip them: nested modules, vendor and VCS
// directories left out) and list. It is a module of its own, so that
// golang.org/x/mod stays out of the root module's requirements.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy `directory` to write (created if missing)")
	version := flag.String("version", "", "the `version` to publish the modules at, such as v0.1.0")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modproxy -out DIR -version VERSION MODULEDIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || !semver.IsValid(*version) || semver.Canonical(*version) != *version || flag.NArg() == 0 {
		fmt.Fprintf(os.Stderr, "modproxy: want -out DIR, -version vX.Y.Z (a canonical semantic version, got %q) and at least one module directory\n", *version)
		flag.Usage()
		os.Exit(2)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, dir := range flag.Args() {
		path, err := publish(*out, dir, *version, now)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", dir, err)
			os.Exit(1)
		}
		fmt.Printf("modproxy: %s@%s from %s\n", path, *version, dir)
	}
}

// publish writes the module in dir at version into the proxy directory out
// and returns its module path.
func publish(out, dir, version string, at time.Time) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return "", errors.New("go.mod has no module line")
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return "", err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), gomod, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(vdir, "list"), []byte(version+"\n"), 0o644); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return "", err
	}
	if err := zip.CreateFromDir(f, mv, dir); err != nil {
		f.Close()
		return "", fmt.Errorf("zip: %w", err)
	}
	return path, f.Close()
}
