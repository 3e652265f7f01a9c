package main

import (
	"math"
	"sort"
)

// summary is the distribution of a set of samples.
type summary struct {
	N                       int
	Min, P50, P90, P99, Max float64
	// BatchMedian and BatchMax are the median and the maximum of the
	// per-batch medians (when the samples come in batches).
	BatchMedian, BatchMax float64
	Batches               int
}

// percentile is the nearest-rank percentile: the smallest sample such that
// at least p % of the samples are less than or equal to it. NaN for no
// samples.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return sortedPercentile(s, p)
}

func sortedPercentile(s []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// summarize computes the summary of xs, with batch[i] the batch of xs[i]
// (nil for no batches).
func summarize(xs []float64, batch []int) summary {
	if len(xs) == 0 {
		nan := math.NaN()
		return summary{Min: nan, P50: nan, P90: nan, P99: nan, Max: nan, BatchMedian: nan, BatchMax: nan}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	out := summary{N: len(s), Min: s[0], P50: sortedPercentile(s, 50), P90: sortedPercentile(s, 90),
		P99: sortedPercentile(s, 99), Max: s[len(s)-1], BatchMedian: math.NaN(), BatchMax: math.NaN()}
	if batch != nil {
		by := map[int][]float64{}
		for i, x := range xs {
			by[batch[i]] = append(by[batch[i]], x)
		}
		var meds []float64
		for _, v := range by {
			meds = append(meds, percentile(v, 50))
		}
		sort.Float64s(meds)
		out.Batches = len(meds)
		out.BatchMedian = sortedPercentile(meds, 50)
		out.BatchMax = meds[len(meds)-1]
	}
	return out
}

// resetSummary summarizes the timed (not warm-up) client latencies of one
// variant.
func resetSummary(samples []ResetSample, variant string) summary {
	var xs []float64
	var batches []int
	for _, s := range samples {
		if s.Variant == variant && !s.Warmup {
			xs = append(xs, s.ClientMs)
			batches = append(batches, s.Batch)
		}
	}
	return summarize(xs, batches)
}

// resetField collects one value of the timed samples of a variant.
func resetField(samples []ResetSample, variant string, f func(ResetSample) float64) []float64 {
	var xs []float64
	for _, s := range samples {
		if s.Variant == variant && !s.Warmup {
			xs = append(xs, f(s))
		}
	}
	return xs
}

func median(xs []float64) float64 { return percentile(xs, 50) }
