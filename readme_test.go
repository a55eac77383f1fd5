package redlock

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Tests that keep README.md true to what it copies: the bench figures
// (from BENCHMARKS.md, which make bench writes) and redlockotel's metrics.

// benchFigure is a figure the README copies from BENCHMARKS.md:
// <!--bench SECTION|ROW|COLUMN-->VALUE<!--/bench-->, SECTION one of S1..S7
// (the scenario's table) or "ratios" (the table of ratios), COLUMN a
// header, "#2" for its second occurrence.
var benchFigure = regexp.MustCompile(`<!--bench ([^>]*?)-->(.*?)<!--/bench-->`)

// benchRange is the README naming the scenarios' range, S1-SN.
var benchRange = regexp.MustCompile(`\bS1-S\d+\b`)

// TestReadmeBenchFigures: every figure the README copies from
// BENCHMARKS.md is the one there. make bench copies the new figures into
// the README with REDLOCK_README_FIGURES=update.
func TestReadmeBenchFigures(t *testing.T) {
	readme := readFile(t, "README.md")
	bench := parseBenchmarks(readFile(t, "BENCHMARKS.md"))
	figures := benchFigure.FindAllStringSubmatch(readme, -1)
	if len(figures) < 10 {
		t.Fatalf("README.md has %d <!--bench ...--> figures; want the S6 and S7 ones at least", len(figures))
	}
	scenarios := bench.scenarios()
	for _, r := range benchRange.FindAllString(readme, -1) {
		if r != scenarios {
			t.Errorf("README.md names the scenarios %s; BENCHMARKS.md has %s", r, scenarios)
		}
	}
	update := os.Getenv("REDLOCK_README_FIGURES") == "update" // make bench
	for _, f := range figures {
		ref, shown := strings.Join(strings.Fields(f[1]), " "), f[2]
		want, err := bench.figure(ref)
		switch {
		case err != nil:
			t.Errorf("README.md figure %q: %v", ref, err)
		case shown != want && update:
			readme = strings.Replace(readme, f[0], "<!--bench "+f[1]+"-->"+want+"<!--/bench-->", 1)
		case shown != want:
			t.Errorf("README.md shows %q for %s; BENCHMARKS.md has %q: run make bench, which copies them (or REDLOCK_README_FIGURES=update go test -run TestReadmeBenchFigures .)", shown, ref, want)
		}
	}
	if update && !t.Failed() {
		if err := os.WriteFile("README.md", []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// benchTables are BENCHMARKS.md's tables by section: "S1".."S7" and
// "ratios", each its rows of cells, the header first.
type benchTables map[string][][]string

func parseBenchmarks(md string) benchTables {
	tables := benchTables{}
	section := ""
	for line := range strings.SplitSeq(md, "\n") {
		switch {
		case strings.HasPrefix(line, "### S"):
			section, _, _ = strings.Cut(strings.TrimPrefix(line, "### "), ":")
		case strings.HasPrefix(line, "## This library against the floor and redsync"):
			section = "ratios"
		case strings.HasPrefix(line, "#"):
			section = ""
		case section != "" && strings.HasPrefix(line, "|"):
			if strings.HasPrefix(line, "|---") {
				continue
			}
			var cells []string
			for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			tables[section] = append(tables[section], cells)
		case section != "" && line == "" && len(tables[section]) > 0:
			section = "" // the section's first table ended
		}
	}
	return tables
}

// scenarios is the range of the scenarios' tables: S1-SN.
func (b benchTables) scenarios() string {
	n := 0
	for s := range b {
		if k, err := strconv.Atoi(strings.TrimPrefix(s, "S")); err == nil {
			n = max(n, k)
		}
	}
	return fmt.Sprintf("S1-S%d", n)
}

// figure returns the cell ref names ("S7|redlock (fenced)|pairs/s").
func (b benchTables) figure(ref string) (string, error) {
	parts := strings.Split(ref, "|")
	if len(parts) != 3 {
		return "", fmt.Errorf("want SECTION|ROW|COLUMN")
	}
	rows := b[parts[0]]
	if len(rows) == 0 {
		return "", fmt.Errorf("BENCHMARKS.md has no table for %q", parts[0])
	}
	col, nth := parts[2], 1
	if c, n, ok := strings.Cut(col, "#"); ok {
		col, nth = c, int(n[0]-'0')
	}
	ci := -1
	for i, h := range rows[0] {
		if h == col {
			if nth--; nth == 0 {
				ci = i
				break
			}
		}
	}
	if ci < 0 {
		return "", fmt.Errorf("BENCHMARKS.md's %s table has no column %q", parts[0], parts[2])
	}
	for _, r := range rows[1:] {
		if r[0] == parts[1] && ci < len(r) {
			return r[ci], nil
		}
	}
	return "", fmt.Errorf("BENCHMARKS.md's %s table has no row %q", parts[0], parts[1])
}

// TestReadmeListsEveryMetric: the README's list of redlockotel's metrics
// names every instrument the observer creates.
func TestReadmeListsEveryMetric(t *testing.T) {
	readme := readFile(t, "README.md")
	src := readFile(t, "redlockotel/observer.go")
	names := regexp.MustCompile(`m\.\w+\("(redlock\.[a-z._]+)"`).FindAllStringSubmatch(src, -1)
	if len(names) < 10 {
		t.Fatalf("found %d instruments in redlockotel/observer.go; want every m.Int64Counter(...) and the like", len(names))
	}
	for _, n := range names {
		if !strings.Contains(readme, "`"+n[1]+"`") {
			t.Errorf("README.md's metrics do not list `%s`, which redlockotel records", n[1])
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
