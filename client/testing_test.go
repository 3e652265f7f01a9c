package client_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testdbd/testdbd/client"
)

// recTB is a test whose cleanups run when the test says, and whose logs
// and errors are recorded, so that a helper's cleanup can be checked step
// by step. Fatal errors still fail the real test.
type recTB struct {
	testing.TB
	mu       sync.Mutex
	failed   bool
	cleanups []func()
	logs     []string
	errs     []string
}

func (r *recTB) Helper()          {}
func (r *recTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recTB) Failed() bool     { return r.failed }

func (r *recTB) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// runCleanups runs the last n cleanups registered, last first (n < 0: all).
func (r *recTB) runCleanups(n int) {
	if n < 0 || n > len(r.cleanups) {
		n = len(r.cleanups)
	}
	for range n {
		f := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		f()
	}
}

func helperOptions(template string) client.TestOptions {
	return client.TestOptions{Addr: daemonAddr, Template: template, MigrationsDir: migrationsDir}
}

// leaseOf finds the active lease of a worker key.
func leaseOf(t *testing.T, template, worker string) *client.Lease {
	t.Helper()
	leases, err := newClient(t).ListLeases(context.Background(), template)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if l.Worker == worker {
			return &l
		}
	}
	return nil
}

// TestDBIsolatesParallelTests runs tests in parallel that would collide on
// a shared database (the same unique email, the same expected id), then
// checks that every lease was given back.
func TestDBIsolatesParallelTests(t *testing.T) {
	var mu sync.Mutex
	workers := map[string]bool{}
	t.Run("group", func(t *testing.T) {
		for i := range 6 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				opts := helperOptions("helper")
				opts.Strategy = client.StrategySnapshot
				db := client.TestDB(t, opts)
				res, err := db.Exec("INSERT INTO users (email, name) VALUES ('same@example.com', ?)", fmt.Sprint("test ", i))
				if err != nil {
					t.Fatalf("insert: %v (is the database shared?)", err)
				}
				if id, _ := res.LastInsertId(); id != 4 {
					t.Errorf("new user got id %d, want 4, the template's next AUTO_INCREMENT", id)
				}
				if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 4 {
					t.Errorf("%d users, want 3 from the template and this test's one", n)
				}
				leases, err := newClient(t).ListLeases(context.Background(), "helper")
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				for _, l := range leases {
					workers[l.Worker] = true
				}
				mu.Unlock()
			})
		}
	})
	if want := "go:github.com/testdbd/testdbd/client"; len(workers) != 1 || !workers[want] {
		t.Errorf("worker keys %v, want only the test's package %q", workers, want)
	}
	if leases, err := newClient(t).ListLeases(context.Background(), "helper"); err != nil || len(leases) != 0 {
		t.Errorf("after the tests: %d leases, %v; want every one released", len(leases), err)
	}
}

// TestDBKeepsFailedTestsDatabase checks that a failed test's database is
// kept as the test left it, and that the log says how to reach it.
func TestDBKeepsFailedTestsDatabase(t *testing.T) {
	rec := &recTB{TB: t}
	opts := helperOptions("helper")
	opts.Worker = "failing-test"
	db := client.TestDB(rec, opts)
	if _, err := db.Exec("INSERT INTO users (email, name) VALUES ('evidence@example.com', 'Evidence')"); err != nil {
		t.Fatal(err)
	}
	rec.failed = true
	rec.runCleanups(-1)
	l := leaseOf(t, "helper", "failing-test")
	if l == nil {
		t.Fatalf("the failed test's lease was released; logs: %q", rec.logs)
	}
	defer func() { _, _ = newClient(t).ReleaseLease(context.Background(), l.ID) }()
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "testdbd release "+l.ID) || !strings.Contains(rec.logs[0], l.Database) {
		t.Errorf("log %q: want how to connect and how to release", rec.logs)
	} else if until := l.ExpiresAt.Local().Format("15:04:05Z07:00"); !strings.Contains(rec.logs[0], "kept as it was until its lease ends ("+until+"):") {
		t.Errorf("log %q: want the time the database is kept until with its zone, %s", rec.logs, until)
	}
	kept, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if n := count(t, kept, "SELECT COUNT(*) FROM users WHERE email = 'evidence@example.com'"); n != 1 {
		t.Error("the kept database lost the failed test's row")
	}
}

// TestTxRollsBackAndRewinds checks the rollback helper: after the test, the
// rows are gone, the AUTO_INCREMENT counter is back at the template's, and
// nothing is reported as committed.
func TestTxRollsBackAndRewinds(t *testing.T) {
	rec := &recTB{TB: t}
	opts := helperOptions("helper")
	opts.Worker = "tx-test"
	tx := client.TestTx(rec, opts)
	for i := range 3 {
		if _, err := tx.Exec("INSERT INTO users (email, name) VALUES (?, 'Tx')", fmt.Sprintf("tx%d@example.com", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, tx, "SELECT COUNT(*) FROM users"); n != 6 {
		t.Fatalf("%d users inside the transaction", n)
	}
	l := leaseOf(t, "helper", "tx-test")
	if l == nil || l.Strategy != client.StrategyRollback {
		t.Fatalf("lease: %+v", l)
	}
	rec.runCleanups(1) // roll back and reset, not yet release
	if len(rec.errs) != 0 {
		t.Errorf("errors %q", rec.errs)
	}
	for _, log := range rec.logs {
		// A reset may check every table for reasons of the server's (a
		// template built there meanwhile); it must not find commits.
		if strings.Contains(log, "committed") {
			t.Errorf("a rolled-back test reported committed writes: %s", log)
		}
	}
	db, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 3 {
		t.Errorf("%d users after the rollback, want 3", n)
	}
	if next := autoIncrement(t, db, "users"); next != 4 {
		t.Errorf("users AUTO_INCREMENT is %d after the reset, want the template's 4", next)
	}
	db.Close()
	rec.runCleanups(-1)
	if len(rec.errs) != 0 {
		t.Errorf("release: %q", rec.errs)
	}
	if leaseOf(t, "helper", "tx-test") != nil {
		t.Error("the lease was not released")
	}
}

// TestTxReportsCommittedWrites commits inside the rollback helper's
// transaction: the reset must restore the table and say so.
func TestTxReportsCommittedWrites(t *testing.T) {
	rec := &recTB{TB: t}
	opts := helperOptions("helper")
	opts.Worker = "tx-commit-test"
	tx := client.TestTx(rec, opts)
	if _, err := tx.Exec("INSERT INTO posts (user_id, title) VALUES (1, 'Committed')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	l := leaseOf(t, "helper", "tx-commit-test")
	rec.runCleanups(1)
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "committed") || !strings.Contains(rec.logs[0], "posts") {
		t.Errorf("logs %q: want the fallback reason naming posts", rec.logs)
	}
	db, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := count(t, db, "SELECT COUNT(*) FROM posts"); n != 2 {
		t.Errorf("%d posts after the reset, want the template's 2", n)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM audit_log"); n != 2 {
		t.Errorf("%d audit rows after the reset, want the template's 2 (the trigger's row must go too)", n)
	}
	db.Close()
	rec.runCleanups(-1)
}

func autoIncrement(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	var next sql.NullInt64
	err := db.QueryRow("SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&next)
	if err != nil {
		t.Fatal(err)
	}
	return next.Int64
}

// TestLeaseEndedBeforeTheTest: when testdbd ends a test's lease before the
// test ends (here its TTL runs out), the errors of the client's calls on
// it and the test's cleanup say why and what to do, whether the test
// failed (its database is not "kept" then: it is gone) or not.
func TestLeaseEndedBeforeTheTest(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprint("failed=", failed), func(t *testing.T) {
			rec := &recTB{TB: t}
			opts := helperOptions("helper")
			opts.Worker = fmt.Sprint("ended-", failed)
			opts.TTL = time.Second
			l := client.TestLease(rec, opts)
			c := newClient(t)
			deadline := time.Now().Add(30 * time.Second)
			for {
				now, err := c.GetLease(context.Background(), l.ID)
				if err != nil {
					t.Fatal(err)
				}
				if now.State == "expired" {
					if !strings.Contains(now.EndedReason, "after its TTL of 1s") || !strings.Contains(now.EndedReason, "acquire a new lease") {
						t.Errorf("GetLease: ended_reason %q", now.EndedReason)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a lease of 1 s is %s after 30 s", now.State)
				}
				time.Sleep(20 * time.Millisecond)
			}
			for name, call := range map[string]func() error{
				"ResetLease": func() error {
					_, err := c.ResetLease(context.Background(), l.ID, client.StrategyUnspecified)
					return err
				},
				"RenewLease": func() error { _, err := c.RenewLease(context.Background(), l.ID, 0); return err },
			} {
				if err := call(); err == nil || !strings.Contains(err.Error(), "after its TTL of 1s") || !strings.Contains(err.Error(), "acquire a new lease") {
					t.Errorf("%s of the expired lease: %v", name, err)
				}
			}
			rec.failed = failed
			rec.runCleanups(-1)
			if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "ended before the test did: expired at") || !strings.Contains(rec.errs[0], "TTL") {
				t.Errorf("the test's errors %q, want one saying the lease expired", rec.errs)
			}
			if len(rec.logs) != 0 {
				t.Errorf("logs %q: a database that is gone is not kept", rec.logs)
			}
		})
	}
}
