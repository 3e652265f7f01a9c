package main

import (
	"context"
	"fmt"
	"strings"
)

// The reset phase: testdbd's strategies against each other and against
// the conventional resets, after the same test, interleaved.
var resetPhase = &Phase[resetPlan, resetResults]{
	Name:   "reset",
	Full:   resetPlan{Batches: 10, Warmup: 1, PerBatch: 10, FreshEvery: 2, Pool: 8},
	Quick:  resetPlan{Batches: 2, Warmup: 1, PerBatch: 3, FreshEvery: 2, Pool: 8},
	Run:    runReset,
	Report: reportReset,
}

type resetPlan struct {
	// Batches rounds; in each, every variant runs Warmup untimed and
	// PerBatch timed test → reset pairs, but migrate from scratch, which
	// takes up to seconds, one timed pair every FreshEvery batches.
	Batches    int `json:"batches"`
	Warmup     int `json:"warmup"`
	PerBatch   int `json:"per_batch"`
	FreshEvery int `json:"fresh_every"`
	// Pool is the worker databases of the daemon's server.
	Pool int `json:"pool"`
}

type resetResults struct {
	Servers []ServerInfo `json:"servers"` // the baselines'
	Resets  []Series     `json:"resets"`  // one per variant (resetVariants)
}

// The reset phase's variants, in the report's order, with what it calls
// them.
var resetVariants = []struct{ id, label string }{
	{"laravel/disk", "Laravel-style truncation, disk, default settings"},
	{"laravel/tmpfs", "Laravel-style truncation, tmpfs"},
	{"fresh/disk", "migrate from scratch, disk"},
	{"fresh/tmpfs", "migrate from scratch, tmpfs"},
	{"truncate", "testdbd truncate"},
	{"snapshot", "testdbd snapshot"},
	{"rollback", "testdbd rollback"},
	{"snapshot/keep", "testdbd snapshot, keeping AUTO_INCREMENT"},
}

func runReset(ctx context.Context, b *bench, p resetPlan, r *resetResults) error {
	disk, tmpfs, err := b.baselines(ctx)
	if err != nil {
		return err
	}
	for _, s := range []*baseServer{disk, tmpfs} {
		inf, err := s.info(ctx)
		if err != nil {
			return err
		}
		r.Servers = append(r.Servers, inf)
	}
	d, err := b.templateDaemon(ctx, "reset", nil, mainTemplate, p.Pool)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	src := standardSource(standardTables)
	var vs []variant
	defer func() { closeAll(vs) }()
	add := func(v variant, err error) error {
		if err == nil {
			vs = append(vs, v)
		}
		return err
	}
	err = add(newLaravelVariant(ctx, "laravel/disk", disk, "laravel", src))
	if err == nil {
		err = add(newLaravelVariant(ctx, "laravel/tmpfs", tmpfs, "laravel", src))
	}
	if err == nil {
		err = add(newFreshVariant(ctx, "fresh/disk", disk, "fresh", src))
	}
	if err == nil {
		err = add(newFreshVariant(ctx, "fresh/tmpfs", tmpfs, "fresh", src))
	}
	for _, s := range []string{"truncate", "snapshot", "rollback", "snapshot/keep"} {
		if err == nil {
			strategy, keep := strings.CutSuffix(s, "/keep")
			err = add(newLeaseVariant(ctx, s, d, mainTemplate, strategy, "reset-"+s, keep))
		}
	}
	if err != nil {
		return err
	}
	how := interleaved{batches: p.Batches, counts: func(v variant, batch int) (int, int) {
		switch {
		case !strings.HasPrefix(v.name(), "fresh/"):
			return uniform(p.Batches, p.Warmup, p.PerBatch).counts(v, batch)
		case batch >= 0 && batch%p.FreshEvery == 0:
			return 0, 1
		}
		return 0, 0 // its set-up migrated it: warm enough
	}}
	r.Resets, err = interleave(ctx, vs, how, func(batch int) {
		b.progress("reset: batch %d/%d (%d variants)", batch+1, p.Batches, len(vs))
	})
	return err
}

func reportReset(rep *report, p resetPlan, r *resetResults) {
	disk := summarize(seriesOf(r.Resets, "laravel/disk"))
	tmpfs := summarize(seriesOf(r.Resets, "laravel/tmpfs"))
	snap := summarize(seriesOf(r.Resets, "snapshot"))
	var others []string
	for _, s := range []string{"truncate", "rollback"} {
		others = append(others, fmt.Sprintf("%s %s ms", s, fmtMs(median(seriesOf(r.Resets, s)))))
	}
	rep.bullet("After a test that writes 5 of %d tables, a snapshot reset takes p50 %s ms: %s faster than Laravel-style "+
		"truncation on a disk-backed default-config server (%s ms) and %s faster than on tmpfs (%s ms); %s.",
		standardTables, fmtMs(snap.P50), fmtX(disk.P50/snap.P50), fmtMs(disk.P50), fmtX(tmpfs.P50/snap.P50),
		fmtMs(tmpfs.P50), strings.Join(others, ", "))

	rep.section("Reset after a test", fmt.Sprintf("The standard workload: %d InnoDB tables, a third with foreign keys, "+
		"10 seeded, views, triggers, a procedure. Each sample is its test (5 tables written, untimed) and then one timed "+
		"reset; the variants are interleaved in %d batches of %d samples each (migrate from scratch: one every %d batches). "+
		"Laravel-style truncation is what `DatabaseTruncation` does: one `select exists` per table, `TRUNCATE` of "+
		"the non-empty ones, the seeder again. Migrate from scratch drops the database and runs every migration and the seed. "+
		"testdbd resets through its REST API (`POST /v1/leases/{id}:reset`), the rollback strategy after a test "+
		"that ran in a transaction it rolled back.", standardTables, p.Batches, p.PerBatch, p.FreshEvery))
	var rows [][]string
	for _, v := range resetVariants {
		s := summarize(seriesOf(r.Resets, v.id))
		if s.N == 0 {
			continue
		}
		rows = append(rows, []string{v.label, fmtMs(s.P50), fmtMs(s.P99), fmtX(disk.P50 / s.P50), fmtX(tmpfs.P50 / s.P50)})
	}
	rep.table([]string{"reset", "p50 ms", "p99 ms", "speed-up vs Laravel, disk", "speed-up vs Laravel, tmpfs"}, rows)
	var servers []string
	for _, s := range r.Servers {
		where, what := "on disk under "+rep.res.Machine.DiskPath, "the server's defaults"
		if s.OnTmpfs {
			where, what = "on tmpfs", "testdbd's settings, which its own server runs with too"
		}
		servers = append(servers, fmt.Sprintf("%s: innodb_flush_log_at_trx_commit=%s, innodb_doublewrite=%s, log_bin=%s (%s)",
			where, s.Settings["innodb_flush_log_at_trx_commit"], s.Settings["innodb_doublewrite"], s.Settings["log_bin"], what))
	}
	if len(servers) > 0 {
		rep.para("The baseline servers' datadirs: %s.", strings.Join(servers, "; "))
	}
}
