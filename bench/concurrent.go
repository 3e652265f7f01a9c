package main

import (
	"context"
	"fmt"
	"math"
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
	measure := func(mode string, rounds int, run func() error) error {
		cpu, start := workers[0].v.procs().mark(), time.Now()
		err := run()
		c := ConcurrentCPU{Mode: mode, Rounds: rounds, WallMs: round3(ms(time.Since(start)))}
		c.ServerCPUMs, c.DaemonCPUMs, c.BenchCPUMs = cpu.used()
		b.res.ConcurrentCPU = append(b.res.ConcurrentCPU, c)
		return err
	}
	if err := measure("alone", b.plan.ConcurrentRounds*len(strategyVariants), func() error { return b.alone(workers, per, round) }); err != nil {
		return err
	}
	b.progress("concurrent: %d rounds one lease at a time done; now %d leases at once", b.plan.ConcurrentRounds, len(workers))
	return measure("together", b.plan.ConcurrentRounds*len(workers), func() error { return b.together(workers, round) })
}

// alone runs the rounds one lease at a time: the first lease of each
// strategy, in turn.
func (b *bench) alone(workers []*worker, per int, round func(*worker, string) error) error {
	for r := 0; r < b.plan.ConcurrentRounds; r++ {
		for i := 0; i < len(workers); i += per {
			if err := round(workers[i], "alone"); err != nil {
				return err
			}
		}
	}
	return nil
}

// together runs every lease's rounds at once.
func (b *bench) together(workers []*worker, round func(*worker, string) error) error {
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

// worker is one lease of the concurrent phase.
type worker struct {
	v   *leaseVariant
	rng *rand.Rand
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
	renderConcurrentCPU(w, r)
	renderContention(w, r)
}

// cpuShare is how many cores variant v's resets kept busy while they ran
// one at a time (the reset latency phase): their mean CPU time, server and
// daemon, over their mean client-observed time. NaN without CPU readings.
func cpuShare(r *Results, v string) float64 {
	server, daemon, _ := resetCPU(r.Resets, v)
	if math.IsNaN(server) {
		return math.NaN()
	}
	return (server + daemon) / mean(resetField(r.Resets, v, func(s ResetSample) float64 { return s.ClientMs }))
}

// contentionLeast is the least together/alone ratio of a reset that keeps
// share cores busy alone, when leases of the concurrent phase all run at
// once on the machine's cores: each waits for the others' work, so its
// time grows with the leases over the cores, whatever its CPU time (1 when
// the cores are not all busy).
func contentionLeast(r *Results, share float64) float64 {
	leases := float64(r.Plan.ConcurrentPerStrategy * len(strategyVariants))
	return max(1, leases*share/float64(r.Machine.Cores))
}

// contentionNote is the estimate of renderContention for a bar's row: what
// a reset as busy as the floor's restore comes to with every lease at once.
func contentionNote(share float64, cores, leases int, least float64) string {
	if math.IsNaN(least) {
		return ""
	}
	return fmt.Sprintf("; about the least (an estimate, see the concurrent section): the floor's restore keeps %.2f of the %d cores busy alone; "+
		"a reset that busy takes about %s as long as alone when %d leases share the cores with no pause, whatever its CPU time",
		share, cores, fmtX(least), leases)
}

// renderContention says how far together/alone can fall at best for a
// reset that keeps the cores as busy as testdbd's or the floor's.
func renderContention(w *strings.Builder, r *Results) {
	if math.IsNaN(cpuShare(r, vSnapshot)) {
		return
	}
	leases := r.Plan.ConcurrentPerStrategy * len(strategyVariants)
	fmt.Fprintf(w, "Why together/alone cannot fall much: every lease runs its tests and resets with no pause, so all %d keep the "+
		"%d cores busy, and each reset waits for the others' work. A reset that keeps s cores busy alone (its CPU time over its "+
		"time) then takes about %d × s / %d times as long as alone when the cores are shared evenly and its CPU time stays what "+
		"it was alone, however little that is: a cheaper reset is faster alone and together alike. s comes from the reset "+
		"latency phase, where resets run one at a time: testdbd's (server and daemon) and the floor's (the server's own "+
		"restore, no daemon).\n\n", leases, r.Machine.Cores, leases, r.Machine.Cores)
	fmt.Fprintf(w, "| strategy | cores busy alone: testdbd / floor | least together / alone at that: testdbd / floor | measured together / alone |\n|---|---|---|---|\n")
	for _, v := range strategyVariants {
		a, t := concurrentOf(r.Concurrent, "alone", v), concurrentOf(r.Concurrent, "together", v)
		st, sf := cpuShare(r, v), cpuShare(r, floorOf[v])
		fmt.Fprintf(w, "| %s | %.2f / %.2f | %s / %s | %s |\n", strings.TrimPrefix(v, "testdbd "), st, sf,
			fmtX(contentionLeast(r, st)), fmtX(contentionLeast(r, sf)), fmtX(t.P50/a.P50))
	}
	fmt.Fprintf(w, "\n")
}

// renderConcurrentCPU says how busy the cores were in each mode, and the
// least time a round of every lease at once takes at the CPU time a round
// costs.
func renderConcurrentCPU(w *strings.Builder, r *Results) {
	if len(r.ConcurrentCPU) == 0 {
		return
	}
	leases := r.Plan.ConcurrentPerStrategy * len(strategyVariants)
	fmt.Fprintf(w, "CPU time of the server, the daemon and the leases' clients (the benchmark) over each mode, per round (one test and "+
		"its reset), and how busy that kept the machine's %d cores. \"least\" is %d rounds' CPU time over the cores: how long "+
		"each lease waits for one round of its own when all %d share the cores and nothing is idle, against the one-lease "+
		"reset p50 of all strategies.\n\n", r.Machine.Cores, leases, leases)
	fmt.Fprintf(w, "| mode | rounds | wall s | CPU per round, ms: server / daemon / clients / total | cores busy | least time for a round of every lease | over the alone reset p50 |\n|---|---|---|---|---|---|---|\n")
	var aloneP50 []float64
	for _, s := range r.Concurrent {
		if s.Mode == "alone" {
			aloneP50 = append(aloneP50, s.ClientMs)
		}
	}
	for _, c := range r.ConcurrentCPU {
		n := float64(max(c.Rounds, 1))
		total := (c.ServerCPUMs + c.DaemonCPUMs + c.BenchCPUMs) / n
		least := total * float64(leases) / float64(r.Machine.Cores)
		fmt.Fprintf(w, "| %s | %d | %s | %s / %s / %s / %s | %.0f%% | %s ms | %s |\n", c.Mode, c.Rounds, fmtSec(c.WallMs),
			fmtMs(c.ServerCPUMs/n), fmtMs(c.DaemonCPUMs/n), fmtMs(c.BenchCPUMs/n), fmtMs(total),
			100*(c.ServerCPUMs+c.DaemonCPUMs+c.BenchCPUMs)/(c.WallMs*float64(r.Machine.Cores)), fmtMs(least), fmtX(least/median(aloneP50)))
	}
	fmt.Fprintf(w, "\n")
}
