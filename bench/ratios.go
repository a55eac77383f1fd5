package main

import (
	"fmt"
	"math"
	"strings"
)

// The tables of ratios: this library against the floors and redsync, and the server-CPU target.

// ratio rows: this library against the floor and redsync.
type ratioRow struct {
	s, key, head string
	k            kind
}

func renderRatios(b *strings.Builder, res results) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	rows := []ratioRow{
		{"S1", "lock_p50", "S1 lock p50", kDur}, {"S1", "unlock_p50", "S1 unlock p50", kDur},
		{"S1", "lock_p99", "S1 lock p99", kDur}, {"S1", "unlock_p99", "S1 unlock p99", kDur},
		{"S2", "pairs_per_s", "S2 pairs/s", kRate}, {"S2", "allocs_per_op", "S2 allocs/pair", kCount},
		{"S2", "bytes_per_op", "S2 B/pair", kCount},
		{"S4", "lock_p99", "S4 lock p99", kDur}, {"S4", "unlock_p50", "S4 unlock p50", kDur}, {"S4", "unlock_p99", "S4 unlock p99", kDur},
		{"S5", "lock_p99", "S5 lock p99", kDur}, {"S5", "unlock_p50", "S5 unlock p50", kDur}, {"S5", "unlock_p99", "S5 unlock p99", kDur},
		{"S3", "cs_per_s", "S3 CS/s", kRate}, {"S3", "wait_p999", "S3 wait p99.9", kDur},
		{"S6", "cs_per_s", "S6 CS/s", kRate}, {"S6", "wait_p999", "S6 wait p99.9", kDur},
		{"S6", "wait_p999_warm", "S6 wait p99.9 but 1st", kDur}, {"S6", "fairness", "S6 CS/worker min/max", kRatio},
		{"S7", "pairs_per_s", "S7 pairs/s", kRate},
	}
	for _, s := range []string{"S1", "S2", "S3", "S6", "S7"} {
		rows = append(rows, ratioRow{s, "cpu_client", s + " client CPU/op", kCPU}, ratioRow{s, "cpu_server", s + " server CPU/op", kCPU})
	}
	w("## This library against the floor and redsync\n\n")
	w("Each ratio is this library's median divided by the other's, from the same run. For times and\n")
	w("allocations lower is better; for pairs/s, CS/s and min/max higher is better.\n\n")
	w("| figure | redlock (fenced) | ÷ floor | ÷ redsync | ÷ redsync FailFast | redlock (unfenced) | ÷ floor | ÷ redsync | ÷ redsync FailFast |\n")
	w("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if res[r.s] == nil {
			continue
		}
		w("| %s |", r.head)
		for _, mine := range []string{ours, oursUnfenced} {
			v := res.med(r.s, mine, r.key)
			w(" %s |", format(r.k, v))
			for _, other := range []string{floorName, rsDefault, rsFailFast} {
				w(" %s |", ratio(v, res.med(r.s, other, r.key)))
			}
		}
		w("\n")
	}
	w("\n")
	if res["S1"] != nil && (res["S4"] != nil || res["S5"] != nil) {
		w("Faults against the healthy tail (issue target: within 0.5 ms of the healthy S1 p99):\n\n")
		w("| figure | redlock (fenced) | − S1 p99 | redlock (unfenced) | − S1 p99 |\n|---|---|---|---|---|\n")
		for _, r := range rows {
			if (r.s != "S4" && r.s != "S5") || res[r.s] == nil || r.key == "unlock_p50" {
				continue
			}
			base := strings.Replace(r.key, "p50", "p99", 1)
			w("| %s |", r.head)
			for _, mine := range []string{ours, oursUnfenced} {
				v := res.med(r.s, mine, r.key)
				w(" %s | %s |", format(kDur, v), signedDur(v-res.med("S1", mine, base)))
			}
			w("\n")
		}
		w("\n")
	}
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func signedDur(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	if v < 0 {
		return "−" + format(kDur, -v)
	}
	return "+" + format(kDur, v)
}

// renderCostTarget compares, in S1 and S2, this library's server CPU per
// pair with issue 22's target: redsync's (SET NX, compare-and-delete) plus
// the fence's INCR, the INCR's time being what commandstats reports for it
// in this library's fenced run.
func renderCostTarget(b *strings.Builder, res results) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	var rows []string
	for _, s := range []string{"S1", "S2"} {
		if res[s] == nil || res[s][ours] == nil || res[s][rsDefault] == nil {
			continue
		}
		mine, rs, incr := res.med(s, ours, "cpu_server"), res.med(s, rsDefault, "cpu_server"), res.med(s, ours, "incr_server")
		target := rs + incr
		verdict := "met"
		if !(mine <= target) {
			verdict = fmt.Sprintf("not met: %s over", format(kCPU, mine-target))
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | **%s** (%s) | %s | %s | %s |\n", s,
			format(kCPU, mine), format(kCPU, rs), format(kCPU, incr), format(kCPU, target), ratio(mine, target), verdict,
			format(kCPU, res.med(s, oursUnfenced, "cpu_server")), format(kCPU, res.med(s, floorSet, "cpu_server")),
			format(kCPU, res.med(s, floorFence, "cpu_server"))))
	}
	if len(rows) == 0 {
		return
	}
	w("## Server CPU against the cost target\n\n")
	w("Issue 22's target: fenced acquire+release of this library should cost no more server CPU than redsync's\n")
	w("SET NX + compare-and-delete plus the fence's INCR. The target is redsync's server CPU per pair plus the\n")
	w("INCR's time per pair (INFO commandstats' INCR time in this library's fenced run: one INCR per node per\n")
	w("acquire, called from its script); the ratio is this library's server CPU per pair over the target. The\n")
	w("floors, measured the same way, show the same commands without a client library's choices. S1 is one\n")
	w("call at a time, the comparison of the commands themselves; in S2, 32 calls at once, how a client shares\n")
	w("its connections also changes what the nodes spend reading and writing per pair.\n\n")
	w("| scenario | redlock (fenced) | redsync | + INCR | target | ÷ target | redlock (unfenced) | floor (plain SET) | floor (fenced) |\n")
	w("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		w("%s", r)
	}
	w("\n")
}
