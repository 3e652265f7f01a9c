package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
)

// The suite phase: a synthetic suite of the standard test, serial and on
// parallel workers, with each way of getting a clean database.
var suitePhase = &Phase[suitePlan, suiteResults]{
	Name:   "suite",
	Full:   suitePlan{Tests: 64, Workers: []int{1, 8}, Reps: 2},
	Quick:  suitePlan{Tests: 16, Workers: []int{1, 4}, Reps: 1},
	Run:    runSuite,
	Report: reportSuite,
}

type suitePlan struct {
	// Tests tests split evenly over each count of Workers, Reps times per
	// variant, interleaved.
	Tests   int   `json:"tests"`
	Workers []int `json:"workers"`
	Reps    int   `json:"reps"`
}

type suiteResults struct {
	Runs []suiteRun `json:"runs"`
}

// suiteRun is one run of the suite: first worker started → last one done.
type suiteRun struct {
	Variant string  `json:"variant"`
	Workers int     `json:"workers"`
	WallMs  float64 `json:"wall_ms"`
}

// The suite's variants, in the report's order.
var suiteVariants = []struct{ id, label string }{
	{"laravel/disk", "Laravel-style truncation, disk"},
	{"laravel/tmpfs", "Laravel-style truncation, tmpfs"},
	{"truncate", "testdbd truncate"},
	{"snapshot", "testdbd snapshot"},
	{"rollback", "testdbd rollback"},
}

func runSuite(ctx context.Context, b *bench, p suitePlan, r *suiteResults) error {
	disk, tmpfs, err := b.baselines(ctx)
	if err != nil {
		return err
	}
	pool := 0
	for _, w := range p.Workers {
		pool = max(pool, w)
	}
	d, err := b.templateDaemon(ctx, "suite", nil, mainTemplate, pool)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	type cell struct {
		variant string
		workers int
	}
	var cells []cell
	for _, v := range suiteVariants {
		for _, w := range p.Workers {
			cells = append(cells, cell{v.id, w})
		}
	}
	src := standardSource(standardTables)
	for rep := range p.Reps {
		for _, c := range batchOrder(cells, rep) {
			if err := d.waitIdle(ctx, mainTemplate, pool); err != nil {
				return err
			}
			per := p.Tests / c.workers
			var wall time.Duration
			switch c.variant {
			case "laravel/disk":
				wall, err = suiteLaravel(ctx, disk, src, c.workers, per)
			case "laravel/tmpfs":
				wall, err = suiteLaravel(ctx, tmpfs, src, c.workers, per)
			default:
				wall, err = suiteTestdbd(ctx, d, c.variant, c.workers, per)
			}
			if err != nil {
				return fmt.Errorf("%s on %d workers: %w", c.variant, c.workers, err)
			}
			r.Runs = append(r.Runs, suiteRun{Variant: c.variant, Workers: c.workers, WallMs: round3(ms(wall))})
			b.progress("suite %d/%d: %s, %d tests on %d workers: %.2f s", rep+1, p.Reps, c.variant, per*c.workers, c.workers, wall.Seconds())
		}
	}
	return nil
}

// runWorkers runs worker(0) … worker(w-1) at once and times them.
func runWorkers(w int, worker func(i int) error) (time.Duration, error) {
	var g errgroup.Group
	start := time.Now()
	for i := range w {
		g.Go(func() error { return worker(i) })
	}
	err := g.Wait()
	return time.Since(start), err
}

// suiteLaravel: each worker runs migrate:fresh on its own database before
// its first test (as Laravel's DatabaseTruncation and parallel testing do)
// and truncates before every other test.
func suiteLaravel(ctx context.Context, s *baseServer, src migrations.Source, workers, per int) (time.Duration, error) {
	return runWorkers(workers, func(i int) error {
		database := fmt.Sprintf("suite_w%d", i)
		if err := s.migrateFresh(ctx, database, src); err != nil {
			return err
		}
		db, err := s.open(database)
		if err != nil {
			return err
		}
		l, err := laravelOn(ctx, database, db, src)
		if err != nil {
			return err
		}
		defer l.close()
		for t := range per {
			if t > 0 {
				if err := l.reset(ctx); err != nil {
					return err
				}
			}
			if err := workload.Test(ctx, l.conn); err != nil {
				return err
			}
		}
		return nil
	})
}

// suiteTestdbd: each worker acquires a lease, resets it through the REST
// API before every test but the first, and releases it at the end.
func suiteTestdbd(ctx context.Context, d *daemon, strategy string, workers, per int) (time.Duration, error) {
	return runWorkers(workers, func(i int) error {
		l, err := newLeaseVariant(ctx, strategy, d, mainTemplate, strategy, fmt.Sprintf("suite-w%d", i), false)
		if err != nil {
			return err
		}
		defer l.close()
		for t := range per {
			if t > 0 {
				if err := l.reset(ctx); err != nil {
					return err
				}
			}
			if err := l.test(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// suiteMedian is the median wall time of a variant's runs on workers.
func suiteMedian(r *suiteResults, variant string, workers int) float64 {
	var xs []float64
	for _, s := range r.Runs {
		if s.Variant == variant && s.Workers == workers {
			xs = append(xs, s.WallMs)
		}
	}
	return median(xs)
}

func reportSuite(rep *report, p suitePlan, r *suiteResults) {
	serial, parallel := p.Workers[0], p.Workers[len(p.Workers)-1]
	rep.section("A synthetic suite, serial and parallel", fmt.Sprintf("%d tests, each the standard test, split evenly over "+
		"%d and over %d workers, each worker with its own database and connection. Laravel-style workers run "+
		"`migrate:fresh` on their own database first and truncate before every other test; testdbd workers acquire a lease "+
		"of the already built template, reset before every test but the first and release at the end. Wall time from the "+
		"first worker's start to the last one's end, median of %s.", p.Tests, serial, parallel, count(p.Reps, "run")))
	base := suiteMedian(r, "laravel/disk", parallel)
	var rows [][]string
	for _, v := range suiteVariants {
		s, par := suiteMedian(r, v.id, serial), suiteMedian(r, v.id, parallel)
		rows = append(rows, []string{v.label, fmtSec(s), fmtSec(par), fmtX(s / par), fmtX(base / par)})
	}
	rep.table([]string{"variant", count(serial, "worker") + " s", count(parallel, "worker") + " s",
		"parallel speed-up", fmt.Sprintf("speed-up vs Laravel, disk, %d workers", parallel)}, rows)
	snap := suiteMedian(r, "snapshot", parallel)
	rep.bullet("A suite of %d tests on %d parallel workers takes %s s with snapshot resets: %s faster than with Laravel-style "+
		"truncation on disk (%s s), %s faster than on tmpfs (%s s).", p.Tests, parallel, fmtSec(snap), fmtX(base/snap),
		fmtSec(base), fmtX(suiteMedian(r, "laravel/tmpfs", parallel)/snap), fmtSec(suiteMedian(r, "laravel/tmpfs", parallel)))
}
