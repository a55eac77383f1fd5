package main

import (
	"math"
	"slices"
	"time"
)

// pct is the p-th percentile of ds in seconds (nearest rank; p = 100 is
// the maximum), NaN if ds is empty. It sorts ds.
func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	slices.Sort(ds)
	i := int(math.Ceil(p/100*float64(len(ds)))) - 1
	i = min(max(i, 0), len(ds)-1)
	return ds[i].Seconds()
}

// median of vs, ignoring NaNs; NaN if none.
func median(vs []float64) float64 {
	var xs []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
