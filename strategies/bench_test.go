package strategies_test

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

// standardFixture builds the standard 100-table template on a native server.
func standardFixture(b *testing.B, tables int) *fixture {
	b.Helper()
	srv := testenv.ServerOf(b, testenv.Providers()[0])
	ctx := context.Background()
	if _, err := srv.DB.ExecContext(ctx, "CREATE DATABASE tpl"); err != nil {
		b.Fatal(err)
	}
	db, err := instance.OpenDatabase(srv.Admin(), "tpl", 2)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := migrations.Run(ctx, db, workload.Standard(tables), nil, nil); err != nil {
		b.Fatal(err)
	}
	f := &fixture{t: b, root: b, srv: srv, ddl: &strategies.DDLCounter{}, binlog: &binlog.Log{}}
	if f.schema, err = schema.Capture(ctx, srv.DB, "tpl", ""); err != nil {
		b.Fatal(err)
	}
	return f
}

// report adds p50 and p99 of samples (milliseconds) to the benchmark's output.
func report(b *testing.B, samples []time.Duration, prefix string) {
	if len(samples) == 0 {
		return
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	at := func(q float64) float64 {
		return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), prefix+"p50-ms")
	if prefix == "" {
		b.ReportMetric(at(0.99), "p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkReset times each strategy's reset after the standard test (5
// dirty tables of 100; the rollback test runs in a transaction the client
// rolls back), directly against the server (no daemon, no HTTP), with the
// raw floor measured on the same server: a round trip, a ROLLBACK, one
// detection query, and restoring the 5 known dirty tables in one batch.
func BenchmarkReset(b *testing.B) {
	for _, tables := range []int{100, 1000} {
		f := standardFixture(b, tables)
		ctx := context.Background()
		for _, s := range testdbd.Strategies {
			tg, db := f.worker(fmt.Sprintf("w_bench_%s_%d", s, tables), s)
			b.Run(fmt.Sprintf("tables=%d/%s", tables, s), func(b *testing.B) {
				var samples, sessions, detect, verify, restore []time.Duration
				defer func() {
					report(b, sessions, "sessions-")
					report(b, detect, "detect-")
					report(b, verify, "verify-")
					report(b, restore, "restore-")
				}()
				for i := 0; i < b.N; i++ {
					if err := runStandardTest(ctx, db, s); err != nil {
						b.Fatal(err)
					}
					rep, base, err := strategies.Reset(ctx, *tg)
					if err != nil {
						b.Fatal(err)
					}
					if rep.FallbackReason != "" || len(rep.TablesReset) == 0 {
						b.Fatalf("unexpected report: %+v", rep)
					}
					tg.Baseline = base
					samples = append(samples, rep.Total)
					sessions = append(sessions, rep.Phases.Sessions)
					detect = append(detect, rep.Phases.Detect)
					verify = append(verify, rep.Phases.Verify)
					restore = append(restore, rep.Phases.Restore)
				}
				report(b, samples, "")
			})
		}
		if tables != 100 {
			continue
		}
		floor := map[string]func(*sql.Conn) (time.Duration, error){
			"round-trip": func(c *sql.Conn) (time.Duration, error) {
				start := time.Now()
				_, err := c.ExecContext(ctx, "SELECT 1")
				return time.Since(start), err
			},
			"rollback": func(c *sql.Conn) (time.Duration, error) {
				if _, err := c.ExecContext(ctx, "BEGIN; INSERT INTO w_floor.t0015 (name) VALUES ('x')"); err != nil {
					return 0, err
				}
				start := time.Now()
				_, err := c.ExecContext(ctx, "ROLLBACK")
				return time.Since(start), err
			},
			"detect-query": func(c *sql.Conn) (time.Duration, error) {
				start := time.Now()
				rows, err := c.QueryContext(ctx, "SELECT NAME, TABLE_ID, MODIFIED_COUNTER, AUTOINC FROM information_schema.INNODB_SYS_TABLESTATS WHERE NAME LIKE 'w\\_floor/%'")
				if err != nil {
					return 0, err
				}
				for rows.Next() {
				}
				rows.Close()
				return time.Since(start), rows.Err()
			},
			"restore-5-known": func(c *sql.Conn) (time.Duration, error) {
				var q strings.Builder
				q.WriteString("SET FOREIGN_KEY_CHECKS = 0; BEGIN;")
				for _, t := range workload.Dirty {
					fmt.Fprintf(&q, "DELETE FROM w_floor.%[1]s; INSERT INTO w_floor.%[1]s SELECT * FROM tpl.%[1]s;", t)
				}
				q.WriteString("COMMIT; SET FOREIGN_KEY_CHECKS = 1")
				start := time.Now()
				_, err := c.ExecContext(ctx, q.String())
				return time.Since(start), err
			},
		}
		if err := f.schema.Clone(ctx, f.srv.DB, f.ddl, "w_floor", ""); err != nil {
			b.Fatal(err)
		}
		for _, name := range []string{"round-trip", "rollback", "detect-query", "restore-5-known"} {
			b.Run("floor/"+name, func(b *testing.B) {
				conn, err := f.srv.DB.Conn(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				var samples []time.Duration
				for i := 0; i < b.N; i++ {
					d, err := floor[name](conn)
					if err != nil {
						b.Fatal(err)
					}
					samples = append(samples, d)
				}
				report(b, samples, "")
			})
		}
	}
}

// runStandardTest runs the standard test; under the rollback strategy it
// runs in a transaction that is rolled back, as a cooperative client does.
func runStandardTest(ctx context.Context, db *sql.DB, s testdbd.Strategy) error {
	if s != testdbd.StrategyRollback {
		return workload.Test(ctx, db)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := workload.Test(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Rollback()
}
