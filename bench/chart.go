package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// renderChart draws the reset latency of every variant on a logarithmic
// axis: each timed sample as a dot, the p50 as a bar and the p99 and the
// maximum as ticks. Deterministic: the same results give the same SVG.
func renderChart(r *Results) string {
	type row struct {
		name    string
		samples []float64
		s       summary
	}
	var rows []row
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range variantOrder {
		if strings.HasSuffix(v, essentialsSuffix) {
			continue // sums of parts, not one call: in the report's tables only
		}
		xs := resetField(r.Resets, v, func(s ResetSample) float64 { return s.ClientMs })
		if len(xs) == 0 {
			continue
		}
		s := summarize(xs, nil)
		rows = append(rows, row{v, xs, s})
		lo, hi = math.Min(lo, s.Min), math.Max(hi, s.Max)
	}
	if len(rows) == 0 {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>` + "\n"
	}
	lo = math.Max(lo, 1e-3)
	decLo, decHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if decHi <= decLo {
		decHi = decLo + 1
	}
	const (
		width, left, right, top, rowH, bottom = 960.0, 190.0, 30.0, 58.0, 46.0, 56.0
	)
	height := top + rowH*float64(len(rows)) + bottom
	plotW := width - left - right
	x := func(v float64) float64 {
		return left + (math.Log10(math.Max(v, 1e-3))-decLo)/(decHi-decLo)*plotW
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="%.0f" y="22" font-size="15" font-weight="bold">Reset latency per variant, %d-table standard workload (client-observed, log scale)</text>`+"\n",
		left-170, r.Plan.Tables)
	p(`<text x="%.0f" y="40" fill="#555">dots: every timed sample · thick tick: p50 · thin tick: p99 · open tick: max · green: product bar · %s, %d cores · %s</text>`+"\n",
		left-170, html.EscapeString(r.Machine.Server), r.Machine.Cores, html.EscapeString(r.Started))
	// Grid: decades labeled, 2 and 5 faint.
	for d := decLo; d <= decHi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > decHi+1e-9 {
				continue
			}
			gx := x(v)
			stroke, dash := "#dddddd", ` stroke-dasharray="2,3"`
			if m == 1 {
				stroke, dash = "#bbbbbb", ""
			}
			p(`<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="%s"%s/>`+"\n", gx, top-6, gx, height-bottom+4, stroke, dash)
			p(`<text x="%.1f" y="%.0f" text-anchor="middle" fill="#333">%s</text>`+"\n", gx, height-bottom+20, axisLabel(v))
		}
	}
	p(`<text x="%.0f" y="%.0f" text-anchor="middle" fill="#333">milliseconds</text>`+"\n", left+plotW/2, height-bottom+42)
	for i, rw := range rows {
		cy := top + rowH*float64(i) + rowH/2
		color := "#c0392b"
		if strings.HasPrefix(rw.name, "testdbd") {
			color = "#1f6fb2"
		}
		if i%2 == 0 {
			p(`<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="#f6f6f6"/>`+"\n", left, cy-rowH/2, plotW, rowH)
		}
		p(`<text x="%.0f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-10, cy-6, html.EscapeString(rw.name))
		p(`<text x="%.0f" y="%.1f" text-anchor="end" dominant-baseline="middle" fill="#555" font-size="11">p50 %s ms · n=%d</text>`+"\n",
			left-10, cy+9, fmtMs(rw.s.P50), rw.s.N)
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="8" fill="%s" fill-opacity="0.25"/>`+"\n", left, cy-4, x(rw.s.P50)-left, color)
		for j, v := range rw.samples {
			jitter := float64((j*7919)%13-6) * 1.3
			p(`<circle cx="%.1f" cy="%.1f" r="1.8" fill="%s" fill-opacity="0.35"/>`+"\n", x(v), cy+jitter, color)
		}
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", x(rw.s.P50), cy-13, x(rw.s.P50), cy+13, color)
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", x(rw.s.P99), cy-9, x(rw.s.P99), cy+9, color)
		p(`<rect x="%.1f" y="%.1f" width="4" height="14" fill="none" stroke="%s"/>`+"\n", x(rw.s.Max)-2, cy-7, color)
		if target, ok := resetBars[rw.name]; ok {
			bx := x(target)
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1a7f37" stroke-width="1.5" stroke-dasharray="4,2"/>`+"\n", bx, cy-rowH/2+3, bx, cy+rowH/2-3)
			p(`<text x="%.1f" y="%.1f" fill="#1a7f37" font-size="10" text-anchor="end">bar ≤ %g ms</text>`+"\n", bx-3, cy-rowH/2+12, target)
		}
	}
	p("</svg>\n")
	return b.String()
}

func axisLabel(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
