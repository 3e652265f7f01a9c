package binlog_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestRollBackXA: prepared XA transactions left by two leases' accounts —
// one whose session is still open when the lease's sessions are ended, one
// whose client closed its connection on its own — are rolled back for the
// database they wrote to and for no other, and cannot be committed
// afterwards; the log still knows them after Tidy purged the files they
// were written in.
func TestRollBackXA(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.ServerOf(t, p)
			var log binlog.Log
			a, b := newLease(t, srv, "xa_a"), newLease(t, srv, "xa_b")

			// a1: prepared on a session that stays open (the reset ends it);
			// a2 and b1: prepared, then the client disconnects.
			a1 := a.session(t)
			prepare(t, a1, "a1", "INSERT INTO t VALUES (10, 10)", "UPDATE t SET v = 99 WHERE id = 1")
			a2 := a.session(t)
			prepare(t, a2, "a2", "DELETE FROM t WHERE id = 2")
			disconnect(a2)
			b1 := b.session(t)
			prepare(t, b1, "b1", "INSERT INTO t VALUES (20, 20)")
			disconnect(b1)

			conn, err := srv.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := accounts.EndSessions(ctx, conn, srv.Flavor, a.User, true); err != nil {
				t.Fatal(err)
			}
			rolled, unknown, err := log.RollBackXA(ctx, conn, "xa_a")
			if err != nil {
				t.Fatal(err)
			}
			if got := names(rolled); !slices.Equal(got, []string{"'a1'", "'a2'"}) || len(unknown) > 0 {
				t.Fatalf("rolled back in xa_a: %v (unknown %v), want 'a1' and 'a2'", got, names(unknown))
			}
			if got := names(prepared(t, srv.DB)); !slices.Equal(got, []string{"'b1'"}) {
				t.Fatalf("still prepared: %v, want only xa_b's 'b1'", got)
			}
			if got := rowsOf(t, srv.DB, "xa_a"); got != "1:1 2:2 3:3" {
				t.Errorf("xa_a after the rollback: %s, want its rows as before the XA transactions", got)
			}
			if err := accounts.Unlock(ctx, conn, a.User); err != nil {
				t.Fatal(err)
			}
			again := a.session(t)
			if _, err := again.ExecContext(ctx, "XA COMMIT 'a1'"); err == nil {
				t.Error("XA COMMIT 'a1' after the rollback succeeded")
			}

			// c1 prepared in xa_a, then the log grows past TidyBytes and is
			// purged: the files with c1's XA PREPARE are gone, the log
			// still knows where c1 wrote.
			c1 := a.session(t)
			prepare(t, c1, "c1", "INSERT INTO t VALUES (30, 30)")
			disconnect(c1)
			if _, _, err := log.RollBackXA(ctx, conn, "xa_b"); err != nil { // reads c1 (and b1, which it rolls back)
				t.Fatal(err)
			}
			for i := 0; i < 200; i++ {
				if _, err := b.db.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", 1000+i, i); err != nil {
					t.Fatal(err)
				}
			}
			defer func(n int64) { binlog.TidyBytes = n }(binlog.TidyBytes)
			binlog.TidyBytes = 1
			before := binlogFiles(t, srv.DB)
			if !log.TidyDue() {
				t.Fatal("TidyDue: false on a log never tidied")
			}
			if err := log.Tidy(ctx, srv.DB); err != nil {
				t.Fatal(err)
			}
			after := binlogFiles(t, srv.DB)
			if len(after) == 0 || slices.Contains(before, after[len(after)-1]) {
				t.Fatalf("binary log files before Tidy %v, after %v: want a new file", before, after)
			}
			// MySQL purges every older file; MariaDB keeps those holding a
			// transaction that is still prepared (c1's) until it ends.
			var fresh binlog.Log // knows nothing of what was read before
			_, unknown, err = fresh.RollBackXA(ctx, conn, "xa_b")
			switch {
			case err != nil:
				t.Fatal(err)
			case len(after) == 1 && !slices.Equal(names(unknown), []string{"'c1'"}):
				t.Fatalf("the files were purged, yet a log that did not read c1 before knows it (unknown %v)", names(unknown))
			case len(after) > 1 && len(unknown) > 0:
				t.Fatalf("files %v were kept, yet a new log cannot find %v in them", after, names(unknown))
			}
			rolled, _, err = log.RollBackXA(ctx, conn, "xa_a")
			if err != nil || !slices.Equal(names(rolled), []string{"'c1'"}) {
				t.Fatalf("after the purge: rolled back %v, err %v; want 'c1'", names(rolled), err)
			}
			defer func(d time.Duration) { binlog.TidyEvery = d }(binlog.TidyEvery)
			binlog.TidyEvery = 0
			// MariaDB lets go of a file a moment after the last transaction
			// prepared in it ended (its binlog checkpoint): a later Tidy
			// purges it.
			var files []string
			for i := 0; i < 50 && len(files) != 1; i++ {
				time.Sleep(time.Duration(i) * 5 * time.Millisecond)
				if !log.TidyDue() {
					t.Fatal("TidyDue: false")
				}
				if err := log.Tidy(ctx, srv.DB); err != nil {
					t.Fatal(err)
				}
				files = binlogFiles(t, srv.DB)
			}
			if len(files) != 1 {
				t.Errorf("with nothing prepared, Tidy left the files %v", files)
			}
			if got := prepared(t, srv.DB); len(got) != 0 {
				t.Fatalf("still prepared: %v", names(got))
			}
		})
	}
}

// lease is a database with a table of three rows and an account with
// privileges on it only, as a lease has.
type lease struct {
	accounts.Account
	srv *instance.Member
	db  *sql.DB
}

func newLease(t *testing.T, srv *instance.Member, name string) *lease {
	t.Helper()
	ctx := context.Background()
	q := fmt.Sprintf("DROP DATABASE IF EXISTS %[1]s; CREATE DATABASE %[1]s; CREATE TABLE %[1]s.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO %[1]s.t VALUES (1, 1), (2, 2), (3, 3)", name)
	if _, err := srv.DB.ExecContext(ctx, q); err != nil {
		t.Fatal(err)
	}
	acc, err := accounts.Create(ctx, srv.DB, "tdbx_", name, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := &lease{Account: acc, srv: srv}
	l.db = l.pool(t)
	t.Cleanup(func() {
		l.db.Close()
		_ = accounts.Drop(context.Background(), srv.DB, acc.User)
		_, _ = srv.DB.Exec("DROP DATABASE IF EXISTS " + name)
	})
	return l
}

func (l *lease) pool(t *testing.T) *sql.DB {
	host, port := l.srv.ClientAddr()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = l.User, l.Password, "tcp", net.JoinHostPort(host, strconv.Itoa(port)), l.Database
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// session is one connection of the lease's own, closed (the session ends)
// at the end of the test unless the test closes it first.
func (l *lease) session(t *testing.T) *sql.Conn {
	t.Helper()
	db := l.pool(t)
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// disconnect closes c's connection to the server, as a client that exits
// does.
func disconnect(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// prepare runs stmts in XA transaction xid and prepares it.
func prepare(t *testing.T, c *sql.Conn, xid string, stmts ...string) {
	t.Helper()
	all := append(append([]string{"XA START '" + xid + "'"}, stmts...), "XA END '"+xid+"'", "XA PREPARE '"+xid+"'")
	for _, q := range all {
		if _, err := c.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func names(ids []binlog.XID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	slices.Sort(out)
	return out
}

func prepared(t *testing.T, db *sql.DB) []binlog.XID {
	t.Helper()
	ids, err := binlog.Prepared(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func rowsOf(t *testing.T, db *sql.DB, database string) string {
	t.Helper()
	rows, err := db.Query("SELECT id, v FROM " + database + ".t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, v int
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%d", id, v))
	}
	return strings.Join(out, " ")
}

func binlogFiles(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(vals[0]))
	}
	return out
}

// TestParse reads the texts of binary log events as MariaDB and MySQL
// show them.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want binlog.XID
	}{
		{"X'7831',X'',1", binlog.XID{Format: 1, Gtrid: "x1"}},
		{"X'00ff',X'6271',7", binlog.XID{Format: 7, Gtrid: "\x00\xff", Bqual: "bq"}},
	} {
		if got := c.want.SQL(); got != c.sql {
			t.Errorf("SQL of %+v: %s, want %s", c.want, got, c.sql)
		}
	}
	if got := (binlog.XID{Format: 1, Gtrid: "x1"}).String(); got != "'x1'" {
		t.Errorf("String: %s", got)
	}
	if got := (binlog.XID{Format: 1, Gtrid: "it's"}).String(); got != "X'69742773',X'',1" {
		t.Errorf("String of a quote: %s", got)
	}
}

// TestSchemaChanges: a lease's schema change shows in its own database and
// no other, the daemon's own (a pool opened as instance.OpenAdmin opens
// them) shows nowhere, one run from a session with no database shows for
// every database, and the log is followed across a new file.
func TestSchemaChanges(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.ServerOf(t, p)
			a, b := newLease(t, srv, "ddl_a"), newLease(t, srv, "ddl_b")
			var log binlog.Log
			start, err := log.End(ctx, srv.DB)
			if err != nil {
				t.Fatal(err)
			}
			changed := func(db string, since binlog.Pos) (string, binlog.Pos) {
				t.Helper()
				stmt, end, err := log.SchemaChangedSince(ctx, srv.DB, db, since)
				if err != nil {
					t.Fatal(err)
				}
				return stmt, end
			}
			// DML, transactions and the daemon's own DDL change nothing.
			for _, q := range []string{"INSERT INTO t VALUES (7, 7)", "BEGIN", "UPDATE t SET v = 8 WHERE id = 7", "SAVEPOINT s", "COMMIT"} {
				if _, err := a.db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := srv.DB.ExecContext(ctx, "ALTER TABLE ddl_a.t ADD COLUMN own INT; ALTER TABLE ddl_a.t DROP COLUMN own"); err != nil {
				t.Fatal(err)
			}
			if stmt, _ := changed("ddl_a", start); stmt != "" {
				t.Fatalf("ddl_a changed by %q", stmt)
			}
			if _, err := a.db.ExecContext(ctx, "ALTER TABLE t ADD COLUMN extra INT"); err != nil {
				t.Fatal(err)
			}
			stmt, end := changed("ddl_a", start)
			if !strings.Contains(stmt, "ADD COLUMN extra") {
				t.Fatalf("ddl_a after its ALTER: %q", stmt)
			}
			if stmt, _ := changed("ddl_b", start); stmt != "" {
				t.Fatalf("ddl_b after ddl_a's ALTER: %q", stmt)
			}
			if stmt, _ := changed("ddl_a", end); stmt != "" {
				t.Fatalf("ddl_a since its ALTER was read: %q", stmt)
			}
			// A new file: the log follows it.
			if _, err := srv.DB.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.ExecContext(ctx, "CREATE TABLE u (id INT)"); err != nil {
				t.Fatal(err)
			}
			if stmt, _ := changed("ddl_b", end); !strings.Contains(stmt, "CREATE TABLE u") {
				t.Fatalf("ddl_b after its CREATE TABLE in a new file: %q", stmt)
			}
			_, end = changed("ddl_a", end)
			// A session of b's account with no database.
			nodb := b.Account
			nodb.Database = ""
			l := &lease{Account: nodb, srv: srv}
			pool := l.pool(t)
			defer pool.Close()
			if _, err := pool.ExecContext(ctx, "DROP TABLE ddl_b.u"); err != nil {
				t.Fatal(err)
			}
			if stmt, _ := changed("ddl_a", end); !strings.Contains(stmt, "in no database") {
				t.Fatalf("ddl_a after a DROP TABLE in no database: %q", stmt)
			}
		})
	}
}
