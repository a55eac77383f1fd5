package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What an operation costs, beside its time: the CPU of the bench process
// (the client), the CPU of the five redis-server processes (the server),
// the time Redis reports for the scripts it ran, and the bytes on the wire.
//
// CPU time is read from /proc/<pid>/task/<tid>/schedstat, whose first field
// is the thread's time on a CPU in nanoseconds (user and system together),
// summed over the process's threads. /proc/<pid>/stat's utime and stime
// count clock ticks of 10 ms, too coarse for a measurement of two seconds.

// schedstatRun parses one schedstat line, "<on-cpu ns> <wait ns> <slices>",
// and returns the first field.
func schedstatRun(line string) (int64, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: want 3 fields, got %d", line, len(f))
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat %q: on-CPU time is not a count of nanoseconds", line)
	}
	return ns, nil
}

// procCPU is the on-CPU time of process pid (0: this process) so far: the
// sum over its live threads. A thread that exits takes its time with it;
// neither the Go runtime nor redis-server ends its threads while running.
func procCPU(pid int) (time.Duration, error) {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	return sumTasks(dir)
}

// sumTasks sums the schedstat on-CPU times of every thread under dir (a
// /proc/<pid>/task directory). A thread that ends between the listing and
// the read (ENOENT, ESRCH) counts as 0.
func sumTasks(dir string) (time.Duration, error) {
	tids, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("reading the threads of %s (the bench needs Linux's /proc): %w", dir, err)
	}
	var sum int64
	for _, t := range tids {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("reading %s (a kernel without CONFIG_SCHED_INFO has none): %w", filepath.Join(dir, t.Name(), "schedstat"), err)
		}
		ns, err := schedstatRun(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", filepath.Join(dir, t.Name()), err)
		}
		sum += ns
	}
	return time.Duration(sum), nil
}

// nodeInfo is what one node's INFO reports, at one moment.
type nodeInfo struct {
	netIn, netOut int64 // total_net_input_bytes, total_net_output_bytes
	scriptUsec    int64 // the usec of INFO commandstats of the script commands (EVAL, EVALSHA, FCALL and their _RO forms), the commands they call included
	incrUsec      int64 // cmdstat_incr's usec (INCR called from scripts included)
	usedMemory    int64 // used_memory, when the memory section was asked for
}

// parseInfo reads the fields of nodeInfo from an INFO reply.
func parseInfo(reply string) (nodeInfo, error) {
	var n nodeInfo
	var sawIn, sawOut bool
	for _, line := range strings.Split(reply, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "total_net_input_bytes":
			n.netIn, sawIn = atoi(v), true
		case k == "total_net_output_bytes":
			n.netOut, sawOut = atoi(v), true
		case k == "used_memory":
			n.usedMemory = atoi(v)
		case strings.HasPrefix(k, "cmdstat_"):
			usec := cmdstatField(v, "usec")
			if usec < 0 {
				return n, fmt.Errorf("INFO commandstats line %q: no usec", line)
			}
			switch k {
			case "cmdstat_incr":
				n.incrUsec = usec
			case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
				n.scriptUsec += usec
			}
		}
	}
	if !sawIn || !sawOut {
		return n, errors.New("INFO reply without total_net_input_bytes and total_net_output_bytes")
	}
	return n, nil
}

// cmdstatField returns field name of a commandstats value
// ("calls=3,usec=12,usec_per_call=4.00,..."), -1 if absent.
func cmdstatField(v, name string) int64 {
	for _, kv := range strings.Split(v, ",") {
		if k, x, ok := strings.Cut(kv, "="); ok && k == name {
			if n, err := strconv.ParseInt(x, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}

// sample is one reading of every counter the costs come from.
type sample struct {
	at     time.Time
	client time.Duration // this process's CPU
	server time.Duration // the nodes' CPU, summed
	infos  []nodeInfo
}

// serverCPU is the nodes' CPU, summed.
func (c *cluster) serverCPU() (time.Duration, error) {
	var sum time.Duration
	for i, s := range c.servers {
		d, err := procCPU(s.Process.Pid)
		if err != nil {
			return 0, fmt.Errorf("node %d: %w", i, err)
		}
		sum += d
	}
	return sum, nil
}

// infos reads INFO stats and commandstats (and memory when mem) of every
// node, through the bench's own connections.
func (c *cluster) infos(ctx context.Context, mem bool) ([]nodeInfo, error) {
	sections := []string{"stats", "commandstats"}
	if mem {
		sections = append(sections, "memory")
	}
	out := make([]nodeInfo, len(c.admin))
	for i, a := range c.admin {
		reply, err := a.Info(ctx, sections...).Result()
		if err != nil {
			return nil, fmt.Errorf("INFO on node %d: %w", i, err)
		}
		if out[i], err = parseInfo(reply); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
	}
	return out, nil
}

// window is one measurement's cost: start it right before the measured
// loop, stop it right after. The INFO readings are outside the CPU
// readings: INFO first at the start, last at the end. A nil window does
// nothing (the tests of the loops).
type window struct {
	ctx        context.Context
	cl         *cluster
	mem        bool // read used_memory too (S7)
	begin, end sample
	infoCost   []nodeInfo // the bytes of one INFO reading, measured right after the end
	err        error
}

func (c *cluster) window(ctx context.Context, mem bool) *window {
	return &window{ctx: ctx, cl: c, mem: mem}
}

func (w *window) start() {
	if w == nil {
		return
	}
	var s sample
	s.infos, w.err = w.cl.infos(w.ctx, w.mem)
	if w.err == nil {
		s.server, w.err = w.cl.serverCPU()
	}
	if w.err == nil {
		s.client, w.err = procCPU(0)
	}
	s.at = time.Now()
	w.begin = s
}

func (w *window) stop() {
	if w == nil || w.err != nil {
		return
	}
	var s sample
	s.at = time.Now()
	s.client, w.err = procCPU(0)
	if w.err == nil {
		s.server, w.err = w.cl.serverCPU()
	}
	if w.err == nil {
		s.infos, w.err = w.cl.infos(w.ctx, w.mem)
	}
	var again []nodeInfo
	if w.err == nil {
		again, w.err = w.cl.infos(w.ctx, false)
	}
	if w.err == nil {
		// The bytes between two readings with nothing between them are one
		// reading's own: its request (counted at the second) and its reply
		// (counted after the first). The measured span holds one such.
		w.infoCost = make([]nodeInfo, len(again))
		for i := range again {
			w.infoCost[i] = nodeInfo{netIn: again[i].netIn - s.infos[i].netIn, netOut: again[i].netOut - s.infos[i].netOut}
		}
	}
	w.end = s
}

// costs is the cost figures of the window over ops operations, the
// server's idle CPU (serverIdle per second) taken out, in metrics keys:
// cpu_client, cpu_server, script_server, incr_server (seconds per op),
// wire (bytes per op, both directions).
func (w *window) costs(ops float64, serverIdle time.Duration) (metrics, error) {
	if w == nil {
		return metrics{}, nil
	}
	if w.err != nil {
		return nil, fmt.Errorf("measuring the costs: %w", w.err)
	}
	b, e := w.begin, w.end
	elapsed := e.at.Sub(b.at).Seconds()
	var wire, script, incr int64
	for i := range b.infos {
		wire += (e.infos[i].netIn - b.infos[i].netIn - w.infoCost[i].netIn) +
			(e.infos[i].netOut - b.infos[i].netOut - w.infoCost[i].netOut)
		script += e.infos[i].scriptUsec - b.infos[i].scriptUsec
		incr += e.infos[i].incrUsec - b.infos[i].incrUsec
	}
	server := (e.server - b.server).Seconds() - serverIdle.Seconds()*elapsed
	return metrics{
		"cpu_client":    perOp((e.client - b.client).Seconds(), ops),
		"cpu_server":    perOp(server, ops),
		"script_server": perOp(float64(script)/1e6, ops),
		"incr_server":   perOp(float64(incr)/1e6, ops),
		"wire":          perOp(float64(wire), ops),
	}, nil
}

// memoryGrowth is, per node, used_memory at the end minus at the start.
func (w *window) memoryGrowth() []int64 {
	g := make([]int64, len(w.begin.infos))
	for i := range g {
		g[i] = w.end.infos[i].usedMemory - w.begin.infos[i].usedMemory
	}
	return g
}

// perOp is total/ops; NaN when there were no operations.
func perOp(total, ops float64) float64 {
	if ops <= 0 {
		return math.NaN()
	}
	return total / ops
}

// idleServerCPU measures the nodes' CPU per second while nothing runs:
// their timers (serverCron, hz 10). It is subtracted from every window.
func (c *cluster) idleServerCPU(d time.Duration) (time.Duration, error) {
	s0, err := c.serverCPU()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	time.Sleep(d)
	s1, err := c.serverCPU()
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(s1-s0) / time.Since(t0).Seconds()), nil
}
