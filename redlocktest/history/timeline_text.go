package history

import (
	"fmt"
	"strings"
	"time"
)

func writeTitle(e Event) string {
	what := "rejected"
	if e.Accepted {
		what = "accepted"
	}
	s := fmt.Sprintf("%s wrote %s: %s, fence %d, seq %d, value %d\nsent %s, answered %s", e.Client, e.Lock, what, e.Fence, e.Seq, e.Value, ms(e.Start), ms(e.At))
	if e.Detail != "" {
		s += "\n" + e.Detail
	}
	return s
}

func legend(locks []string, lockClass map[string]string) []legendItem {
	bar := func(cls string) shape { return shape{Tag: "rect", Class: cls, X: 2, Y: 3, W: 26, H: 11} }
	var items []legendItem
	if len(locks) <= 1 {
		items = append(items, legendItem{[]shape{bar("hold c0"), {Tag: "text", Class: "fence", X: 5, Y: 12, Text: "7"}}, "hold: believed from Acquire's return to release, loss signal or deadline; the number is the fence"})
	} else {
		for _, l := range locks {
			items = append(items, legendItem{[]shape{bar("hold " + lockClass[l]), {Tag: "text", Class: "fence", X: 5, Y: 12, Text: "7"}}, "hold of " + l + " (number: fence)"})
		}
	}
	items = append(items,
		legendItem{[]shape{{Tag: "line", Class: "wait", X1: 2, Y1: 8, X2: 28, Y2: 8}, {Tag: "line", Class: "afail", X1: 28, Y1: 3, X2: 28, Y2: 13}}, "waiting in Acquire (a grey tick: it failed)"},
		legendItem{[]shape{{Tag: "rect", Class: "hold c0", X: 2, Y: 3, W: 26, H: 11}, {Tag: "line", Class: "ext", X1: 12, Y1: 1, X2: 12, Y2: 16}, {Tag: "line", Class: "ext-fail", X1: 22, Y1: 1, X2: 22, Y2: 16}}, "extend (orange: failed)"},
		legendItem{[]shape{{Tag: "polygon", Class: "lost", Points: "10,1 20,1 15,9"}}, "told the lock is lost (Done fired)"},
		legendItem{[]shape{{Tag: "line", Class: "deadline", X1: 2, Y1: 8, X2: 26, Y2: 8}, {Tag: "line", Class: "deadline-tick", X1: 26, Y1: 2, X2: 26, Y2: 15}}, "local deadline (dashed after a loss signal; light grey after a release)"},
		legendItem{[]shape{{Tag: "circle", Class: "w-ok", X: 9, Y: 8, R: 3}, {Tag: "circle", Class: "w-rej", X: 21, Y: 8, R: 3}}, "write accepted / rejected by the store"},
		legendItem{[]shape{{Tag: "rect", Class: "f-down", X: 2, Y: 2, W: 8, H: 13}, {Tag: "rect", Class: "f-pause", X: 11, Y: 2, W: 8, H: 13}, {Tag: "rect", Class: "f-slow", X: 20, Y: 2, W: 8, H: 13}}, "fault: down/kill, pause, latency (also clock: blue, other: grey)"},
		legendItem{[]shape{{Tag: "line", Class: "mg", X1: 15, Y1: 0, X2: 15, Y2: 17}}, "majority of nodes gone"},
		legendItem{[]shape{{Tag: "rect", Class: "hold c0 viol", X: 2, Y: 3, W: 26, H: 11}, {Tag: "rect", Class: "ovl", X: 14, Y: 1, W: 14, H: 15}}, "involved in a violation (red: overlap)"},
	)
	return items
}

// niceStep returns a step of 1, 2 or 5 times a power of ten milliseconds
// that cuts d into at most n pieces.
func niceStep(d time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	for step := time.Millisecond; ; step *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if d/(m*step) < time.Duration(n) {
				return m * step
			}
		}
	}
}

// naturalLess orders "c2" before "c10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
