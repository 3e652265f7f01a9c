package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// ConcurrentSample is one test → reset of the concurrent phase.
type ConcurrentSample struct {
	Mode     string  `json:"mode"` // "alone": one lease at a time; "together": every lease at once
	Variant  string  `json:"variant"`
	ClientMs float64 `json:"client_ms"`
	// DDL: this test changed the schema; Full: its reset checked every
	// table (the report's fallback reason says so).
	DDL  bool `json:"ddl,omitempty"`
	Full bool `json:"full,omitempty"`
}

// concurrentDDL is the schema change a share of the concurrent phase's
// tests make: on a table the standard test does not write.
const concurrentDDL = "ALTER TABLE t0030 ADD COLUMN extra INT NULL"

// concurrentPhase: what a CI runner does to one server. Leases of each
// strategy (plan.ConcurrentPerStrategy each) run the standard test and a
// reset, plan.ConcurrentRounds times, a share of the tests (plan.DDLShare)
// with a schema change; first one lease at a time, then all at once. It
// measures whether one lease's schema change makes the others' resets
// check every table, and what running together costs.
func (b *bench) concurrentPhase(ctx context.Context) error {
	per := b.plan.ConcurrentPerStrategy
	d, err := b.poolDaemon(ctx, "concurrent", per*len(strategyVariants)+1)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	type worker struct {
		v   *leaseVariant
		rng *rand.Rand
	}
	var workers []*worker
	defer func() {
		for _, w := range workers {
			w.v.close()
		}
	}()
	for _, v := range strategyVariants {
		for i := 0; i < per; i++ {
			lv, err := newLeaseVariant(ctx, v, d, mainTemplate, fmt.Sprintf("concurrent-%s-%d", v, i))
			if err != nil {
				return err
			}
			workers = append(workers, &worker{v: lv, rng: rand.New(rand.NewPCG(uint64(len(workers)), 7))})
		}
	}
	var mu sync.Mutex
	round := func(w *worker, mode string) error {
		ddl := w.rng.Float64() < b.plan.DDLShare
		if err := w.v.test(ctx); err != nil {
			return err
		}
		if ddl {
			if _, err := w.v.db.ExecContext(ctx, concurrentDDL); err != nil {
				return fmt.Errorf("%s: %w", concurrentDDL, err)
			}
		}
		start := time.Now()
		rep, err := w.v.d.api.ResetLease(ctx, w.v.lease.ID, "")
		s := ConcurrentSample{Mode: mode, Variant: w.v.label, ClientMs: round3(ms(time.Since(start))), DDL: ddl}
		if err != nil {
			return err
		}
		s.Full = strings.Contains(rep.FallbackReason, "checked every table")
		mu.Lock()
		b.res.Concurrent = append(b.res.Concurrent, s)
		mu.Unlock()
		return nil
	}
	// One lease at a time: the first lease of each strategy, in turn.
	for r := 0; r < b.plan.ConcurrentRounds; r++ {
		for i := 0; i < len(workers); i += per {
			if err := round(workers[i], "alone"); err != nil {
				return err
			}
		}
	}
	b.progress("concurrent: %d rounds one lease at a time done; now %d leases at once", b.plan.ConcurrentRounds, len(workers))
	errs := make(chan error, len(workers))
	for _, w := range workers {
		go func() {
			for r := 0; r < b.plan.ConcurrentRounds; r++ {
				if err := round(w, "together"); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// concurrentSummary is the concurrent phase's figures for one variant and
// mode.
type concurrentSummary struct {
	summary
	ddl, full int
}

func concurrentOf(samples []ConcurrentSample, mode, variant string) concurrentSummary {
	var xs []float64
	var c concurrentSummary
	for _, s := range samples {
		if s.Mode == mode && s.Variant == variant {
			xs = append(xs, s.ClientMs)
			if s.DDL {
				c.ddl++
			}
			if s.Full {
				c.full++
			}
		}
	}
	c.summary = summarize(xs, nil)
	return c
}

func renderConcurrent(w *strings.Builder, r *Results) {
	if len(r.Concurrent) == 0 {
		return
	}
	pl := r.Plan
	fmt.Fprintf(w, "## Concurrent leases on one server\n\n")
	fmt.Fprintf(w, "%d leases of each strategy on one server (%d in all), each running the standard test and a reset %d times, "+
		"%.0f%% of the tests adding a column to a table (`%s`; its reset then re-creates the database); first one lease at "+
		"a time (\"alone\"), then all at once (\"together\"). A reset of a lease that changed nothing in its schema should not "+
		"check every table because another lease did: the share of resets that checked every table should follow the share of "+
		"tests that changed the schema. Client-observed, milliseconds.\n\n",
		pl.ConcurrentPerStrategy, pl.ConcurrentPerStrategy*len(strategyVariants), pl.ConcurrentRounds, 100*pl.DDLShare, concurrentDDL)
	fmt.Fprintf(w, "| strategy | alone p50 | together p50 | together p99 | together / alone (p50) | resets that checked every table (together) | tests that changed the schema (together) |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|\n")
	for _, v := range strategyVariants {
		a, t := concurrentOf(r.Concurrent, "alone", v), concurrentOf(r.Concurrent, "together", v)
		if t.N == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d of %d (%.1f%%) | %d (%.1f%%) |\n", strings.TrimPrefix(v, "testdbd "),
			fmtMs(a.P50), fmtMs(t.P50), fmtMs(t.P99), fmtX(t.P50/a.P50), t.full, t.N, 100*float64(t.full)/float64(t.N),
			t.ddl, 100*float64(t.ddl)/float64(t.N))
	}
	fmt.Fprintf(w, "\n")
}
