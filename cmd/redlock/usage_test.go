package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelpWritesFlagsAsDocs: every subcommand's help, by `redlock help CMD`
// and by `redlock CMD --help`, lists its flags as the docs write them,
// --name (and -v, a one-letter flag), never -name (the built binary).
func TestHelpWritesFlagsAsDocs(t *testing.T) {
	flagLine := regexp.MustCompile(`^  (-+)(\S+)`)
	for _, cmd := range []string{"run", "status", "break", "elect", "leader"} {
		for _, args := range [][]string{{"help", cmd}, {cmd, "--help"}} {
			code, stdout, stderr := execCLI(t, args...)
			if code != exitOK {
				t.Errorf("redlock %v = %d; want 0; stderr %s", args, code, stderr)
				continue
			}
			_, flags, ok := strings.Cut(stdout, "\nFlags:\n")
			if !ok {
				t.Errorf("redlock %v:\n%s\nwant a Flags: section", args, stdout)
				continue
			}
			n := 0
			for _, line := range strings.Split(flags, "\n") {
				m := flagLine.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				n++
				if want := map[bool]string{true: "-", false: "--"}[len(m[2]) == 1]; m[1] != want {
					t.Errorf("redlock %v: flag line %q; want %s%s", args, line, want, m[2])
				}
			}
			if n < 4 || !strings.Contains(flags, "  --nodes URLs\n") {
				t.Errorf("redlock %v flags:\n%s\nwant every flag, --nodes among them", args, flags)
			}
			if semaphore := cmd == "run" || cmd == "status"; semaphore != strings.Contains(flags, "  -n N\n") {
				t.Errorf("redlock %v flags:\n%s\nwant -n N for run and status only", args, flags)
			}
		}
	}
}
