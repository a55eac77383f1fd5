package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

type machine struct {
	cpu, goVersion, redis string
	cores, procs          int
	date                  time.Time
	loadStart, loadEnd    string
	elapsed               time.Duration
}

func describeMachine() machine {
	m := machine{
		cpu: "unknown", goVersion: runtime.Version(), redis: redisVersion(),
		cores: runtime.NumCPU(), procs: runtime.GOMAXPROCS(0), date: time.Now().UTC(), loadStart: loadavg(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func format(k kind, v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	switch k {
	case kDur:
		switch {
		case v < 1e-3:
			return fmt.Sprintf("%.0f µs", v*1e6)
		case v < 10e-3:
			return fmt.Sprintf("%.2f ms", v*1e3)
		case v < 1:
			return fmt.Sprintf("%.1f ms", v*1e3)
		default:
			return fmt.Sprintf("%.2f s", v)
		}
	case kRate:
		if v >= 1000 {
			return fmt.Sprintf("%.2fk", v/1000)
		}
		return fmt.Sprintf("%.0f", v)
	case kRatio:
		return fmt.Sprintf("%.2f", v)
	case kCPU:
		if math.Abs(v) < 100e-6 {
			return fmt.Sprintf("%.1f µs", v*1e6)
		}
		return fmt.Sprintf("%.0f µs", v*1e6)
	default:
		if v >= 10000 {
			return fmt.Sprintf("%.1fk", v/1000)
		}
		if v != math.Trunc(v) && v < 100 {
			return fmt.Sprintf("%.1f", v)
		}
		return fmt.Sprintf("%.0f", v)
	}
}

// med is the median over rounds of res[s][c][key].
func (res results) med(s, c, key string) float64 {
	var vs []float64
	for _, m := range res[s][c] {
		if v, ok := m[key]; ok {
			vs = append(vs, v)
		} else {
			vs = append(vs, math.NaN())
		}
	}
	return median(vs)
}

const (
	ours         = "redlock (fenced)"
	oursUnfenced = "redlock (unfenced)"
	rsDefault    = "redsync"
	rsFailFast   = "redsync (FailFast)"
	floorName    = "floor"
	floorSet     = "floor (plain SET)"
	floorFence   = "floor (fenced)"
)

func render(m machine, f *flags, cl *cluster, scs []scenario, cs []contender, res results) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Benchmarks\n\n")
	w("Written by `make bench` (the program in `bench/`, its own Go module so that users of the library never\n")
	w("download the libraries it is compared with). Regenerate it rather than editing it.\n\n")
	w("## Machine\n\n")
	w("- CPU: %s, %d cores (GOMAXPROCS %d)\n", m.cpu, m.cores, m.procs)
	w("- Go %s, redis-server %s\n", strings.TrimPrefix(m.goVersion, "go"), m.redis)
	w("- Date: %s; the run took %s; load average %s at the start, %s at the end\n",
		m.date.Format("2006-01-02 15:04 UTC"), m.elapsed.Round(time.Second), m.loadStart, m.loadEnd)
	w("- The machine is shared with other jobs and noisy: absolute figures move from run to run; the ratios\n")
	w("  between contenders measured in the same run, interleaved, are what to compare.\n\n")
	w("## Method\n\n")
	w("- Five local `redis-server` nodes started by the bench on free ports of 127.0.0.1, without persistence\n")
	w("  (`--save \"\" --appendonly no`), so no write waits for an fsync: the figures measure the clients and the\n")
	w("  protocol, not the disks.\n")
	w("- Every contender dials the nodes directly, except the nodes a scenario faults, which it reaches through a\n")
	w("  toxiproxy proxy (run in a child process, so its CPU and allocations are not counted in the bench's memory\n")
	w("  statistics). S4 adds a %v latency toxic to node 4's replies; S5 adds timeout toxics (every byte\n", slowLatency)
	w("  dropped, both directions) on nodes 3 and 4. A proxy is one more hop on the same cores, so healthy nodes\n")
	w("  are never proxied: S1-S3 and S6 measure the clients and the protocol, and S4/S5 differ from S1 only by\n")
	w("  their faults.\n")
	w("- Contenders, each with its own go-redis clients (so its own connections):\n")
	w("  - **floor**: one parallel round of a trivial `EVALSHA` (`%s`, one key, one argument) to all five nodes,\n", floorScript)
	w("    decided at the third success, through %d persistent worker goroutines per node; \"unlock\" is a second\n", floorWorkers)
	w("    such round. go-redis defaults. No lock at all: the physical floor of a one-round-trip Redlock.\n")
	w("  - **floor (plain SET)**: the same rounds running `SET key token NX PX` to lock and a compare-and-delete\n")
	w("    script to unlock (`%s`): redsync's commands on the nodes, without its client.\n", casDelScript)
	w("  - **floor (fenced)**: the same rounds running a script that does only SET NX PX and INCR of the fence\n")
	w("    counter (`%s`) on `{name}` and `{name}:fence`, as this library names them,\n", fencedSetScript)
	w("    and the same compare-and-delete to unlock: the physical floor of a fenced one-round-trip lock.\n")
	w("  - **redlock (fenced / unfenced)**: this library, `redlock.New(nodes, nil)` (NodeTimeout: the default,\n")
	w("    %v), try-lock `AcquireOptions{Retry: NoRetry()}` in S1, S2, S4, S5, the default retry in S3 and S6.\n", nodeTimeout)
	w("    go-redis defaults.\n")
	w("  - **redsync** (github.com/go-redsync/redsync/v4, goredis v9 pool), defaults, and with `WithFailFast(true)`.\n")
	w("    Expiry %v; `WithTimeoutFactor` so that its acquire round's timeout is %v.\n", ttl, nodeTimeout)
	w("  - **redislock (1 node)** (github.com/bsm/redislock) on node 0 only. S3/S6 wait with its\n")
	w("    `ExponentialBackoff(8ms, 256ms)` (the bounds of this library's default retry; its default is no retry).\n")
	w("    Not run in S4/S5: its one node is not faulted there.\n")
	w("- Per-node timeout: this library's own NodeTimeout, %v. redsync and redislock have no per-node timeout of\n", nodeTimeout)
	w("  their own that interrupts a call (go-redis ignores context deadlines by default), so their go-redis clients\n")
	w("  get `ReadTimeout` and `WriteTimeout` of %v; otherwise go-redis defaults. The floor and this library use\n", nodeTimeout)
	w("  plain go-redis defaults (the floor never waits for a slow node; this library enforces its own timeout).\n")
	w("- Every lock's TTL is %v. Before each measurement the contender does %d lock/unlock pairs on free keys,\n", ttl, warmup)
	w("  with the call the measurement makes (the waiting lock in S3 and S6, the try-lock elsewhere), before the\n")
	w("  fault is injected; after it the fault is healed and the contender's clients are closed. The warm-up\n")
	w("  opens what the calls need: the go-redis pools' connections, and this library's notice connections,\n")
	w("  which its first waiting call opens.\n")
	w("- One run, %d rounds; each round runs every (scenario, contender) pair once, the contender order rotated by\n", f.rounds)
	w("  one each round. Every figure below is the median over the rounds. Durations of one measurement:\n")
	w("  S1 %v, S2 %v, S3 %v, S4 %v, S5 %v, S6 %v. S7 is measured once, in the first round (a million names\n", f.s1, f.s2, f.s3, f.s4, f.s5, f.s6)
	w("  take minutes per contender); its figures are from that one measurement, not medians.\n")
	w("- S2 counts the whole process's allocations (`runtime.MemStats` deltas over the measurement) divided by\n")
	w("  the pairs; the bench's own share is a few percent at most (the keys are made beforehand). Each goroutine\n")
	w("  cycles through 64 keys of its own. S1, S4 and S5 take a fresh key per pair; where a contender waits for a\n")
	w("  faulty node, S4/S5 hold few pairs (the pairs column) and their p99 is close to the maximum.\n")
	w("- S3 and S6: hold time 0 (a `runtime.Gosched` inside the critical section), every critical section checks\n")
	w("  an atomic in-section counter; any overlap stops the bench with a non-zero exit. Waits are from the\n")
	w("  first attempt to the acquisition; \"wait max\" also counts waits still in progress when the measurement\n")
	w("  ended (a starved worker). S6's workers each have their own Client and go-redis clients, as separate\n")
	w("  processes would. \"p99.9 but 1st\" leaves out each worker's first acquisition: the cold start (all\n")
	w("  workers at once on a free lock, a Client's first wait subscribing to the name's notices), which a\n")
	w("  measurement of a few seconds counts among its few slowest waits; \"wait p99.9\" keeps it.\n")
	w("- S7: %d goroutines share %d distinct names, each name taken once (try-lock + unlock), one locker, until\n", s7Workers, f.s7names)
	w("  every name is done (or %v passes; \"names\" is how many were tried). Before it the locker does the same\n", f.s7)
	w("  on %d names of its own, so that its go-redis pools hold their connections, and every node is flushed\n", s7Workers*4)
	w("  (`FLUSHALL`: the nodes are the bench's own). \"memory B/name/node\" is each node's `used_memory` (INFO\n")
	w("  memory) after the run minus before, averaged over the nodes, divided by the names: in bytes per name,\n")
	w("  which is also megabytes per node per million names. The names are `bench:S7:<contender>:r0:<i>`, about\n")
	w("  22 bytes; a counter's memory grows with its name. \"keys left/node\" is DBSIZE after the run, averaged\n")
	w("  over the nodes: this library's fence counters stay forever, one per name ever fenced. The nodes are\n")
	w("  flushed again after each S7 measurement, so later measurements start from empty nodes.\n")
	w("- Costs, per operation (a lock/unlock pair; in S3 and S6 a critical section: the waiting lock and the\n")
	w("  unlock), over a window that opens right before the measured loop and closes right after it:\n")
	w("  - **client CPU**: the bench process's on-CPU time (user + system, every thread: the sum of the first\n")
	w("    field of `/proc/self/task/*/schedstat`, in ns), less the harness's own: the same scenario's loop run\n")
	w("    with a no-op lock for %v, whose CPU per operation is subtracted from every contender's\n", f.baseline)
	w("    (subtracted per operation: %s).\n", harnessFigures(scs, res))
	w("    It includes the garbage collector's work and go-redis's; the toxiproxy child process is not counted.\n")
	w("  - **server CPU**: the same sum over the threads of the five redis-server processes, less their idle CPU\n")
	w("    (%s per second over the five, measured for 1s with nothing running, times the window's length).\n", format(kCPU, cl.idle.Seconds()))
	w("  - **script time**: what `INFO commandstats` reports for the script commands (EVAL, EVALSHA, FCALL and\n")
	w("    their read-only forms), summed over the nodes. It is Redis's wall clock inside the scripts, the\n")
	w("    commands they call included, so it grows when a node is preempted on a busy machine; server CPU\n")
	w("    does not. A contender that runs no script on the nodes shows 0.\n")
	w("  - **wire**: `total_net_input_bytes` + `total_net_output_bytes` (INFO stats), summed over the nodes, less\n")
	w("    the bytes of the bench's own INFO readings (measured by a second reading right after the window):\n")
	w("    what the contender sent and received, Redis protocol and TCP payload, without TCP/IP headers.\n")
	w("  The INFO readings are taken outside the CPU readings: first at the start, last at the end.\n")
	w("- Errors: a try-lock on a free key should never fail. An \"unlock error\" is a release that returned an\n")
	w("  error; in S5 this library reports the blackholed nodes' failures (its release still succeeded on a quorum).\n\n")
	w("## Results (medians over %d rounds)\n\n", f.rounds)
	for _, s := range scs {
		w("### %s: %s\n\n", s.id, s.title)
		w("| contender |")
		for _, col := range s.columns {
			w(" %s |", col.head)
		}
		w("\n|---|")
		for range s.columns {
			w("---|")
		}
		w("\n")
		for _, c := range cs {
			if !s.applies(c) {
				continue
			}
			w("| %s |", c.name)
			for _, col := range s.columns {
				w(" %s |", format(col.kind, res.med(s.id, c.name, col.key)))
			}
			w("\n")
		}
		w("\n")
	}
	renderRatios(&b, res)
	renderCostTarget(&b, res)
	return b.String()
}

// harnessFigures lists the harness's client CPU per operation by scenario.
func harnessFigures(scs []scenario, res results) string {
	var parts []string
	for _, s := range scs {
		parts = append(parts, s.id+" "+format(kCPU, res.med(s.id, harness.name, "cpu_client")))
	}
	return strings.Join(parts, ", ")
}
