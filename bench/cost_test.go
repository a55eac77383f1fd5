package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestSchedstatRun(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64
		ok   bool
	}{
		{"175588 5584643 2\n", 175588, true},
		{"0 0 0", 0, true},
		{"175588 5584643", 0, false}, // a field short
		{"1 2 3 4", 0, false},        // one too many
		{"12.5 5584643 2", 0, false}, // not nanoseconds
		{"-4 5584643 2", 0, false},   // negative
		{"", 0, false},               // empty file
		{"abc def ghi", 0, false},    // not numbers
		{" 42  7  1 \n", 42, true},   // spacing
		{"9223372036854775807 0 1", math.MaxInt64, true},
	} {
		got, err := schedstatRun(tc.line)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("schedstatRun(%q) = %d, %v; want %d, ok %v", tc.line, got, err, tc.want, tc.ok)
		}
	}
}

// sumTasks adds every thread's time, and counts a thread that ended
// between the listing and the read (no schedstat) as 0.
func TestSumTasks(t *testing.T) {
	dir := t.TempDir()
	for tid, line := range map[string]string{"100": "1000 5 1\n", "101": "234 0 9\n", "102": ""} {
		if err := os.Mkdir(filepath.Join(dir, tid), 0o755); err != nil {
			t.Fatal(err)
		}
		if line != "" {
			if err := os.WriteFile(filepath.Join(dir, tid, "schedstat"), []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := sumTasks(dir)
	if err != nil || got != 1234 {
		t.Fatalf("sumTasks = %v, %v; want 1.234µs", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "102", "schedstat"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sumTasks(dir); err == nil {
		t.Fatal("sumTasks over a malformed schedstat: no error")
	}
	if _, err := sumTasks(filepath.Join(dir, "none")); err == nil {
		t.Fatal("sumTasks over a missing directory: no error")
	}
}

// procCPU(0) counts the work of every thread of the process, not only the
// main one's: it agrees with getrusage(RUSAGE_SELF) over work spread on
// four locked threads.
func TestProcCPUSumsThreads(t *testing.T) {
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, r0 := mustCPU(t), rusage()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { // owner: the test; ends after its share of work, joined below
			defer wg.Done()
			runtime.LockOSThread() // a thread of its own while it works
			defer runtime.UnlockOSThread()
			x := 1.0
			for i := range 30_000_000 {
				x = math.Sqrt(x + float64(i))
			}
			_ = x
		}()
	}
	wg.Wait()
	c1, r1 := mustCPU(t), rusage()
	got, want := c1-c0, r1-r0
	if want < 20*time.Millisecond {
		t.Fatalf("the work took %v of CPU by getrusage; too little to compare", want)
	}
	if d := got - want; d < -want/10-2*time.Millisecond || d > want/10+2*time.Millisecond {
		t.Fatalf("procCPU(0) grew by %v, getrusage by %v: more than 10%% apart", got, want)
	}
}

func mustCPU(t *testing.T) time.Duration {
	t.Helper()
	d, err := procCPU(0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const infoReply = "# Stats\r\ntotal_connections_received:12\r\ntotal_net_input_bytes:1000\r\n" +
	"total_net_output_bytes:5000\r\n\r\n# Commandstats\r\n" +
	"cmdstat_evalsha:calls=10,usec=300,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_eval:calls=1,usec=20,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_incr:calls=10,usec=15,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_set:calls=10,usec=40,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_info:calls=3,usec=900,usec_per_call=300.00,rejected_calls=0,failed_calls=0\r\n" +
	"\r\n# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n"

func TestParseInfo(t *testing.T) {
	got, err := parseInfo(infoReply)
	want := nodeInfo{netIn: 1000, netOut: 5000, scriptUsec: 320, incrUsec: 15, usedMemory: 1 << 20}
	if err != nil || got != want {
		t.Fatalf("parseInfo = %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseInfo("# Memory\r\nused_memory:12\r\n"); err == nil {
		t.Fatal("parseInfo without the net counters: no error")
	}
	if _, err := parseInfo(infoReply + "cmdstat_get:calls=1\r\n"); err == nil {
		t.Fatal("parseInfo of a commandstats line without usec: no error")
	}
}

// costs divides each delta by the operations, less the bytes of an INFO
// reading and the nodes' idle CPU over the window.
func TestWindowCosts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := &window{
		begin: sample{at: t0, client: 1 * time.Second, server: 10 * time.Second, infos: []nodeInfo{
			{netIn: 100, netOut: 1000, scriptUsec: 50, incrUsec: 5, usedMemory: 1000},
			{netIn: 200, netOut: 2000, scriptUsec: 60, incrUsec: 6, usedMemory: 2000},
		}},
		end: sample{at: t0.Add(2 * time.Second), client: 1*time.Second + 300*time.Millisecond, server: 10*time.Second + 500*time.Millisecond,
			infos: []nodeInfo{
				{netIn: 1130, netOut: 3200, scriptUsec: 1050, incrUsec: 105, usedMemory: 51000},
				{netIn: 1230, netOut: 4200, scriptUsec: 1060, incrUsec: 106, usedMemory: 2000},
			}},
		infoCost: []nodeInfo{{netIn: 30, netOut: 200}, {netIn: 30, netOut: 200}},
	}
	m, err := w.costs(1000, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{
		"cpu_client":    300e-6,             // 300 ms over 1000 ops
		"cpu_server":    (0.5 - 0.1) / 1000, // 500 ms less 2 s at 50 ms/s
		"script_server": 2000e-6 / 1000,     // 2000 µs
		"incr_server":   200e-6 / 1000,      // 200 µs
		"wire":          (1000 + 2000 + 1000 + 2000) / 1000.0,
	} {
		if math.Abs(m[k]-want) > 1e-12 {
			t.Errorf("costs[%q] = %g; want %g", k, m[k], want)
		}
	}
	if g := w.memoryGrowth(); g[0] != 50000 || g[1] != 0 {
		t.Errorf("memoryGrowth = %v; want [50000 0]", g)
	}
	m, err = w.costs(0, 0)
	if err != nil || !math.IsNaN(m["cpu_client"]) || !math.IsNaN(m["wire"]) {
		t.Fatalf("costs over no operations = %v, %v; want NaNs", m, err)
	}
	w.err = os.ErrNotExist
	if _, err := w.costs(1000, 0); err == nil {
		t.Fatal("costs of a window whose readings failed: no error")
	}
}

// nodesForTest starts five redis-server nodes (no proxies), stopped at the
// end of the test. Without redis-server the test is skipped, but fails
// under CI=true, where it must run.
func nodesForTest(t *testing.T) *cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not in PATH; CI must run this test (`make redis-server` installs it)")
		}
		t.Skip("redis-server not in PATH (`make redis-server` installs it)")
	}
	cl, err := startNodes(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.stop)
	return cl
}

// S7 leaves no key on the nodes, and sees the fence counters this
// library's fenced locks leave (the negative control: the unfenced leave
// none, and neither does redsync).
func TestS7LeavesNoKeys(t *testing.T) {
	cl := nodesForTest(t)
	ctx := context.Background()
	const names = 300
	for _, tc := range []struct {
		c        contender
		wantLeft float64
	}{
		{contender{name: "redlock (fenced)", open: openRedlock(false)}, names},
		{contender{name: "redlock (unfenced)", open: openRedlock(true)}, 0},
		{contender{name: "redsync", open: openRedsync(false)}, 0},
	} {
		t.Run(tc.c.name, func(t *testing.T) {
			m, err := s7(ctx, cl, tc.c, cl.direct, "test:s7:", names, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if m["names"] != names || m["ops"]+m["lock_err"] != names {
				t.Errorf("names %v, pairs %v, lock errors %v; want %d names tried", m["names"], m["ops"], m["lock_err"], names)
			}
			if m["keys_left"] != tc.wantLeft {
				t.Errorf("keys left per node %v; want %v", m["keys_left"], tc.wantLeft)
			}
			if tc.wantLeft > 0 && !(m["mem_per_name"] > 0) {
				t.Errorf("memory per name %v with %v counters left; want > 0", m["mem_per_name"], m["keys_left"])
			}
			for _, k := range []string{"cpu_client", "cpu_server", "wire"} {
				if !(m[k] > 0) {
					t.Errorf("%s = %v; want > 0", k, m[k])
				}
			}
			keys, err := cl.keyCounts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range keys {
				if n != 0 {
					t.Errorf("node %d holds %d keys after S7; want 0", i, n)
				}
			}
		})
	}
}
