// Command bench compares this library with other Go Redis locks and with
// the physical floor of the Redlock protocol, in one interleaved run on
// five local redis-server nodes it starts itself, and writes the medians
// over rounds as markdown (BENCHMARKS.md). Run it with `make bench`.
//
// It is its own module, so that the users of the library never download
// the libraries it is compared with.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

type flags struct {
	rounds                 int
	out, only, who         string
	cpuprofile             string
	s1, s2, s3, s4, s5, s6 time.Duration
}

func main() {
	var f flags
	proxy := flag.Bool("proxy-child", false, "internal: run as the toxiproxy process")
	flag.IntVar(&f.rounds, "rounds", 3, "rounds; each runs every (scenario, contender) pair once, in rotated order; the report gives medians over rounds")
	flag.StringVar(&f.out, "out", "", "write the report to this file too (markdown)")
	flag.StringVar(&f.only, "only", "", "comma-separated scenarios to run (e.g. S1,S3); default all")
	flag.StringVar(&f.who, "contenders", "", "comma-separated substrings of the contenders to run (e.g. fenced,redsync); default all")
	flag.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the measurements to this file (for go tool pprof)")
	flag.DurationVar(&f.s1, "s1", 2*time.Second, "duration of one S1 measurement")
	flag.DurationVar(&f.s2, "s2", 3*time.Second, "duration of one S2 measurement")
	flag.DurationVar(&f.s3, "s3", 3*time.Second, "duration of one S3 measurement")
	flag.DurationVar(&f.s4, "s4", 3*time.Second, "duration of one S4 measurement")
	flag.DurationVar(&f.s5, "s5", 3*time.Second, "duration of one S5 measurement")
	flag.DurationVar(&f.s6, "s6", 4*time.Second, "duration of one S6 measurement")
	flag.Parse()
	if *proxy {
		if err := proxyChild(); err != nil {
			fmt.Fprintln(os.Stderr, "redlock bench: proxy process:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &f)
	stop()
	os.Exit(code)
}

// results[scenario][contender] holds one metrics per round.
type results map[string]map[string][]metrics

func run(ctx context.Context, f *flags) int {
	if f.rounds < 1 {
		fmt.Fprintln(os.Stderr, "redlock bench: -rounds must be at least 1")
		return 2
	}
	machine := describeMachine()
	cl, err := startCluster(ctx, 5)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cl.stop() // also on error and on Ctrl-C: run returns through here

	var violations atomic.Int64
	all := scenarios(cl, f, &violations)
	var scs []scenario
	for _, s := range all {
		if f.only == "" || strings.Contains(","+strings.ToUpper(f.only)+",", ","+s.id+",") {
			scs = append(scs, s)
		}
	}
	var cs []contender
	for _, c := range contenders() {
		if picked(f.who, c.name) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		fmt.Fprintf(os.Stderr, "redlock bench: -contenders %q matches none of the contenders\n", f.who)
		return 2
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "redlock bench:", err)
			return 1
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintln(os.Stderr, "redlock bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	res := results{}
	start := time.Now()
	for r := range f.rounds {
		for _, s := range scs {
			var these []contender
			for _, c := range cs {
				if s.applies(c) {
					these = append(these, c)
				}
			}
			for k := range these { // rotated order: each round starts one later
				c := these[(k+r)%len(these)]
				prefix := fmt.Sprintf("bench:%s:%d:r%d:", s.id, indexOf(cs, c.name), r)
				m, err := s.measure(ctx, c, cl.addrsFor(s.fault), prefix, *s.duration)
				if err != nil {
					fmt.Fprintf(os.Stderr, "redlock bench: round %d, %s, %s: %v\n", r+1, s.id, c.name, err)
					return 1
				}
				if res[s.id] == nil {
					res[s.id] = map[string][]metrics{}
				}
				res[s.id][c.name] = append(res[s.id][c.name], m)
				fmt.Fprintf(os.Stderr, "round %d/%d  %s  %-20s %s\n", r+1, f.rounds, s.id, c.name, brief(s, m))
				if v := violations.Load(); v > 0 {
					fmt.Fprintf(os.Stderr, "redlock bench: MUTUAL EXCLUSION VIOLATED: %d overlapping critical sections in %s with %s\n", v, s.id, c.name)
					return 3
				}
			}
		}
	}
	machine.elapsed = time.Since(start)
	machine.loadEnd = loadavg()
	report := render(machine, f, scs, cs, res)
	fmt.Print(report)
	if f.out != "" {
		if err := os.WriteFile(f.out, []byte(report), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "redlock bench: writing %s: %v\n", f.out, err)
			return 1
		}
	}
	return 0
}

// picked reports whether the -contenders list who (comma-separated
// substrings) picks the contender name; an empty list picks every one.
func picked(who, name string) bool {
	if who == "" {
		return true
	}
	for _, w := range strings.Split(who, ",") {
		if w = strings.TrimSpace(w); w != "" && strings.Contains(name, w) {
			return true
		}
	}
	return false
}

func indexOf(cs []contender, name string) int {
	for i, c := range cs {
		if c.name == name {
			return i
		}
	}
	return -1
}

// brief is a progress line: the scenario's first two figures.
func brief(s scenario, m metrics) string {
	var parts []string
	for _, col := range s.columns[:2] {
		parts = append(parts, col.head+" "+format(col.kind, m[col.key]))
	}
	return strings.Join(parts, ", ")
}
