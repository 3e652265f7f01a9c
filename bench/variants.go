package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
)

// variant is one way of getting a clean database between tests. Each sample
// runs a test (untimed), then the reset (timed).
type variant interface {
	name() string
	test(ctx context.Context) error
	reset(ctx context.Context) error
	close()
}

// The strategies of testdbd, in the order the report lists them.
var strategies = []string{"snapshot", "truncate", "rollback"}

// strategyOf maps a strategy's name to the API's.
var strategyOf = map[string]client.Strategy{
	"truncate": client.StrategyTruncate, "snapshot": client.StrategySnapshot, "rollback": client.StrategyRollback,
}

// laravelVariant: a worker's database truncated the way Laravel's
// DatabaseTruncation does, over the worker's one connection.
type laravelVariant struct {
	label string
	db    *sql.DB
	conn  *sql.Conn
	l     *laravel
	done  func() // at close, after the connection's (nil: nothing)
	// work is the test; nil runs the standard one.
	work testFunc
}

// newLaravelVariant migrates database from scratch on a baseline server
// and truncates it.
func newLaravelVariant(ctx context.Context, label string, b *baseServer, database string, src migrations.Source) (*laravelVariant, error) {
	if err := b.migrateFresh(ctx, database, src); err != nil {
		return nil, err
	}
	db, err := b.open(database)
	if err != nil {
		return nil, err
	}
	return laravelOn(ctx, label, db, src)
}

// newLeaseLaravelVariant truncates a leased database the Laravel way,
// never asking the daemon for a reset: the conventional reset on the same
// server as testdbd's.
func newLeaseLaravelVariant(ctx context.Context, label string, d *daemon, template, worker string, src migrations.Source) (*laravelVariant, error) {
	l, err := d.acquire(ctx, template, client.StrategySnapshot, worker, false)
	if err != nil {
		return nil, err
	}
	release := func() { _ = d.release(context.WithoutCancel(ctx), l.ID) }
	db, err := openLease(l)
	if err != nil {
		release()
		return nil, err
	}
	v, err := laravelOn(ctx, label, db, src)
	if err != nil {
		release()
		return nil, err
	}
	v.done = release
	return v, nil
}

func laravelOn(ctx context.Context, label string, db *sql.DB, src migrations.Source) (*laravelVariant, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	l, err := newLaravel(ctx, conn, src)
	if err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	return &laravelVariant{label: label, db: db, conn: conn, l: l}, nil
}

func (v *laravelVariant) name() string { return v.label }
func (v *laravelVariant) test(ctx context.Context) error {
	if v.work != nil {
		return v.work(ctx, v.conn, false)
	}
	return workload.Test(ctx, v.conn)
}
func (v *laravelVariant) reset(ctx context.Context) error { _, err := v.l.truncate(ctx); return err }
func (v *laravelVariant) close() {
	v.conn.Close()
	v.db.Close()
	if v.done != nil {
		v.done()
	}
}

// freshVariant: a worker's database dropped, re-created and migrated from
// scratch after every test.
type freshVariant struct {
	label    string
	b        *baseServer
	database string
	src      migrations.Source
}

func newFreshVariant(ctx context.Context, label string, b *baseServer, database string, src migrations.Source) (*freshVariant, error) {
	v := &freshVariant{label: label, b: b, database: database, src: src}
	return v, b.migrateFresh(ctx, database, src)
}

func (v *freshVariant) name() string { return v.label }
func (v *freshVariant) test(ctx context.Context) error {
	db, err := v.b.open(v.database)
	if err != nil {
		return err
	}
	defer db.Close()
	return workload.Test(ctx, db)
}
func (v *freshVariant) reset(ctx context.Context) error {
	return v.b.migrateFresh(ctx, v.database, v.src)
}
func (v *freshVariant) close() {}

// testFunc is a test other than the standard one, on one connection; in a
// transaction it rolls back when rollback is set.
type testFunc func(ctx context.Context, conn *sql.Conn, rollback bool) error

// leaseVariant: a lease of the daemon, reset through the REST API. The
// rollback strategy's test writes inside a transaction it rolls back, as
// Laravel's RefreshDatabase or Django's TestCase do, and then asks for the
// reset.
type leaseVariant struct {
	label    string
	d        *daemon
	lease    *client.Lease
	db       *sql.DB
	rollback bool
	// work is the test; nil runs the standard one.
	work testFunc
}

// newLeaseVariant acquires a lease of template with strategy, keeping
// AUTO_INCREMENT where the test moved it when keep is set.
func newLeaseVariant(ctx context.Context, label string, d *daemon, template, strategy, worker string, keep bool) (*leaseVariant, error) {
	l, err := d.acquire(ctx, template, strategyOf[strategy], worker, keep)
	if err != nil {
		return nil, err
	}
	db, err := openLease(l)
	if err != nil {
		_ = d.release(ctx, l.ID)
		return nil, err
	}
	return &leaseVariant{label: label, d: d, lease: l, db: db, rollback: strategy == "rollback"}, nil
}

func (v *leaseVariant) name() string { return v.label }
func (v *leaseVariant) test(ctx context.Context) error {
	if v.work != nil {
		conn, err := v.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		return v.work(ctx, conn, v.rollback)
	}
	return runTest(ctx, v.db, v.rollback)
}
func (v *leaseVariant) reset(ctx context.Context) error {
	_, err := v.d.api.ResetLease(ctx, v.lease.ID, "")
	return err
}
func (v *leaseVariant) close() {
	v.db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = v.d.release(ctx, v.lease.ID)
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

// interleaved is how interleave samples: batches batches, in each of
// which counts gives every variant's untimed and timed samples; batch -1
// is the warm-up before the first batch, whose timed samples are not kept.
type interleaved struct {
	batches int
	counts  func(v variant, batch int) (warm, timed int)
}

// uniform is interleaved with the same counts for every variant and batch,
// and at least one untimed sample each before the first batch.
func uniform(batches, warm, timed int) interleaved {
	return interleaved{batches: batches, counts: func(_ variant, batch int) (int, int) {
		if batch < 0 {
			return max(warm, 1), 0
		}
		return warm, timed
	}}
}

// interleave runs the variants in batches: in each batch every variant
// runs its warm-up and timed samples, the order changing from batch to
// batch (batchOrder). It returns each variant's timed resets, in vs's
// order, and reports each batch's start to progress.
func interleave(ctx context.Context, vs []variant, how interleaved, progress func(batch int)) ([]Series, error) {
	out := make([]Series, len(vs))
	index := map[variant]int{}
	for i, v := range vs {
		out[i].Name, index[v] = v.name(), i
	}
	one := func(v variant, timed bool) error {
		if err := v.test(ctx); err != nil {
			return fmt.Errorf("%s: test: %w", v.name(), err)
		}
		start := time.Now()
		if err := v.reset(ctx); err != nil {
			return fmt.Errorf("%s: reset: %w", v.name(), err)
		}
		if timed {
			s := &out[index[v]]
			s.Ms = append(s.Ms, round3(ms(time.Since(start))))
		}
		return nil
	}
	batch := func(b int, order []variant) error {
		for _, v := range order {
			warm, timed := how.counts(v, b)
			if b < 0 {
				timed = 0
			}
			for i := range warm + timed {
				if err := one(v, i >= warm); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := batch(-1, vs); err != nil {
		return out, err
	}
	for b := range how.batches {
		progress(b)
		if err := batch(b, batchOrder(vs, b)); err != nil {
			return out, err
		}
	}
	return out, nil
}

// closeAll closes the variants.
func closeAll(vs []variant) {
	for _, v := range vs {
		v.close()
	}
}
