package strategies_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/dbcompare"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

// relevance returns what a search of the articles' FULLTEXT index gives in
// database name: each matching row's id and relevance, in order.
func relevance(t *testing.T, db *sql.DB, name, term string) string {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("SELECT id, ROUND(MATCH (title, body) AGAINST (?), 6) AS r FROM `%s`.articles "+
		"WHERE MATCH (title, body) AGAINST (?) ORDER BY r DESC, id", name), term, term)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int
		var r string
		if err := rows.Scan(&id, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d=%s", id, r))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestFulltextReset: a test that adds, changes and removes documents of a
// table with a FULLTEXT index. After the reset a search ranks the same rows
// with the same relevance as on the template (a DELETE-based restore would
// leave the removed documents counted in the index), and the reset found
// its work on the fast path: InnoDB's hidden FULLTEXT tables are the
// table's, not tables of their own that appeared or changed.
func TestFulltextReset(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		tg, db := f.worker("w_ft_"+s.String(), s)
		want := map[string]string{}
		for _, term := range dbcompare.RelevanceTerms {
			want[term] = relevance(t, f.srv.DB, "tpl", term)
			if got := relevance(t, f.srv.DB, tg.Database, term); got != want[term] {
				t.Fatalf("a fresh clone ranks %q as %s, the template as %s", term, got, want[term])
			}
		}
		if want["database"] == "" {
			t.Fatal("the template's articles match nothing: the test would prove nothing")
		}
		for i := 0; i < 2; i++ { // the second round starts from a reset database
			mustExec(t, db, "INSERT INTO articles (title, body) VALUES ('New', 'another database reset with more tests and words')")
			mustExec(t, db, "UPDATE articles SET body = 'the server template' WHERE id = 2")
			mustExec(t, db, "DELETE FROM articles WHERE id IN (1, 5)")
			if got := relevance(t, db, tg.Database, "database"); got == want["database"] {
				t.Fatalf("the test's writes did not change the ranking (%s): the test would prove nothing", got)
			}
			rep := f.reset(tg)
			// (A rollback lease's committed writes are restored
			// by snapshot, which the report says; that is not a
			// full check.)
			if strings.Contains(rep.FallbackReason, "checked every table") || len(rep.SchemaChanges) > 0 {
				t.Errorf("round %d: the reset left the fast path: %+v", i, rep)
			}
			if !containsTable(rep.TablesReset, "articles") {
				t.Errorf("round %d: articles not reset: %v", i, rep.TablesReset)
			}
			for _, term := range dbcompare.RelevanceTerms {
				if got := relevance(t, f.srv.DB, tg.Database, term); got != want[term] {
					t.Errorf("round %d: after the reset %q ranks %s, the template %s", i, term, got, want[term])
				}
			}
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Errorf("round %d: %s", i, strings.Join(d, "\n"))
			}
		}
	})
}

// TestFulltextRollbackOnly: on MySQL, a DELETE rolled back leaves a
// FULLTEXT table's rows as they were but not its relevance figures
// (InnoDB's row count, which a search divides by, stays lowered). The
// reset then restores the table; one after writes elsewhere, or none,
// leaves it alone (with the binary log followed, after a restore too: the
// restore's count is read back). Every engine ranks as the template after.
func TestFulltextRollbackOnly(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		tg, db := f.worker("w_ftrb_"+s.String(), s)
		want := relevance(t, f.srv.DB, "tpl", "database")
		for round := range 2 {
			mustExec(t, db, "BEGIN; DELETE FROM articles WHERE id IN (1, 2); ROLLBACK")
			if got := relevance(t, f.srv.DB, tg.Database, "database"); got == want && f.srv.Flavor == testdbd.MySQL {
				t.Fatalf("the DELETE rolled back did not change the ranking (%s): the test would prove nothing", got)
			}
			rep := f.reset(tg)
			if f.srv.Flavor == testdbd.MySQL && !containsTable(rep.TablesReset, "articles") {
				t.Errorf("round %d: articles not restored after a DELETE rolled back: %+v", round, rep)
			}
			if got := relevance(t, f.srv.DB, tg.Database, "database"); got != want {
				t.Errorf("round %d: after the reset %s, the template %s", round, got, want)
			}
			for _, what := range []string{"nothing", "a write elsewhere"} {
				if what != "nothing" {
					mustExec(t, db, "UPDATE tags SET label = 'Golang' WHERE code = 'go'")
				}
				always := f.alwaysRestored(tg)
				rep = f.reset(tg)
				if containsTable(rep.TablesReset, "articles") != slices.Contains(always, "articles") {
					t.Errorf("round %d, after %s: articles restored: %v, want %v (%+v)", round, what,
						containsTable(rep.TablesReset, "articles"), slices.Contains(always, "articles"), rep)
				}
			}
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Fatalf("round %d: %s", round, strings.Join(d, "\n"))
			}
		}
		// A session that did not wait for the reset rolls back a DELETE
		// between the restore and the reading of the table's row count:
		// the next reset must not take that count for the template's.
		// (Watching the directory, the account is locked meanwhile.)
		if tg.Dir != "" {
			return
		}
		mustExec(t, db, "DELETE FROM articles WHERE id = 4")
		t.Cleanup(func() { strategies.AfterRestore(nil) })
		strategies.AfterRestore(func() {
			if _, err := db.Exec("BEGIN; DELETE FROM articles WHERE id IN (1, 2); ROLLBACK"); err != nil {
				t.Errorf("a DELETE rolled back during the restore: %v", err)
			}
		})
		f.reset(tg)
		strategies.AfterRestore(nil)
		f.reset(tg)
		if got := relevance(t, f.srv.DB, tg.Database, "database"); got != want {
			t.Errorf("after a DELETE rolled back during the restore and another reset, %s, the template %s", got, want)
		}
	})
}

func containsTable(tables []string, name string) bool {
	for _, t := range tables {
		if t == name {
			return true
		}
	}
	return false
}

// planCost matches the cost in MySQL's tree-format EXPLAIN ("cost=98.8 "
// or "cost=0.25..98.8 "). The cost weighs each index by how much of it the
// buffer pool holds at that moment, which is not a statistic: a clone whose
// pages were just read plans the same rows at another cost.
var planCost = regexp.MustCompile(`cost=[0-9.e+-]+(\.\.[0-9.e+-]+)? `)

// explain returns EXPLAIN of query in database name: the plan and the
// optimizer's row estimates, which come from the table's statistics. The
// costs are left out (see planCost).
func explain(t *testing.T, db *sql.DB, name, query string) string {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "USE `"+name+"`"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(context.Background(), "EXPLAIN "+query)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := rowLines(rows)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		lines[i] = planCost.ReplaceAllString(l, "")
	}
	return strings.Join(lines, "\n")
}

// TestStatisticsFollowTemplate: the optimizer's statistics of a lease are
// the template's. A fresh clone plans a query as the template does; a test
// that skews a big table's statistics (many rows of one kind, then ANALYZE
// TABLE) changes the plan's estimates, and the reset puts them back, for
// every strategy. The persistent statistics compare equal too.
func TestStatisticsFollowTemplate(t *testing.T) {
	const query = "SELECT id FROM event_log WHERE kind = 3 AND payload LIKE 'p1%'"
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		want := explain(t, f.srv.DB, "tpl", query)
		tg, db := f.worker("w_stats_"+s.String(), s)
		if got := explain(t, f.srv.DB, tg.Database, query); got != want {
			t.Fatalf("a fresh clone plans\n%s\nthe template\n%s", got, want)
		}
		mustExec(t, db, "INSERT INTO event_log (kind, payload) SELECT 3, CONCAT('q', id) FROM event_log")
		mustExec(t, db, "ANALYZE TABLE event_log")
		if got := explain(t, f.srv.DB, tg.Database, query); got == want {
			t.Fatalf("the skewed statistics plan as the template's (%s): the test would prove nothing", got)
		}
		f.reset(tg)
		if got := explain(t, f.srv.DB, tg.Database, query); got != want {
			t.Errorf("after the reset the lease plans\n%s\nthe template\n%s", got, want)
		}
		if d := f.diff(tg.Database); len(d) > 0 {
			t.Errorf("after the reset: %s", strings.Join(d, "\n"))
		}
	})
}

// TestPreparedXARolledBack: a test that leaves XA transactions prepared —
// one on a session still open at the reset, one whose client disconnected
// on its own — leaves them, with their locks, for anyone to commit later.
// The reset rolls both back and says so, the database equals the template,
// the transactions cannot be committed afterwards, and another lease's
// prepared transaction is left alone until its own reset.
func TestPreparedXARolledBack(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		ctx := context.Background()
		tg, db := f.worker("w_xa_"+s.String(), s)
		other, odb := f.worker("w_xo_"+s.String(), s)
		xid := func(name string) string { return "'" + name + "_" + s.String() + "'" }
		prepare := func(db *sql.DB, name string, stmts ...string) *sql.Conn {
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range append(append([]string{"XA START " + xid(name)}, stmts...), "XA END "+xid(name), "XA PREPARE "+xid(name)) {
				mustExec(t, conn, q)
			}
			return conn
		}
		t.Cleanup(func() {
			for _, n := range []string{"open", "closed", "other"} {
				_, _ = f.srv.DB.Exec("XA ROLLBACK " + xid(n))
			}
		})
		open := prepare(db, "open", "INSERT INTO tags VALUES ('xa', 'XA')", "UPDATE users SET name = 'xa' WHERE id = 1")
		defer open.Close()
		closed := prepare(db, "closed", "DELETE FROM comments WHERE id = 1", "INSERT INTO audit_log (entity, entity_id, action) VALUES ('xa', 1, 'x')")
		_ = closed.Raw(func(any) error { return driver.ErrBadConn }) // the client disconnects
		closed.Close()
		prepare(odb, "other", "INSERT INTO tags VALUES ('xo', 'XO')").Close()

		rep := f.reset(tg)
		slices.Sort(rep.XARolledBack)
		if want := []string{xid("closed"), xid("open")}; !slices.Equal(rep.XARolledBack, want) {
			t.Errorf("reset report: XA transactions rolled back %v, want %v", rep.XARolledBack, want)
		}
		if d := f.diff(tg.Database); len(d) > 0 {
			t.Errorf("after the reset: %s", strings.Join(d, "\n"))
		}
		ids, err := binlog.Prepared(ctx, f.srv.DB)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0].String() != xid("other") {
			t.Errorf("prepared after the reset: %v, want only the other lease's %s", ids, xid("other"))
		}
		if _, err := db.ExecContext(ctx, "XA COMMIT "+xid("closed")); err == nil {
			t.Errorf("XA COMMIT %s after the reset succeeded", xid("closed"))
		}
		if rep := f.reset(tg); len(rep.XARolledBack) > 0 {
			t.Errorf("a second reset rolled back %v", rep.XARolledBack)
		}
		if d := f.diff(tg.Database); len(d) > 0 {
			t.Errorf("after the second reset: %s", strings.Join(d, "\n"))
		}
		if rep := f.reset(other); !slices.Equal(rep.XARolledBack, []string{xid("other")}) {
			t.Errorf("the other lease's reset rolled back %v, want %s", rep.XARolledBack, xid("other"))
		}
		if d := f.diff(other.Database); len(d) > 0 {
			t.Errorf("the other database after its reset: %s", strings.Join(d, "\n"))
		}
	})
}

// TestKeepAutoIncrement: a lease that keeps AUTO_INCREMENT gets its rows
// back but not its counters, the report says so, and the next reset that
// does not keep them rewinds every counter that differs.
func TestKeepAutoIncrement(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		tg, db := f.worker("w_keep_"+s.String(), s)
		tg.KeepAutoIncrement = true
		cats, _ := f.schema.Table("categories")
		for i := 0; i < 2; i++ {
			if s == testdbd.StrategyRollback {
				mustExec(t, db, "BEGIN; INSERT INTO categories (parent_id, name) VALUES (1, 'x'); INSERT INTO users (email, name) VALUES ('k@x', 'k'); ROLLBACK")
			} else {
				mustExec(t, db, "INSERT INTO categories (parent_id, name) VALUES (1, 'x'); INSERT INTO users (email, name) VALUES ('k@x', 'k')")
			}
			rep := f.reset(tg)
			if !rep.KeepAutoIncrement {
				t.Errorf("the report does not say the counters were kept: %+v", rep)
			}
			var kept []string
			for _, d := range f.diff(tg.Database) {
				if !strings.HasPrefix(d, "AUTO_INCREMENT of ") {
					t.Errorf("round %d: %s", i, d)
				} else {
					kept = append(kept, d)
				}
			}
			if len(kept) == 0 {
				t.Errorf("round %d: every AUTO_INCREMENT is the template's: nothing was kept (%+v)", i, rep)
			}
		}
		var next int64
		if err := f.srv.DB.QueryRow("SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'categories'",
			tg.Database).Scan(&next); err != nil {
			t.Fatal(err)
		}
		switch {
		case s == testdbd.StrategyTruncate && next != cats.NaturalAutoIncrement:
			// TRUNCATE puts the counter at the template's rows' highest id
			// plus one, and keeping means no ALTER to move it elsewhere.
			t.Errorf("categories' next id %d after a truncate restore, want %d", next, cats.NaturalAutoIncrement)
		case s != testdbd.StrategyTruncate && next <= cats.AutoIncrement:
			t.Errorf("categories' next id %d, the template's %d: the counter went back", next, cats.AutoIncrement)
		}
		// The reset after the lease: exact again, whatever was kept.
		tg.KeepAutoIncrement = false
		rep := f.reset(tg)
		if rep.KeepAutoIncrement {
			t.Errorf("exact reset reported as keeping: %+v", rep)
		}
		if d := f.diff(tg.Database); len(d) > 0 {
			t.Errorf("after the exact reset: %s", strings.Join(d, "\n"))
		}
	})
}

// TestDeltaRestore: following the binary log (snapshot and rollback), a
// test's inserts, updates, deletes and replaces in a big table (event_log,
// 16,384 rows) are put back row by row, and the report says so in
// tables_delta; an insert rolled back leaves only the counter to rewind.
// Without the log (the truncate strategy), a test that only adds rows gets
// them deleted instead of the table copied back (MariaDB), and any other
// change takes the whole-table path. Every case ends equal to the
// template, and the reset after it finds nothing to restore.
func TestDeltaRestore(t *testing.T) {
	const add = "INSERT INTO event_log (kind, payload) VALUES (1, 'added')"
	cases := []struct {
		name  string
		stmts []string
		delta bool
	}{
		{"one row added", []string{add}, true},
		{"rows added by two statements", []string{add, "INSERT INTO event_log (kind, payload) SELECT kind, payload FROM event_log WHERE id <= 3"}, true},
		{"added and updated", []string{add, "UPDATE event_log SET payload = 'changed' WHERE id = 5"}, false},
		{"added and deleted", []string{add, "DELETE FROM event_log WHERE id = 6"}, false},
		{"added below the template's keys", []string{"INSERT INTO event_log (id, kind, payload) VALUES (-1, 1, 'low')"}, false},
		{"added, and an insert rolled back", []string{add, "BEGIN; " + add + "; ROLLBACK"}, false},
		// Its rows compare equal to the template's: only the counter is
		// rewound.
		{"an insert rolled back", []string{"BEGIN; " + add + "; ROLLBACK"}, false},
		{"a key moved above the template's", []string{"UPDATE event_log SET id = 99999 WHERE id = 7"}, false},
		{"replaced", []string{"REPLACE INTO event_log (id, kind, payload) VALUES (8, 1, 'replaced')"}, false},
	}
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		tg, db := f.worker("w_delta_"+s.String(), s)
		engineDelta := f.srv.Flavor == testdbd.MariaDB && s != testdbd.StrategyRollback
		// Following the binary log, snapshot and rollback restore every
		// case row by row but the one whose rows are the template's.
		byLog := tg.Rows != nil && s != testdbd.StrategyTruncate
		for _, c := range cases {
			for _, q := range c.stmts {
				mustExec(t, db, q)
			}
			rep := f.reset(tg)
			if !slices.Contains(rep.TablesReset, "event_log") {
				t.Fatalf("%s: event_log not restored: %+v", c.name, rep)
			}
			want := c.delta && engineDelta
			if byLog {
				want = c.name != "an insert rolled back"
			}
			if got := slices.Contains(rep.TablesDelta, "event_log"); got != want {
				t.Errorf("%s: restored row by row: %v, want %v (%+v)", c.name, got, want, rep)
			}
			if s != testdbd.StrategyRollback && rep.FallbackReason != "" {
				t.Errorf("%s: the reset fell back: %s", c.name, rep.FallbackReason)
			}
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Fatalf("%s: after the reset: %s", c.name, strings.Join(d, "\n"))
			}
			if tg.Dir != "" && tg.Baseline.Tables["event_log"].Unknown {
				t.Errorf("%s: event_log's counters were not read after the restore: the next reset would checksum it", c.name)
			}
			always := f.alwaysRestored(tg)
			rep = f.reset(tg)
			if restored := slices.DeleteFunc(rep.TablesReset, func(n string) bool { return slices.Contains(always, n) }); len(restored) > 0 {
				t.Errorf("%s: the reset after restored %v again", c.name, restored)
			}
		}
	})
}

// TestCommitStampedBeforeTheBaseline: InnoDB stamps UPDATE_TIME from the
// kernel's coarse clock, which lags the clock UNIX_TIMESTAMP() reads by up
// to a timer tick, so a write committed right after a baseline read in
// second S can be stamped S-1. On MySQL that stamp is what detection
// compares (the table was last written in S-1 before the baseline too); on
// MariaDB the rollback strategy takes a table whose stamp is before the
// baseline's second for one nothing was committed to. Each try writes a
// table in the middle of a second, reads a baseline just after the next
// second starts, and commits again at once; every reset must come out
// equal to the template. The test goes on until the lag has shown once
// (it skips where the kernel never showed it in a dozen tries).
func TestCommitStampedBeforeTheBaseline(t *testing.T) {
	want, tries := 1, 12
	if testing.Short() {
		tries = 4 // a second each: the quick tier looks for the lag briefly
	}
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		ctx := context.Background()
		tg, db := f.worker("w_stamp_"+s.String(), s)
		if f.srv.Flavor != testdbd.MySQL && tg.Dir == "" {
			t.Skip("resets here read no UPDATE_TIME (MariaDB's counters, without a watched directory)")
		}
		// waitUntil returns at frac past the next whole second: it sleeps
		// until shortly before and spins the rest, since the lag lasts a
		// few milliseconds at most.
		waitUntil := func(frac time.Duration) {
			now := time.Now()
			next := now.Truncate(time.Second).Add(frac)
			if !next.After(now) {
				next = next.Add(time.Second)
			}
			time.Sleep(time.Until(next) - 5*time.Millisecond)
			for time.Now().Before(next) {
			}
		}
		seen := 0
		for try := 0; try < tries && seen < want; try++ {
			// A connection of its own, opened before the timed part (the
			// reset ends it).
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			waitUntil(500 * time.Millisecond)
			mustExec(t, conn, fmt.Sprintf("UPDATE tags SET label = 'before %d' WHERE code = 'go'", try))
			waitUntil(50 * time.Microsecond)
			base, err := strategies.TakeBaseline(ctx, f.srv.StatusDB, f.srv.Flavor, f.ddl, tg.Database, tg.Dir, tg.Binlog)
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, conn, fmt.Sprintf("UPDATE tags SET label = 'after %d' WHERE code = 'sql'", try))
			var stamp sql.NullInt64
			if err := f.srv.DB.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP(UPDATE_TIME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'tags'",
				tg.Database).Scan(&stamp); err != nil {
				t.Fatal(err)
			}
			lagged := stamp.Valid && stamp.Int64 < base.Second
			if lagged {
				seen++
			}
			tg.Baseline = base
			rep := f.reset(tg)
			_ = conn.Close()
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Fatalf("try %d (commit stamped %d, baseline's second %d): after the reset:\n%s\nreport: %+v",
					try, stamp.Int64, base.Second, strings.Join(d, "\n"), rep)
			}
		}
		if seen == 0 {
			t.Skipf("no commit in %d tries was stamped before its baseline's second: the lag did not show here", tries)
		}
		t.Logf("%d commits stamped before their baseline's second, each reset exact", seen)
	})
}

// TestStatisticsStayCopied: after a reset, every table's persistent
// statistics carry the mark of statistics copied from the template
// (schema.StatsSentinel), as after a clone, also for a table the reset
// only emptied and rewound (ALTER TABLE … AUTO_INCREMENT recomputes an
// empty table's statistics as the template's, but stamps them anew) and
// for a big one whose counter it set at lowered sampling, so the next
// reset finds no statistics moved and copies none back; and the server's
// statistics sampling is its own again.
func TestStatisticsStayCopied(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, f *fixture, s testdbd.Strategy) {
		empty, _ := f.schema.Table("kind_log")
		seeded, _ := f.schema.Table("users")
		if empty == nil || empty.Rows != 0 || empty.AutoIncrement == 0 || seeded == nil || seeded.Rows == 0 || seeded.AutoIncrement == 0 {
			t.Fatalf("the fixture's kind_log (%+v) should be empty and users (%+v) seeded, both with AUTO_INCREMENT", empty, seeded)
		}
		tg, db := f.worker("w_mark_"+s.String(), s)
		moved := func() []string {
			var out []string
			err := schema.EachRow(context.Background(), f.srv.DB, "SELECT table_name FROM mysql.innodb_table_stats WHERE database_name = ? AND last_update <> ?",
				[]any{tg.Database, schema.StatsSentinel}, func(rows *sql.Rows) error {
					var name string
					out = append(out, name)
					return rows.Scan(&out[len(out)-1])
				})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		if m := moved(); len(m) > 0 {
			t.Fatalf("a fresh clone's statistics of %v are not marked as copied", m)
		}
		sampling := func() (n int) {
			if err := f.srv.DB.QueryRow("SELECT @@GLOBAL.innodb_stats_persistent_sample_pages").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		pages := sampling()
		write := "INSERT INTO kind_log (kind_id, at) VALUES (1, NOW(6)); INSERT INTO users (email, name) VALUES ('m@x', 'm'); " +
			"INSERT INTO event_log (kind, payload) VALUES (1, 'm')"
		if s == testdbd.StrategyRollback {
			write = "BEGIN; " + write + "; ROLLBACK"
		}
		for round := 0; round < 2; round++ {
			mustExec(t, db, write)
			rep := f.reset(tg)
			if !slices.Contains(rep.TablesReset, "kind_log") {
				t.Errorf("round %d: the reset left kind_log alone: %+v", round, rep)
			}
			if m := moved(); len(m) > 0 {
				t.Errorf("round %d: after the reset the statistics of %v are not marked as copied", round, m)
			}
			if !slices.Contains(rep.TablesReset, "event_log") {
				t.Errorf("round %d: the reset left event_log alone: %+v", round, rep)
			}
			if n := sampling(); n != pages {
				t.Errorf("round %d: after the reset the server samples %d pages for statistics, before it %d", round, n, pages)
			}
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Errorf("round %d: after the reset: %s", round, strings.Join(d, "\n"))
			}
		}
	})
}

// TestFullSampling: a template's analysis (DDLCounter.FullSampling) waits
// for the restores that lowered the server's statistics sampling, keeps
// new ones from lowering it while it runs, and runs at the server's own
// sampling even when a failed restore left it lowered.
func TestFullSampling(t *testing.T) {
	cells := testenv.Providers()
	if len(cells) == 0 {
		t.Skip("TESTDBD_ENGINES selects no engine cell")
	}
	srv := testenv.ServerOf(t, cells[0])
	c := &strategies.DDLCounter{}
	var want int
	if err := srv.DB.QueryRow("SELECT @@GLOBAL.innodb_stats_persistent_sample_pages").Scan(&want); err != nil {
		t.Fatal(err)
	}
	release, ok := strategies.LowerSampling(c)
	if !ok {
		t.Fatal("an idle server's sampling cannot be lowered")
	}
	mustExec(t, srv.DB, "SET GLOBAL innodb_stats_persistent_sample_pages = 1") // as a restore that failed midway leaves it
	t.Cleanup(func() { mustExec(t, srv.DB, "SET GLOBAL innodb_stats_persistent_sample_pages = DEFAULT") })
	ran, finish, done := make(chan int, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- c.FullSampling(context.Background(), srv.DB, func() error {
			var n int
			err := srv.DB.QueryRow("SELECT @@GLOBAL.innodb_stats_persistent_sample_pages").Scan(&n)
			ran <- n
			<-finish
			return err
		})
	}()
	// Once the analysis waits, no new restore lowers the sampling.
	for deadline := time.Now().Add(time.Minute); ; {
		r, ok := strategies.LowerSampling(c)
		if !ok {
			break
		}
		r()
		if time.Now().After(deadline) {
			t.Fatal("restores still lower the sampling a minute after the analysis began to wait")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-ran:
		t.Fatal("the analysis ran while a restore had the sampling lowered")
	default:
	}
	release()
	if n := <-ran; n != want {
		t.Errorf("the analysis ran at a sampling of %d pages, the server's is %d", n, want)
	}
	if r, ok := strategies.LowerSampling(c); ok {
		r()
		t.Error("a restore lowered the sampling while the analysis ran")
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r, ok := strategies.LowerSampling(c); !ok {
		t.Error("the sampling cannot be lowered after the analysis")
	} else {
		r()
	}
}
