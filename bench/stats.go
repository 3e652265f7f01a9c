package main

import (
	"math"
	"slices"
	"time"
)

// Series is the timed samples of one variant, in milliseconds, in the
// order they were taken (warm-up samples are not kept).
type Series struct {
	Name string    `json:"name"`
	Ms   []float64 `json:"ms"`
}

// seriesOf returns the series called name, nil if there is none.
func seriesOf(all []Series, name string) []float64 {
	for _, s := range all {
		if s.Name == name {
			return s.Ms
		}
	}
	return nil
}

// summary is the distribution of a set of samples.
type summary struct {
	N        int
	P50, P99 float64
}

// summarize computes the summary of xs; NaN percentiles for no samples.
func summarize(xs []float64) summary {
	return summary{N: len(xs), P50: percentile(xs, 50), P99: percentile(xs, 99)}
}

// percentile is the nearest-rank percentile: the smallest sample such that
// at least p % of the samples are less than or equal to it. NaN for no
// samples.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func median(xs []float64) float64 { return percentile(xs, 50) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round3 keeps microsecond precision of milliseconds.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// batchOrder gives the order of the variants in a batch: batches come in
// pairs, the second of a pair in the reverse order of the first (AB/BA),
// and each pair rotates the order by one more place, so that no variant
// always runs first or after the same one.
func batchOrder[T any](vs []T, batch int) []T {
	n := len(vs)
	out := make([]T, n)
	for i := range vs {
		out[i] = vs[(i+batch/2)%n]
	}
	if batch%2 == 1 {
		slices.Reverse(out)
	}
	return out
}
