// Command timeline checks a history saved with history.Save and writes its
// HTML timeline to standard output:
//
//	go run github.com/redlock-go/redlock/redlocktest/cmd/timeline history.json > timeline.html
//
// It prints the checker's report to standard error and exits with status 1
// if the history has violations (the page is written anyway).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redlock-go/redlock/redlocktest/history"
)

func main() {
	title := flag.String("title", "", "page title (default: the saved title, else the file name)")
	tolerance := flag.Duration("tolerance", history.DefaultTolerance, "how late a holder may learn of its loss (CheckOptions.Tolerance)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: timeline [-title T] [-tolerance d] history.json > timeline.html")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ok, err := run(os.Stdout, os.Stderr, flag.Arg(0), *title, *tolerance)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// run renders the history in path to w and its report to report; ok is
// false if the history has violations.
func run(w, report io.Writer, path, title string, tolerance time.Duration) (ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("redlocktest: timeline: %w", err)
	}
	defer f.Close()
	h, err := history.Load(bufio.NewReader(f))
	if err != nil {
		return false, fmt.Errorf("%w (file %s)", err, path)
	}
	if title == "" {
		title = h.Title
	}
	if title == "" {
		title = path
	}
	rep := history.Check(h.Events, &history.CheckOptions{Counters: h.Counters, Tolerance: tolerance})
	fmt.Fprintln(report, rep)
	if err := history.WriteTimeline(w, title, h.Events, rep); err != nil {
		return false, err
	}
	return rep.OK(), nil
}
