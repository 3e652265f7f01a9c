package client_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/testdbd/testdbd/client"
)

// TestTxDSN drives the "testdbd" driver as code under test would: pools of
// its own from sql.Open, transactions, concurrent use; after the test,
// nothing it wrote is left and the counters are rewound.
func TestTxDSN(t *testing.T) {
	rec := &recTB{TB: t}
	opts := helperOptions("helper")
	opts.Worker = "txdsn-test"
	dsn := client.TestTxDSN(rec, opts)

	db, err := sql.Open(client.DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sql.Open("testdbd", dsn) // a second pool: the same transaction
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := db.Exec("INSERT INTO users (email, name) VALUES (?, ?)", "tx@example.com", "Tx"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, other, "SELECT COUNT(*) FROM users"); n != 4 {
		t.Errorf("the second pool sees %d users, want 4: the same transaction", n)
	}

	// A transaction of the code's own is a savepoint: its rollback undoes
	// its writes only, its commit keeps them in the test's transaction.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("DELETE FROM comments"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM comments"); n != 1 {
		t.Errorf("%d comments after the inner rollback, want 1", n)
	}
	tx, err = db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO posts (user_id, title) VALUES (1, 'inner')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM posts WHERE title = 'inner'"); n != 1 {
		t.Errorf("the inner commit's row: %d", n)
	}

	// Concurrent users of the pool, with prepared statements and rows read
	// while others write.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := db.Exec("INSERT INTO users (email, name) VALUES (?, 'Many')", fmt.Sprintf("many%d@example.com", i)); err != nil {
				t.Error(err)
			}
			rows, err := db.Query("SELECT id, email, created_at FROM users ORDER BY id")
			if err != nil {
				t.Error(err)
				return
			}
			defer rows.Close()
			for rows.Next() {
				var id int
				var email string
				var created any
				if err := rows.Scan(&id, &email, &created); err != nil {
					t.Error(err)
				}
			}
			if err := rows.Err(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 12 {
		t.Errorf("%d users, want 3 + 1 + 8", n)
	}
	cols, err := db.Query("SELECT id, email FROM users LIMIT 1")
	if err != nil {
		t.Fatal(err)
	}
	types, err := cols.ColumnTypes()
	cols.Close()
	if err != nil || len(types) != 2 || types[1].DatabaseTypeName() != "VARCHAR" {
		t.Errorf("column types: %v, %v", types, err)
	}

	l := leaseOf(t, "helper", "txdsn-test")
	if l == nil || l.Strategy != client.StrategyRollback {
		t.Fatalf("lease: %+v", l)
	}
	rec.runCleanups(1) // roll back and reset, not yet release
	if len(rec.errs) != 0 {
		t.Errorf("errors %q", rec.errs)
	}
	for _, log := range rec.logs {
		if strings.Contains(log, "committed") {
			t.Errorf("a rolled-back test reported committed writes: %s", log)
		}
	}
	check, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	if n := count(t, check, "SELECT COUNT(*) FROM users"); n != 3 {
		t.Errorf("%d users after the test, want the template's 3", n)
	}
	if next := autoIncrement(t, check, "users"); next != 4 {
		t.Errorf("users AUTO_INCREMENT %d after the test, want 4", next)
	}
	check.Close()
	rec.runCleanups(-1)
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), "TestTxDSN") {
		t.Errorf("the pool after the test: %v; want an error naming TestTxDSN", err)
	}
	if leaseOf(t, "helper", "txdsn-test") != nil {
		t.Error("the lease was not released")
	}
}

// TestTxDSNReportsCommits: DDL commits implicitly; the reset restores the
// template and the log says so.
func TestTxDSNReportsCommits(t *testing.T) {
	rec := &recTB{TB: t}
	opts := helperOptions("helper")
	opts.Worker = "txdsn-commit-test"
	db, err := sql.Open("testdbd", client.TestTxDSN(rec, opts))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO posts (user_id, title) VALUES (1, 'before ddl')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE scratch (id INT PRIMARY KEY)"); err != nil { // commits
		t.Fatal(err)
	}
	l := leaseOf(t, "helper", "txdsn-commit-test")
	rec.runCleanups(1)
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "did more than roll back") {
		t.Errorf("logs %q: want the fallback reason", rec.logs)
	}
	check, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	if n := count(t, check, "SELECT COUNT(*) FROM posts"); n != 2 {
		t.Errorf("%d posts, want the template's 2", n)
	}
	if n := count(t, check, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'scratch'"); n != 0 {
		t.Error("the table the test created is still there")
	}
	check.Close()
	rec.runCleanups(-1)
}

func TestTxDSNUnknown(t *testing.T) {
	db, err := sql.Open("testdbd", "testdbd-tx:l-none")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), "client.TestTxDSN") {
		t.Errorf("an unknown DSN: %v", err)
	}
}

// TestReset resets a TestDB database between subtests.
func TestReset(t *testing.T) {
	opts := helperOptions("helper")
	opts.Worker = "reset-test"
	db := client.TestDB(t, opts)
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			client.Reset(t, db)
			if _, err := db.Exec("INSERT INTO users (email, name) VALUES ('same@example.com', 'Same')"); err != nil {
				t.Fatalf("insert: %v (was the previous subtest's row reset?)", err)
			}
			if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 4 {
				t.Errorf("%d users", n)
			}
		})
	}
}

// TestEnvironmentDefaults: without Addr, the helpers read TESTDBD_ADDR.
func TestEnvironmentDefaults(t *testing.T) {
	t.Setenv("TESTDBD_ADDR", daemonAddr)
	db := client.TestDB(t, client.TestOptions{Template: "helper", MigrationsDir: migrationsDir, Worker: "env-test"})
	if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 3 {
		t.Errorf("%d users", n)
	}
}
