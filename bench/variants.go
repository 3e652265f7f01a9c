package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
)

// variant is one way of getting a clean database between tests. Each sample
// runs the standard test (untimed), then the reset (timed).
type variant interface {
	name() string
	test(ctx context.Context) error
	reset(ctx context.Context) (ResetSample, error)
	// procs are the processes whose CPU time the test and reset use.
	procs() procs
	close()
}

// Variant names, in the order tables and the chart list them.
const (
	vLaravelDisk  = "laravel-truncate/disk"
	vLaravelTmpfs = "laravel-truncate/tmpfs"
	vFreshDisk    = "migrate-fresh/disk"
	vFreshTmpfs   = "migrate-fresh/tmpfs"
	vTruncate     = "testdbd truncate"
	vSnapshot     = "testdbd snapshot"
	vRollback     = "testdbd rollback"
	// vSnapshotKeep is the snapshot strategy on a lease that keeps
	// AUTO_INCREMENT (no rewind); its floor is vFloorSnapshotKeep.
	vSnapshotKeep = "testdbd snapshot, keep AUTO_INCREMENT"
)

// leaseVariants are the testdbd variants of the reset phase, each with its
// floor and essentials.
var leaseVariants = []string{vTruncate, vSnapshot, vRollback, vSnapshotKeep}

var variantOrder = func() []string {
	out := append([]string{vLaravelDisk, vLaravelTmpfs, vFreshDisk, vFreshTmpfs}, leaseVariants...)
	for _, v := range leaseVariants {
		out = append(out, floorOf[v])
	}
	for _, v := range leaseVariants {
		out = append(out, essentialsOf[v])
	}
	return out
}()

// strategyName maps a testdbd variant to its API strategy.
var strategyName = map[string]client.Strategy{
	vTruncate: client.StrategyTruncate, vSnapshot: client.StrategySnapshot, vRollback: client.StrategyRollback,
	vSnapshotKeep: client.StrategySnapshot,
}

// laravelVariant: a worker's database on a baseline server, truncated the
// way Laravel's DatabaseTruncation does.
type laravelVariant struct {
	label string
	db    *sql.DB
	conn  *sql.Conn
	l     *laravel
	p     procs
}

func newLaravelVariant(ctx context.Context, label string, b *baseServer, database string, src migrations.Source) (*laravelVariant, error) {
	if err := b.migrateFresh(ctx, database, src); err != nil {
		return nil, err
	}
	db, conn, err := b.appConn(ctx, database)
	if err != nil {
		return nil, err
	}
	l, err := newLaravel(ctx, conn, src)
	if err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	return &laravelVariant{label: label, db: db, conn: conn, l: l, p: procs{server: b.pid()}}, nil
}

func (v *laravelVariant) name() string                   { return v.label }
func (v *laravelVariant) test(ctx context.Context) error { return workload.Test(ctx, v.conn) }
func (v *laravelVariant) reset(ctx context.Context) (ResetSample, error) {
	start := time.Now()
	n, err := v.l.truncate(ctx)
	return ResetSample{ClientMs: ms(time.Since(start)), Tables: n}, err
}
func (v *laravelVariant) procs() procs { return v.p }
func (v *laravelVariant) close()       { v.conn.Close(); v.db.Close() }

// freshVariant: a worker's database dropped, re-created and migrated from
// scratch after every test.
type freshVariant struct {
	label    string
	b        *baseServer
	database string
	src      migrations.Source
	tables   int
}

func newFreshVariant(ctx context.Context, label string, b *baseServer, database string, src migrations.Source, tables int) (*freshVariant, error) {
	v := &freshVariant{label: label, b: b, database: database, src: src, tables: tables}
	return v, b.migrateFresh(ctx, database, src)
}

func (v *freshVariant) name() string { return v.label }
func (v *freshVariant) test(ctx context.Context) error {
	db, err := sql.Open("mysql", dsnFor(v.b, v.database))
	if err != nil {
		return err
	}
	defer db.Close()
	return workload.Test(ctx, db)
}
func (v *freshVariant) reset(ctx context.Context) (ResetSample, error) {
	start := time.Now()
	err := v.b.migrateFresh(ctx, v.database, v.src)
	return ResetSample{ClientMs: ms(time.Since(start)), Tables: v.tables}, err
}
func (v *freshVariant) procs() procs { return procs{server: v.b.pid()} }
func (v *freshVariant) close()       {}

func dsnFor(b *baseServer, database string) string {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", fmt.Sprintf("%s:%d", b.client.Host, b.client.Port)
	cfg.User, cfg.Passwd, cfg.DBName = b.client.User, b.client.Password, database
	return cfg.FormatDSN()
}

// leaseVariant: a lease of the daemon, reset through the REST API. The
// rollback variant writes inside a transaction it rolls back, as Laravel's
// RefreshDatabase or Django's TestCase do, and then asks for the reset.
type leaseVariant struct {
	label    string
	d        *daemon
	lease    *client.Lease
	db       *sql.DB
	rollback bool
	// work is the test; nil runs the standard one (runTest).
	work func(ctx context.Context, db *sql.DB, rollback bool) error
	p    procs
}

func newLeaseVariant(ctx context.Context, label string, d *daemon, template, worker string) (*leaseVariant, error) {
	base := strings.SplitN(label, "@", 2)[0]
	strategy, ok := strategyName[base]
	if !ok {
		return nil, fmt.Errorf("variant %q names no strategy (%q before an @)", label, "testdbd <strategy>")
	}
	l, err := d.acquireKeep(ctx, template, strategy, worker, base == vSnapshotKeep)
	if err != nil {
		return nil, err
	}
	db, err := openLease(l)
	if err != nil {
		_ = d.release(ctx, l.ID)
		return nil, err
	}
	p := procs{server: d.serverPID(ctx, l.InstanceID), daemon: d.pid()}
	return &leaseVariant{label: label, d: d, lease: l, db: db, rollback: strings.HasPrefix(label, vRollback), p: p}, nil
}

// openLease opens a pool of one connection to a leased database with the
// lease's own user. A reset ends the lease's sessions; the driver notices
// the closed connection and the pool opens a new one on next use.
func openLease(l *client.Lease) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(l.DSN)
	if err != nil {
		return nil, fmt.Errorf("lease dsn: %w", err)
	}
	return openOne(cfg)
}

// openOne opens a pool of one connection by cfg, which waits up to 10 s
// to connect.
func openOne(cfg *mysql.Config) (*sql.DB, error) {
	cfg.Timeout = 10 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

func (v *leaseVariant) name() string { return v.label }
func (v *leaseVariant) test(ctx context.Context) error {
	if v.work != nil {
		return v.work(ctx, v.db, v.rollback)
	}
	return runTest(ctx, v.db, v.rollback)
}

// runTest runs the standard test on db, inside a transaction it rolls back
// when rollback is set.
func runTest(ctx context.Context, db *sql.DB, rollback bool) error {
	if !rollback {
		return workload.Test(ctx, db)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := workload.Test(ctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Rollback()
}

func (v *leaseVariant) reset(ctx context.Context) (ResetSample, error) {
	start := time.Now()
	rep, err := v.d.api.ResetLease(ctx, v.lease.ID, "")
	s := ResetSample{ClientMs: ms(time.Since(start))}
	if err != nil {
		return s, err
	}
	p := rep.Phases
	s.ServerMs = round3(rep.TotalMs)
	s.PhasesMs = []float64{round3(p.SessionsMs), round3(p.DetectMs), round3(p.VerifyMs), round3(p.RestoreMs), round3(p.SchemaMs)}
	s.Tables = len(rep.TablesReset)
	s.Delta = len(rep.TablesDelta)
	s.Fallback = rep.FallbackReason
	return s, nil
}

func (v *leaseVariant) procs() procs { return v.p }

func (v *leaseVariant) close() {
	v.db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = v.d.release(ctx, v.lease.ID)
}

// interleave runs the variants in batches: in each batch every variant
// runs its warm-up and timed samples, and the order rotates and reverses
// from one batch to the next so that no variant always follows the same
// one. A warm-up round before the first batch is recorded as batch -1.
func interleave(ctx context.Context, vs []variant, batches int, counts func(v variant) (warm, timed int),
	progress func(batch int)) ([]ResetSample, error) {
	var out []ResetSample
	one := func(v variant, batch int, warm bool) error {
		p := v.procs()
		server0, _ := p.cpu()
		if err := v.test(ctx); err != nil {
			return fmt.Errorf("%s: test: %w", v.name(), err)
		}
		server1, daemon1 := p.cpu()
		s, err := v.reset(ctx)
		if err != nil {
			return fmt.Errorf("%s: reset: %w", v.name(), err)
		}
		server2, daemon2 := p.cpu()
		s.TestCPUMs, s.ServerCPUMs, s.DaemonCPUMs = server1-server0, server2-server1, daemon2-daemon1
		s.Variant, s.Batch, s.Warmup = v.name(), batch, warm
		s.ClientMs = round3(s.ClientMs)
		out = append(out, s)
		return nil
	}
	for _, v := range vs {
		warm, _ := counts(v)
		for i := 0; i < max(warm, 1); i++ {
			if err := one(v, -1, true); err != nil {
				return out, err
			}
		}
	}
	for b := 0; b < batches; b++ {
		progress(b)
		for _, v := range batchOrder(vs, b) {
			warm, timed := counts(v)
			for i := 0; i < warm; i++ {
				if err := one(v, b, true); err != nil {
					return out, err
				}
			}
			for i := 0; i < timed; i++ {
				if err := one(v, b, false); err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// batchOrder gives the order of the variants in a batch: batches come in
// pairs, the second of a pair in the reverse order of the first (AB/BA),
// and each pair rotates the order by one more place.
func batchOrder[T any](vs []T, batch int) []T {
	n := len(vs)
	out := make([]T, n)
	for i := range vs {
		out[i] = vs[(i+batch/2)%n]
	}
	if batch%2 == 1 {
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round3 keeps microsecond precision.
func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
