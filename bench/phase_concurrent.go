package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The concurrent phase: what a CI runner's parallel workers do to one
// server. Leases of one strategy run test → reset with no pause, first one
// lease at a time, then all of them at once.
var concurrentPhase = &Phase[concurrentPlan, concurrentResults]{
	Name:   "concurrent",
	Full:   concurrentPlan{Leases: 12, AloneRounds: 40, TogetherRounds: 15, Reps: 2},
	Quick:  concurrentPlan{Leases: 12, AloneRounds: 5, TogetherRounds: 2, Reps: 1},
	Run:    runConcurrent,
	Report: reportConcurrent,
}

type concurrentPlan struct {
	// Leases of each strategy in turn on one server; one of them runs
	// AloneRounds test → reset pairs alone, then every one runs
	// TogetherRounds at once; Reps times per strategy, interleaved.
	Leases         int `json:"leases"`
	AloneRounds    int `json:"alone_rounds"`
	TogetherRounds int `json:"together_rounds"`
	Reps           int `json:"reps"`
}

type concurrentResults struct {
	Runs []concurrentRun `json:"runs"`
}

// concurrentRun is one strategy's rounds in one mode: the resets'
// latencies and the wall time of all the rounds, tests included.
type concurrentRun struct {
	Strategy string    `json:"strategy"`
	Leases   int       `json:"leases"` // at once: 1 or the plan's Leases
	WallMs   float64   `json:"wall_ms"`
	Ms       []float64 `json:"ms"`
}

func runConcurrent(ctx context.Context, b *bench, p concurrentPlan, r *concurrentResults) error {
	d, err := b.templateDaemon(ctx, "concurrent", nil, mainTemplate, p.Leases+1)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	for rep := range p.Reps {
		for _, s := range batchOrder(strategies, rep) {
			b.progress("concurrent: %s, rep %d/%d: 1 lease, then %d at once", s, rep+1, p.Reps, p.Leases)
			if err := concurrentStrategy(ctx, d, p, s, r); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
	}
	return nil
}

// concurrentStrategy runs one strategy's rounds, alone and together, on
// leases acquired for them and released after.
func concurrentStrategy(ctx context.Context, d *daemon, p concurrentPlan, strategy string, r *concurrentResults) error {
	if err := d.waitIdle(ctx, mainTemplate, p.Leases); err != nil {
		return err
	}
	leases := make([]*leaseVariant, 0, p.Leases)
	defer func() {
		for _, l := range leases {
			l.close()
		}
	}()
	for i := range p.Leases {
		l, err := newLeaseVariant(ctx, strategy, d, mainTemplate, strategy, fmt.Sprintf("concurrent-%d", i), false)
		if err != nil {
			return err
		}
		leases = append(leases, l)
	}
	for _, at := range []int{1, p.Leases} {
		rounds := p.AloneRounds
		if at > 1 {
			rounds = p.TogetherRounds
		}
		run := concurrentRun{Strategy: strategy, Leases: at}
		var mu sync.Mutex
		errs := make([]error, at)
		start := time.Now()
		together(at, func(i int) {
			for range rounds {
				if err := leases[i].test(ctx); err != nil {
					errs[i] = err
					return
				}
				t0 := time.Now()
				if err := leases[i].reset(ctx); err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				run.Ms = append(run.Ms, round3(ms(time.Since(t0))))
				mu.Unlock()
			}
		})
		run.WallMs = round3(ms(time.Since(start)))
		r.Runs = append(r.Runs, run)
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// concurrentOf pools a strategy's runs with leases at once: the resets'
// latencies and the resets per second of wall time.
func concurrentOf(r *concurrentResults, strategy string, leases int) (summary, float64) {
	var xs []float64
	var wall float64
	for _, run := range r.Runs {
		if run.Strategy == strategy && run.Leases == leases {
			xs = append(xs, run.Ms...)
			wall += run.WallMs
		}
	}
	return summarize(xs), float64(len(xs)) / wall * 1000
}

func reportConcurrent(rep *report, p concurrentPlan, r *concurrentResults) {
	rep.section("Many leases on one server", fmt.Sprintf("%d leases of one strategy on one server, each running the "+
		"standard test and a reset with no pause: first one lease alone (%s), then all %d at once (%s each); "+
		"%s per strategy, interleaved. Resets per second count every lease's resets over the wall time, tests included.",
		p.Leases, count(p.AloneRounds, "round"), p.Leases, count(p.TogetherRounds, "round"), count(p.Reps, "rep")))
	var rows [][]string
	for _, s := range strategies {
		alone, aloneRate := concurrentOf(r, s, 1)
		all, allRate := concurrentOf(r, s, p.Leases)
		if alone.N == 0 {
			continue
		}
		rows = append(rows, []string{s, fmtMs(alone.P50), fmtMs(alone.P99), fmt.Sprintf("%.0f", aloneRate),
			fmtMs(all.P50), fmtMs(all.P99), fmt.Sprintf("%.0f", allRate), fmtX(allRate / aloneRate)})
	}
	n := fmt.Sprint(p.Leases)
	rep.table([]string{"strategy", "1 lease: p50 ms", "p99 ms", "resets/s", n + " leases: p50 ms", "p99 ms", "resets/s",
		"resets/s gain"}, rows)
	if snap, rate := concurrentOf(r, "snapshot", p.Leases); snap.N > 0 {
		alone, aloneRate := concurrentOf(r, "snapshot", 1)
		rep.bullet("%d leases resetting at once on one server get %.0f snapshot resets per second in all (one lease alone: %.0f), "+
			"each taking p50 %s ms, p99 %s ms (alone: %s / %s ms).", p.Leases, rate, aloneRate, fmtMs(snap.P50), fmtMs(snap.P99),
			fmtMs(alone.P50), fmtMs(alone.P99))
	}
}
