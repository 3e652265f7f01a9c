package lease_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
)

// TestBinaryLogSpace: a lease that churns rows writes to the server's
// binary log, which no database holds, however small its own database
// stays. Here one inserts 200 rows of 60 KB into a MEMORY table and
// deletes them, over and over (25 times: 600 MB of log), on a server that
// has only 150 MB free beyond its reserve, beside an idle lease that has
// the largest database on the server. The log is purged as it grows, so
// the idle lease lives on; the churning one either lives on too or is the
// one that fails, for what it wrote to the log. Then one transaction that
// writes more than instance.TransactionLogBytes fails with an error naming
// max_binlog_cache_size, and the lease goes on.
func TestBinaryLogSpace(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			logs, logger := newLogBuffer(t)
			logs.failureLog(t)
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2, LeaseSpace: 8 << 30, Logger: logger})
			e.ensure(t, "app", 2)
			idle := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			churner := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			srv := e.fleet.Members()[0]
			if _, ok := srv.DatadirUsage(); !ok {
				t.Skip("the datadir is not visible to the daemon: space is not watched")
			}
			if bad := testdbd.Mismatched(srv.Settings); len(bad) > 0 {
				t.Fatalf("settings that did not take: %v", bad)
			}
			idb, cdb := open(t, idle), open(t, churner)
			grow(t, idb, "idle@x", 6) // 64 posts of 60 KB: 4 MB
			u, _ := srv.DatadirUsage()
			e.m.SetSpaceReserve(u.Free - 150<<20)

			mustExec(t, cdb, "CREATE TABLE n (i INT PRIMARY KEY)")
			var values []string
			for i := 1; i <= 200; i++ {
				values = append(values, fmt.Sprintf("(%d)", i))
			}
			mustExec(t, cdb, "INSERT INTO n VALUES "+strings.Join(values, ","))
			mustExec(t, cdb, "CREATE TABLE churn (id INT, pad VARCHAR(60000)) ENGINE=MEMORY CHARSET latin1")
			var stopped error
			for i := 0; i < 25 && stopped == nil; i++ {
				if _, stopped = cdb.Exec("INSERT INTO churn SELECT i, REPEAT('x', 60000) FROM n"); stopped == nil {
					_, stopped = cdb.Exec("DELETE FROM churn")
				}
			}

			if got, _ := e.m.Get(idle.ID); got.State != lease.LeaseActive {
				t.Fatalf("the idle lease is %s: %s", got.State, got.EndedReason)
			}
			mustExec(t, idb, "INSERT INTO users (email, name) VALUES ('still@x', 'fine')")
			if _, err := e.m.Reset(context.Background(), idle.ID, testdbd.StrategyUnspecified); err != nil {
				t.Fatalf("the idle lease's reset: %v", err)
			}
			if got, _ := e.m.Get(churner.ID); got.State != lease.LeaseActive {
				if !strings.Contains(got.EndedReason, "binary log") || !strings.Contains(got.EndedReason, "--space-reserve") {
					t.Errorf("the churning lease is %s, and the reason does not say it wrote to the binary log: %s", got.State, got.EndedReason)
				}
			} else if stopped != nil {
				t.Errorf("the churning lease is active, yet its writes failed: %v", stopped)
			}
			// Nothing is left to purge a moment later.
			deadline := time.Now().Add(30 * time.Second)
			for n := logBytes(t, srv); n > 16<<20; n = logBytes(t, srv) {
				if time.Now().After(deadline) {
					t.Fatalf("the binary log holds %dM, 30 s after the writes", n>>20)
				}
				time.Sleep(100 * time.Millisecond)
			}
			e.m.SetSpaceReserve(0) // the transaction's log takes room until its end
			transactionBound(t, idb)
		})
	}
}

// transactionBound writes more than instance.TransactionLogBytes to the
// binary log in one transaction: the statement that passes it fails,
// naming the setting, and the transaction goes on.
func transactionBound(t *testing.T, db *sql.DB) {
	t.Helper()
	grow(t, db, "big@x", 6)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var last error
	rows := 0
	// Each statement copies the 64 posts of 60 KB: 3.75 MB of log.
	for i := 0; i < instance.TransactionLogBytes/(3<<20) && last == nil; i++ {
		if _, last = tx.Exec("INSERT INTO posts (user_id, title, body) SELECT user_id, 'big', body FROM posts WHERE title = 'big@x'"); last == nil {
			rows += 64
		}
	}
	if last == nil || !strings.Contains(last.Error(), "max_binlog_cache_size") {
		t.Fatalf("a transaction wrote %d rows of 60 KB to the binary log: %v", rows, last)
	}
	var n int
	if err := tx.QueryRow("SELECT COUNT(*) FROM posts WHERE title = 'big'").Scan(&n); err != nil || n != rows {
		t.Errorf("after the refused statement the transaction has %d of its %d rows (%v)", n, rows, err)
	}
}

// grow adds a user and 2^doublings posts of 60 KB titled with its email.
func grow(t *testing.T, db *sql.DB, email string, doublings int) {
	t.Helper()
	mustExec(t, db, "INSERT INTO users (email, name) VALUES ('"+email+"', 'g')")
	mustExec(t, db, "INSERT INTO posts (user_id, title, body) SELECT id, email, REPEAT('x', 60000) FROM users WHERE email = '"+email+"'")
	for i := 0; i < doublings; i++ {
		mustExec(t, db, "INSERT INTO posts (user_id, title, body) SELECT user_id, title, body FROM posts WHERE title = '"+email+"'")
	}
}

// logBytes returns the size of srv's binary log files.
func logBytes(t *testing.T, srv *instance.Member) int64 {
	t.Helper()
	rows, err := srv.DB.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	var name string
	var size int64
	vals[0], vals[1] = &name, &size
	for i := 2; i < len(cols); i++ {
		vals[i] = new(sql.RawBytes)
	}
	var total int64
	for rows.Next() {
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		total += size
	}
	return total
}

// TestSpaceDoesNotCarryOver: a lease that inserted a quarter of a million rows and
// was released leaves nothing behind for the next lease of its database's
// worker, nor for the server. A reset gives the rows back but not the
// table's files, which keep their size: the database grew past its
// template's by more than a lease may leave, so it is made again and the
// worker's next lease starts at the template's size. The undo logs the
// insert and the reset's delete wrote (in the system tablespace, ibdata1,
// which never shrinks, unless undo tablespaces are asked for) give their
// space back: ibdata1 keeps its size and the undo tablespaces are
// truncated to theirs.
func TestSpaceDoesNotCarryOver(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			tpl := e.ensure(t, "app", 1)
			srv := e.fleet.Members()[0]
			tplBytes, ok := srv.DatabaseBytes(tpl.Database)
			if !ok {
				t.Skip("the datadir is not visible to the daemon: database sizes are not measured")
			}
			system := innodbFiles(t, srv)
			req := lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", Worker: "w"}
			l := e.acquire(t, req)
			db := open(t, l)
			mustExec(t, db, "INSERT INTO audit_log (entity, entity_id, action) VALUES ('e', 1, 'insert')")
			for i := 0; i < 18; i++ { // 262,144 rows
				mustExec(t, db, "INSERT INTO audit_log (entity, entity_id, action) SELECT entity, entity_id + id, action FROM audit_log")
			}
			grown, _ := srv.DatabaseBytes(l.Database)
			t.Logf("the template's database takes %dK, the lease's grew to %dM", tplBytes>>10, grown>>20)
			if _, err := e.m.Release(l.ID); err != nil {
				t.Fatal(err)
			}
			e.waitPool(t, "app", 1)
			next := e.acquire(t, req)
			if n, _ := srv.DatabaseBytes(next.Database); n > tplBytes+8<<20 {
				t.Errorf("the worker's next lease (%s) starts at %dM, its template's database takes %dK", next.Database, n>>20, tplBytes>>10)
			}
			after := innodbFiles(t, srv)
			if after["ibdata1"] > system["ibdata1"] {
				t.Errorf("the system tablespace grew from %dM to %dM", system["ibdata1"]>>20, after["ibdata1"]>>20)
			}
			// The undo tablespaces are truncated once purged: InnoDB's purge
			// runs when there is work, so the lease writes a little meanwhile.
			ndb := open(t, next)
			deadline := time.Now().Add(time.Minute)
			for {
				var over []string
				for name, n := range innodbFiles(t, srv) {
					if name != "ibdata1" && n > system[name] {
						over = append(over, fmt.Sprintf("%s %dM (%dM before)", name, n>>20, system[name]>>20))
					}
				}
				if len(over) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after the reset, undo tablespaces are still larger than they were: %v", over)
				}
				mustExec(t, ndb, "UPDATE users SET name = CONCAT(name, '') WHERE id > 0")
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// innodbFiles returns the sizes of srv's system tablespace (ibdata1) and
// undo tablespaces (MariaDB's undo001…, MySQL's undo_001…).
func innodbFiles(t *testing.T, srv *instance.Member) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(srv.Datadir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, d := range entries {
		if name := d.Name(); name == "ibdata1" || strings.HasPrefix(name, "undo") {
			fi, err := d.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[name] = fi.Size()
		}
	}
	return out
}
