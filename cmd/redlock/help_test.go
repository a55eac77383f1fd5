package main

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHelpTextWraps: every help text reads as filled paragraphs: no line
// longer than 79 characters, and no prose line broken while the next
// word would still have fit (the break help once ended a line on "The").
func TestHelpTextWraps(t *testing.T) {
	for _, cmd := range []string{"", "run", "status", "break", "elect", "leader"} {
		var args []string
		if cmd != "" {
			args = []string{cmd}
		}
		var out strings.Builder
		if code := helpCmd(args, &out, io.Discard); code != exitOK {
			t.Fatalf("help %s = %d", cmd, code)
		}
		text, _, _ := strings.Cut(out.String(), "\nFlags:\n")
		lines := strings.Split(text, "\n")
		for i, line := range lines {
			if n := utf8.RuneCountInString(line); n > 79 {
				t.Errorf("help %s, line %d is %d characters long; want at most 79:\n%s", cmd, i+1, n, line)
			}
			if i+1 == len(lines) {
				continue
			}
			next := lines[i+1]
			if line == "" || next == "" || strings.HasPrefix(line, " ") || strings.HasPrefix(next, " ") {
				continue // paragraph ends, tables and lists
			}
			word, _, _ := strings.Cut(next, " ")
			if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= 72 {
				t.Errorf("help %s, line %d breaks early: %q fits before its next word %q", cmd, i+1, line, word)
			}
		}
	}
}
