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
	rounds                         int
	out, only, who                 string
	cpuprofile                     string
	memprofile                     string
	skip                           string
	s1, s2, s3, s4, s5, s6, s8, s9 time.Duration
	s7                             time.Duration
	s7names                        int
	baseline                       time.Duration
}

func main() {
	var f flags
	proxy := flag.Bool("proxy-child", false, "internal: run as the toxiproxy process")
	flag.IntVar(&f.rounds, "rounds", 3, "rounds; each runs every (scenario, contender) pair once, in rotated order; the report gives medians over rounds")
	flag.StringVar(&f.out, "out", "", "write the report to this file too (markdown)")
	flag.StringVar(&f.only, "only", "", "comma-separated scenarios to run (e.g. S1,S3); default all")
	flag.StringVar(&f.skip, "skip", "", "comma-separated scenarios to leave out (e.g. S7)")
	flag.StringVar(&f.who, "contenders", "", "comma-separated substrings of the contenders to run (e.g. fenced,redsync); default all")
	flag.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the measurements to this file (for go tool pprof)")
	flag.StringVar(&f.memprofile, "memprofile", "", "write an allocation profile of the run to this file at its end (go tool pprof -sample_index=alloc_space)")
	flag.DurationVar(&f.s1, "s1", 2*time.Second, "duration of one S1 measurement")
	flag.DurationVar(&f.s2, "s2", 3*time.Second, "duration of one S2 measurement")
	flag.DurationVar(&f.s3, "s3", 3*time.Second, "duration of one S3 measurement")
	flag.DurationVar(&f.s4, "s4", 3*time.Second, "duration of one S4 measurement")
	flag.DurationVar(&f.s5, "s5", 3*time.Second, "duration of one S5 measurement")
	flag.DurationVar(&f.s6, "s6", 4*time.Second, "duration of one S6 measurement")
	flag.DurationVar(&f.s8, "s8", 3*time.Second, "duration of one S8 measurement")
	flag.DurationVar(&f.s7, "s7", 10*time.Minute, "the most one S7 measurement may take; it ends earlier when every name is done")
	flag.DurationVar(&f.s9, "s9", 2*time.Second, "duration of one S9 measurement (per set size and form)")
	flag.IntVar(&f.s7names, "s7-names", 1_000_000, "S7's number of distinct names (e.g. 20000 for a quick run)")
	flag.DurationVar(&f.baseline, "baseline", 200*time.Millisecond, "duration of the no-op harness's measurement per scenario, whose client CPU per operation is subtracted")
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
	if f.s7names < 1 {
		fmt.Fprintln(os.Stderr, "redlock bench: -s7-names must be at least 1 (leave S7 out with -skip S7)")
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
		if listed(f.only, s.id, true) && !listed(f.skip, s.id, false) {
			scs = append(scs, s)
		}
	}
	var cs []contender
	for _, c := range allContenders() {
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
	if f.memprofile != "" {
		defer writeMemProfile(f.memprofile)
	}
	if cl.idle, err = cl.idleServerCPU(time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "redlock bench: measuring the nodes' idle CPU:", err)
		return 1
	}
	res := results{}
	if err := measureHarness(ctx, cl, f, scs, res); err != nil {
		fmt.Fprintln(os.Stderr, "redlock bench: measuring the harness's own CPU:", err)
		return 1
	}
	start := time.Now()
	for r := range f.rounds {
		for _, s := range scs {
			if s.once && r > 0 {
				continue
			}
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
				m["cpu_client_raw"] = m["cpu_client"]
				m["cpu_client"] -= res.med(s.id, harness.name, "cpu_client")
				res.add(s.id, c.name, m)
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
	report := render(machine, f, cl, scs, cs, res)
	fmt.Print(report)
	if f.out != "" {
		if err := os.WriteFile(f.out, []byte(report), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "redlock bench: writing %s: %v\n", f.out, err)
			return 1
		}
	}
	return 0
}

// measureHarness measures the no-op harness in every scenario of scs, for
// its client CPU per operation. Its critical sections overlap (a no-op
// excludes nobody), so it counts them apart from the contenders'.
func measureHarness(ctx context.Context, cl *cluster, f *flags, scs []scenario, res results) error {
	var overlaps atomic.Int64
	mine := scenarios(cl, f, &overlaps)
	for _, s := range scs {
		for _, h := range mine {
			if h.id != s.id {
				continue
			}
			m, err := h.measure(ctx, harness, cl.addrsFor(h.fault), "bench:harness:"+h.id+":", f.baseline)
			if err != nil {
				return fmt.Errorf("%s: %w", h.id, err)
			}
			res.add(h.id, harness.name, m)
			fmt.Fprintf(os.Stderr, "harness   %s  client CPU/op %s over %.0f ops\n", h.id, format(kCPU, m["cpu_client"]), m["ops"])
		}
	}
	return nil
}

func (res results) add(s, c string, m metrics) {
	if res[s] == nil {
		res[s] = map[string][]metrics{}
	}
	res[s][c] = append(res[s][c], m)
}

// listed reports whether the comma-separated list of scenarios has id; an
// empty list has every id when empty is true, none otherwise.
func listed(list, id string, empty bool) bool {
	if list == "" {
		return empty
	}
	return strings.Contains(","+strings.ToUpper(strings.ReplaceAll(list, " ", ""))+",", ","+id+",")
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

// writeMemProfile writes the allocations profile (every allocation of the
// run, sampled as the runtime does) to path.
func writeMemProfile(path string) {
	pf, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(pf, 0)
		if cerr := pf.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "redlock bench: -memprofile:", err)
	}
}
