// Package cliflags prints the help of the project's commands (redlock and
// the demo) the way the docs write flags: --name for a long flag, -v for a
// one-letter one.
package cliflags

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// SetUsage makes text, then the flags as PrintFlags prints them, fs's
// usage: every command prints its help the same way.
func SetUsage(fs *flag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		PrintFlags(fs.Output(), fs)
	}
}

// PrintFlags prints fs's flags as the docs write them: --name for a long
// flag, -v for a one-letter one, then the flag's value name, and its usage
// and default indented below (flag.PrintDefaults writes -name for both).
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		value, usage := flag.UnquoteUsage(f)
		line := "  " + dash + f.Name
		if value != "" {
			line += " " + value
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" {
			if value == "string" {
				def = fmt.Sprintf("%q", def)
			}
			usage += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
}

// flagNames rewrites the flag package's parse errors to name a long flag as
// the docs do ("flag provided but not defined: --tll").
var flagNames = regexp.MustCompile(`(not defined: |for flag |needs an argument: )-([^-\s:][^\s:]+)`)

// FlagError is err's text with long flags named as the docs name them.
func FlagError(err error) string { return flagNames.ReplaceAllString(err.Error(), "$1--$2") }
