package strategies_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/dbcompare"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

func TestMain(m *testing.M) {
	// Ending a lease's sessions leaves its idle pooled connections dead; the
	// driver would log each one it discards.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	code := m.Run()
	testenv.RemovePristine()
	os.Exit(code)
}

// fixture is a server with a template and helpers to make worker databases.
type fixture struct {
	t      testing.TB
	srv    *instance.Member
	ddl    *strategies.DDLCounter
	binlog *binlog.Log // the server's binary log, shared by its resets
	// rows follows the server's binary log for delta restores, started
	// on first use (see rowStream); not in modeCounters.
	rows   *binlog.Rows
	root   testing.TB // the test the fixture was made for (t may be a subtest)
	schema *schema.Schema
	want   *dbcompare.Snapshot
	// mode is how resets detect schema changes (modeAuto: as the daemon
	// would, watching the directory where it can, else from the binary
	// log).
	mode detectMode
}

// detectMode is how a reset detects a test's schema changes.
type detectMode string

const (
	modeAuto      detectMode = ""
	modeDirectory detectMode = "directory" // the database's directory (Target.Dir)
	modeBinlog    detectMode = "binlog"    // the binary log (Target.Binlog)
	// modeCounters: the server's statement counters, as on a server
	// without a binary log, which also leaves prepared XA transactions
	// alone.
	modeCounters detectMode = "counters"
)

// dir is the database directory the fixture's resets watch ("" when they
// do not).
func (f *fixture) dir(name string) string {
	if f.mode == modeAuto || f.mode == modeDirectory {
		return f.srv.DatabaseDir(name)
	}
	return ""
}

// log is the binary log the fixture's resets read (nil in modeCounters).
func (f *fixture) log() *binlog.Log {
	if f.mode == modeCounters {
		return nil
	}
	return f.binlog
}

// rowStream is the fixture's binary log stream (nil in modeCounters, as
// on a server without a binary log), started on first use and running
// once it returns.
func (f *fixture) rowStream() *binlog.Rows {
	if f.mode == modeCounters {
		return nil
	}
	if f.rows == nil {
		f.rows = testenv.RowStream(f.root, f.srv)
	}
	return f.rows
}

// modes are the ways schema changes are detected on f's server: watching
// the directory where the daemon can see it, the binary log, and the
// server's statement counters.
func modes(f *fixture) []detectMode {
	if !f.srv.Watch {
		return []detectMode{modeBinlog, modeCounters}
	}
	return []detectMode{modeDirectory, modeBinlog, modeCounters}
}

// extraMigration adds tables without AUTO_INCREMENT, a composite key with
// two cascading parents, gaps in seeded ids and a self-referencing key.
const extraMigration = `-- +goose Up
CREATE TABLE tags (
  code VARCHAR(20) NOT NULL PRIMARY KEY,
  label VARCHAR(50) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE post_tags (
  post_id BIGINT UNSIGNED NOT NULL,
  tag VARCHAR(20) NOT NULL,
  PRIMARY KEY (post_id, tag),
  CONSTRAINT pt_post FOREIGN KEY (post_id) REFERENCES posts (id) ON DELETE CASCADE,
  CONSTRAINT pt_tag FOREIGN KEY (tag) REFERENCES tags (code) ON DELETE CASCADE ON UPDATE CASCADE
) ENGINE=InnoDB;
CREATE TABLE categories (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  parent_id INT NULL,
  name VARCHAR(50) NOT NULL,
  CONSTRAINT cat_parent FOREIGN KEY (parent_id) REFERENCES categories (id) ON DELETE CASCADE
) ENGINE=InnoDB;
INSERT INTO tags VALUES ('go', 'Go'), ('sql', 'SQL'), ('db', 'Databases');
INSERT INTO post_tags VALUES (1, 'go'), (1, 'db'), (2, 'sql');
INSERT INTO categories (id, parent_id, name) VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), (7, 3, 'b1');
DELETE FROM categories WHERE id = 7;
-- +goose Down
DROP TABLE categories;
DROP TABLE post_tags;
DROP TABLE tags;
`

// fidelityMigration adds what real schemas have and the others lack: a
// FULLTEXT index (with a deleted document in the template's index), a
// SPATIAL index, ENUM, SET and YEAR columns, a trigger that writes NOW(6),
// a foreign-key cycle, and a table of 16,384 rows.
const fidelityMigration = `-- +goose Up
CREATE TABLE articles (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  title VARCHAR(200) NOT NULL,
  body TEXT NOT NULL,
  FULLTEXT KEY ft_articles (title, body)
) ENGINE=InnoDB;
INSERT INTO articles (title, body) VALUES
  ('Resetting databases', 'A database reset puts every table back as the template has it'),
  ('Server tuning', 'Tuning a database server for tests: tmpfs, no fsync, small buffers'),
  ('Removed', 'This article about templates is deleted by the migration'),
  ('Templates', 'A template is built once from migrations and cloned for every worker'),
  ('Parallel tests', 'Parallel tests need one database each, and a reset between tests'),
  ('Search', 'Relevance ranking depends on how many documents hold each word');
DELETE FROM articles WHERE id = 3;
CREATE TABLE places (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(50) NOT NULL,
  pos POINT NOT NULL,
  SPATIAL KEY sp_pos (pos)
) ENGINE=InnoDB;
INSERT INTO places (name, pos) VALUES ('origin', ST_GeomFromText('POINT(0 0)')), ('north', ST_GeomFromText('POINT(0 10)')),
  ('east', ST_GeomFromText('POINT(10 0)'));
CREATE TABLE kinds (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  mood ENUM('happy', 'sad', 'meh') NOT NULL DEFAULT 'meh',
  flags SET('a', 'b', 'c') NOT NULL DEFAULT '',
  born YEAR NULL
) ENGINE=InnoDB;
INSERT INTO kinds (mood, flags, born) VALUES ('happy', 'a,c', 1999), ('sad', '', 2024), ('meh', 'b', NULL);
CREATE TABLE kind_log (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  kind_id INT NOT NULL,
  at DATETIME(6) NOT NULL
) ENGINE=InnoDB;
CREATE TRIGGER kinds_touch AFTER UPDATE ON kinds FOR EACH ROW INSERT INTO kind_log (kind_id, at) VALUES (NEW.id, NOW(6));
CREATE TABLE teams (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(30) NOT NULL,
  captain_id INT NULL
) ENGINE=InnoDB;
CREATE TABLE players (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  team_id INT NULL,
  name VARCHAR(30) NOT NULL,
  CONSTRAINT pl_team FOREIGN KEY (team_id) REFERENCES teams (id) ON DELETE SET NULL
) ENGINE=InnoDB;
ALTER TABLE teams ADD CONSTRAINT team_captain FOREIGN KEY (captain_id) REFERENCES players (id) ON DELETE SET NULL;
INSERT INTO teams (id, name) VALUES (1, 'red'), (2, 'blue');
INSERT INTO players (id, team_id, name) VALUES (1, 1, 'ann'), (2, 1, 'bob'), (3, 2, 'cy');
UPDATE teams SET captain_id = id * 2 - 1;
CREATE TABLE event_log (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  kind TINYINT NOT NULL,
  payload VARCHAR(40) NOT NULL,
  KEY by_kind (kind)
) ENGINE=InnoDB;
INSERT INTO event_log (kind, payload)
SELECT n % 7, CONCAT('p', n) FROM ` + workload.Numbers + ` seq WHERE n <= 16384 ORDER BY n;
-- +goose Down
DROP TABLE event_log;
ALTER TABLE teams DROP FOREIGN KEY team_captain;
DROP TABLE players;
DROP TABLE teams;
DROP TABLE kind_log;
DROP TABLE kinds;
DROP TABLE places;
DROP TABLE articles;
`

// bigMigration adds a table of 100,000 rows whose key is a string and an
// unsigned integer, for the property test (newBigFixture): the tests that
// do not write to it need not copy it into every worker.
const bigMigration = `-- +goose Up
CREATE TABLE ledger (
  account VARCHAR(12) CHARACTER SET utf8mb4 NOT NULL,
  seq INT UNSIGNED NOT NULL,
  amount BIGINT NOT NULL,
  note VARCHAR(20) NULL,
  PRIMARY KEY (account, seq),
  KEY by_amount (amount)
) ENGINE=InnoDB;
INSERT INTO ledger
SELECT CONCAT('acct-', m % 1000), m, m * 7 % 1000, IF(m % 10 = 0, NULL, 'n')
FROM (SELECT n + 20000 * k AS m FROM ` + workload.Numbers + ` seq,
  (SELECT 0 k UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) ks) x ORDER BY m;
-- +goose Down
DROP TABLE ledger;
`

func newFixture(t testing.TB, p testenv.Provider) *fixture {
	return newFixtureOf(t, p)
}

// newBigFixture is newFixture with the 100,000-row table (bigMigration).
func newBigFixture(t testing.TB, p testenv.Provider) *fixture {
	return newFixtureOf(t, p, migrations.File{Name: "00006_big.sql", Content: []byte(bigMigration)})
}

func newFixtureOf(t testing.TB, p testenv.Provider, extra ...migrations.File) *fixture {
	t.Helper()
	srv := testenv.ServerOf(t, p)
	files, err := migrations.LoadDir(filepath.Join("..", "examples", "migrations"), "..")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, migrations.File{Name: "00004_extra.sql", Content: []byte(extraMigration)},
		migrations.File{Name: "00005_fidelity.sql", Content: []byte(fidelityMigration)})
	files = append(files, extra...)
	ctx := context.Background()
	f := &fixture{t: t, root: t, srv: srv, ddl: &strategies.DDLCounter{}, binlog: &binlog.Log{}}
	// Built as testdbd builds templates: as the template database's owner,
	// the definer of its objects.
	built, err := templates.Build(ctx, srv, f.ddl, "tpl", migrations.Source{Files: files}, templates.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.schema = built.Schema
	if f.want, err = dbcompare.Take(ctx, srv.DB, "tpl"); err != nil {
		t.Fatal(err)
	}
	return f
}

// worker clones the template into name, creates a lease-style user with
// privileges on it only, and returns the reset target and a pool of
// connections as that user.
func (f *fixture) worker(name string, strategy testdbd.Strategy) (*strategies.Target, *sql.DB) {
	f.t.Helper()
	ctx := context.Background()
	owner, err := accounts.CreateOwner(ctx, f.srv.DB, "tdbo_", name)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = accounts.Drop(context.Background(), f.srv.DB, owner.User) })
	if err := f.schema.Clone(ctx, f.srv.DB, f.ddl, name, owner.User); err != nil {
		f.t.Fatal(err)
	}
	user := "u_" + name
	if _, err := f.srv.DB.ExecContext(ctx, fmt.Sprintf(
		"CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'; GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'%%'",
		user, strings.ReplaceAll(name, "_", `\_`), user)); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { f.srv.DB.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user)) })
	rows := f.rowStream()
	if rows != nil {
		rows.Track(name, f.schema.Tables)
	}
	base, err := strategies.TakeBaseline(ctx, f.srv.StatusDB, f.srv.Flavor, f.ddl, name, f.dir(name), f.log())
	if err != nil {
		f.t.Fatal(err)
	}
	host, port := f.srv.ClientAddr()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", host+":"+strconv.Itoa(port), user, "pw", name
	cfg.MultiStatements = true
	// A second connection blocked by the first one's open transaction gives
	// up soon instead of after the server's 10 s.
	cfg.Params = map[string]string{"innodb_lock_wait_timeout": "1", "lock_wait_timeout": "1"}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		f.t.Fatal(err)
	}
	dsnOf[db] = cfg.FormatDSN()
	f.t.Cleanup(func() { db.Close() })
	return &strategies.Target{DB: f.srv.DB, StatusDB: f.srv.StatusDB, Flavor: f.srv.Flavor, DDL: f.ddl, Schema: f.schema,
		Database: name, User: user, Baseline: base, Strategy: strategy, Dir: f.dir(name), Owner: owner.User, Binlog: f.log(), Rows: rows}, db
}

// reset runs a reset and keeps the new baseline.
func (f *fixture) reset(tg *strategies.Target) testdbd.ResetReport {
	f.t.Helper()
	rep, base, err := strategies.Reset(context.Background(), *tg)
	if err != nil {
		f.t.Fatalf("reset: %v", err)
	}
	tg.Baseline = base
	return rep
}

// diffConcurrent is diff for goroutines: it reports instead of failing.
func (f *fixture) diffConcurrent(name string) []string {
	got, err := dbcompare.Take(context.Background(), f.srv.DB, name)
	if err != nil {
		return []string{"snapshot " + name + ": " + err.Error()}
	}
	return dbcompare.Diff(f.want, got)
}

// diff compares the worker with the template.
func (f *fixture) diff(name string) []string {
	f.t.Helper()
	got, err := dbcompare.Take(context.Background(), f.srv.DB, name)
	if err != nil {
		f.t.Fatalf("snapshot %s: %v", name, err)
	}
	return dbcompare.Diff(f.want, got)
}

// alwaysRestored lists the tables a reset of tg restores whatever the test
// did, on the fixture's server: on MySQL, those with a FULLTEXT index,
// unless the binary log stream can vouch that nothing reached them (see
// strategies' fulltextUntouched): it follows the database, the strategy is
// not truncate (which does not wait for the stream), and there is a
// baseline. Called before the reset.
func (f *fixture) alwaysRestored(tg *strategies.Target) []string {
	if f.srv.Flavor != testdbd.MySQL || (tg.Rows != nil && tg.Baseline != nil && tg.Strategy != testdbd.StrategyTruncate) {
		return nil
	}
	var names []string
	for _, t := range f.schema.Tables {
		if t.Fulltext {
			names = append(names, t.Name)
		}
	}
	return names
}

// forEachStrategy runs fn on a fixture of every engine cell, once per
// strategy, each in a subtest.
func forEachStrategy(t *testing.T, fn func(t *testing.T, f *fixture, s testdbd.Strategy)) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			for _, s := range testdbd.Strategies {
				t.Run(s.String(), func(t *testing.T) {
					f.t = t
					fn(t, f, s)
				})
			}
		})
	}
}

func mustExec(t testing.TB, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestNothingToDo(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			for _, s := range testdbd.Strategies {
				tg, _ := f.worker("w_clean_"+s.String(), s)
				always := f.alwaysRestored(tg)
				rep := f.reset(tg)
				if strings.Join(rep.TablesReset, ",") != strings.Join(always, ",") || rep.FallbackReason != "" || rep.Strategy != s {
					t.Errorf("%s: clean database reset did work: %+v", s, rep)
				}
				if rep.TablesTotal != len(f.schema.Tables) {
					t.Errorf("tables total %d", rep.TablesTotal)
				}
				// Without a baseline every table is compared: a clean
				// database still needs nothing restored.
				tg.Baseline = nil
				always = f.alwaysRestored(tg)
				if rep := f.reset(tg); strings.Join(rep.TablesReset, ",") != strings.Join(always, ",") || !strings.Contains(rep.FallbackReason, "no baseline") {
					t.Errorf("%s: full check of a clean database: %+v", s, rep)
				}
			}
		})
	}
}

// TestEachStrategyRestoresExactly runs one hand-written test of every kind
// of write per strategy; the randomized property test goes further.
func TestEachStrategyRestoresExactly(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			for _, s := range testdbd.Strategies {
				t.Run(s.String(), func(t *testing.T) {
					f.t = t
					tg, db := f.worker("w_each_"+s.String(), s)
					mustExec(t, db, "INSERT INTO posts (user_id, title) VALUES (3, 'New')") // trigger writes audit_log, post_counts
					mustExec(t, db, "UPDATE tags SET label = 'Golang' WHERE code = 'go'")
					mustExec(t, db, "DELETE FROM users WHERE id = 1") // cascades to posts, comments, post_tags; trigger calls a procedure
					mustExec(t, db, "DELETE FROM categories WHERE id = 2")
					mustExec(t, db, "BEGIN; INSERT INTO tags VALUES ('tmp', 'x'); ROLLBACK")
					rep := f.reset(tg)
					if d := f.diff(tg.Database); len(d) > 0 {
						t.Fatalf("after reset:\n%s\nreport: %+v", strings.Join(d, "\n"), rep)
					}
					if len(rep.TablesReset) < 6 {
						t.Errorf("tables reset %v", rep.TablesReset)
					}
					if s == testdbd.StrategyRollback && rep.FallbackReason == "" {
						t.Errorf("committed writes under rollback must be reported: %+v", rep)
					}
					// The next reset finds nothing.
					always := f.alwaysRestored(tg)
					if rep := f.reset(tg); strings.Join(rep.TablesReset, ",") != strings.Join(always, ",") {
						t.Errorf("second reset restored %v: %+v", rep.TablesReset, rep)
					}
				})
			}
		})
	}
}

// TestRollbackKeepsIDs is the field report's 26-of-98 failure: a test that
// inserts inside a transaction and rolls back must see the same ids next
// time, because the rollback strategy rewinds AUTO_INCREMENT.
func TestRollbackKeepsIDs(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			tg, db := f.worker("w_ids", testdbd.StrategyRollback)
			ctx := context.Background()
			run := func() []int64 {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for _, email := range []string{"a@x", "b@x"} {
					res, err := tx.ExecContext(ctx, "INSERT INTO users (email, name) VALUES (?, 'x')", email)
					if err != nil {
						t.Fatal(err)
					}
					id, _ := res.LastInsertId()
					ids = append(ids, id)
				}
				res, err := tx.ExecContext(ctx, "INSERT INTO posts (user_id, title) VALUES (?, 't')", ids[0])
				if err != nil {
					t.Fatal(err)
				}
				id, _ := res.LastInsertId()
				ids = append(ids, id)
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				return ids
			}
			first := run()
			rep := f.reset(tg)
			if rep.FallbackReason != "" || rep.Strategy != testdbd.StrategyRollback {
				t.Errorf("plain rollback fell back: %+v", rep)
			}
			second := run()
			if fmt.Sprint(first) != fmt.Sprint(second) {
				t.Errorf("ids drifted after a rollback reset: first %v, second %v", first, second)
			}
			if first[0] != 4 { // the template has users 1–3
				t.Errorf("first user id %d, want 4", first[0])
			}
			f.reset(tg)
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Fatal(strings.Join(d, "\n"))
			}
		})
	}
}

// TestRollbackEndsOpenSessions leaves a transaction open: the reset ends the
// session (rolling it back) and the database equals the template.
func TestRollbackEndsOpenSessions(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			tg, db := f.worker("w_open", testdbd.StrategyRollback)
			ctx := context.Background()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, tx, "INSERT INTO users (email, name) VALUES ('open@x', 'x')")
			mustExec(t, tx, "DELETE FROM posts WHERE id = 1")
			rep := f.reset(tg)
			if rep.SessionsEnded < 1 || rep.FallbackReason != "" {
				t.Errorf("report: %+v", rep)
			}
			if d := f.diff(tg.Database); len(d) > 0 {
				t.Fatal(strings.Join(d, "\n"))
			}
			if err := tx.Commit(); err == nil {
				t.Error("the ended session's transaction could still commit")
			}
		})
	}
}

// TestSchemaChangesAreUndone covers DDL by a test: every strategy notices
// and re-creates the tables the test changed, or the database when more
// than tables changed.
func TestSchemaChangesAreUndone(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			for _, mode := range modes(f) {
				t.Run(string(mode), func(t *testing.T) {
					f.t, f.mode = t, mode
					schemaChangesAreUndone(t, f)
				})
			}
		})
	}
}

func schemaChangesAreUndone(t *testing.T, f *fixture) {
	ddl := []string{
		"TRUNCATE TABLE comments",
		"ALTER TABLE users ADD COLUMN age INT",
		"ALTER TABLE users ALTER COLUMN name SET DEFAULT 'anon'",
		"DROP TABLE post_tags",
		"CREATE TABLE scratch (id INT)",
		"DROP TRIGGER posts_after_insert",
		"CREATE OR REPLACE VIEW active_users AS SELECT id, email, name FROM users",
		"DROP PROCEDURE log_action",
		"RENAME TABLE tags TO tags_old",
		"ANALYZE TABLE users",
		"DROP DATABASE %s",
	}
	for i, stmt := range ddl {
		s := testdbd.Strategies[i%3]
		name := fmt.Sprintf("w_ddl_%d_%s", i, f.mode)
		tg, db := f.worker(name, s)
		if strings.Contains(stmt, "%s") {
			stmt = fmt.Sprintf(stmt, name)
		}
		mustExec(t, db, "UPDATE users SET name = 'changed' WHERE id = 2")
		mustExec(t, db, stmt)
		rep := f.reset(tg)
		if d := f.diff(name); len(d) > 0 {
			t.Errorf("%s (%s): after reset:\n%s", stmt, s, strings.Join(d, "\n"))
		}
		// ANALYZE changes only statistics: a schema change to the
		// counters and the binary log, not to the database's directory.
		if rep.FallbackReason == "" && (f.mode != modeDirectory || !strings.HasPrefix(stmt, "ANALYZE")) {
			t.Errorf("%s: no fallback reason in %+v", stmt, rep)
		}
		if !strings.HasPrefix(stmt, "ANALYZE") && !strings.HasPrefix(stmt, "TRUNCATE") && len(rep.SchemaChanges) == 0 {
			t.Errorf("%s: schema change not reported: %+v", stmt, rep)
		}
		if len(rep.SchemaChanges) > 0 && !strings.Contains(rep.FallbackReason, rep.SchemaChanges[0]) {
			t.Errorf("%s: the fallback reason does not name what the test changed (%s): %s", stmt, rep.SchemaChanges[0], rep.FallbackReason)
		}
		// Where only tables changed, only those are re-created; otherwise
		// the whole database.
		tablesOnly := slices.ContainsFunc([]string{"ALTER TABLE", "DROP TABLE", "CREATE TABLE", "RENAME TABLE"},
			func(p string) bool { return strings.HasPrefix(stmt, p) })
		if got := strings.Contains(rep.FallbackReason, "only tables differ"); len(rep.SchemaChanges) > 0 && got != tablesOnly {
			t.Errorf("%s: tables re-created alone: %v, want %v (%s)", stmt, got, tablesOnly, rep.FallbackReason)
		}
		// Fast path again afterwards.
		always := f.alwaysRestored(tg)
		if rep := f.reset(tg); rep.FallbackReason != "" || strings.Join(rep.TablesReset, ",") != strings.Join(always, ",") {
			t.Errorf("%s: reset after the repair: %+v", stmt, rep)
		}
	}
}

// TestOwnDDLIsCounted checks that the daemon's own schema changes (a clone,
// a restore) never count as a test's: with the counters, the daemon counts
// its statements exactly as the server does; watching the directory, they
// are other databases' or read back after the restore. Schema changes in
// another database count only with the counters.
func TestOwnDDLIsCounted(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			for _, mode := range modes(f) {
				t.Run(string(mode), func(t *testing.T) {
					f.t, f.mode = t, mode
					ownDDLIsCounted(t, f)
				})
			}
		})
	}
}

func ownDDLIsCounted(t *testing.T, f *fixture) {
	m := string(f.mode)
	tg, db := f.worker("w_count_"+m, testdbd.StrategyTruncate)
	mustExec(t, db, "INSERT INTO posts (user_id, title) VALUES (3, 'x')")
	rep := f.reset(tg)
	if rep.FallbackReason != "" {
		t.Fatalf("first reset fell back: %s", rep.FallbackReason)
	}
	tg2, db2 := f.worker("w_count2_"+m, testdbd.StrategySnapshot) // a clone between the baseline and the next check
	mustExec(t, db2, "DELETE FROM users WHERE id = 1")
	mustExec(t, db, "INSERT INTO posts (user_id, title) VALUES (3, 'y')")
	if rep := f.reset(tg2); rep.FallbackReason != "" {
		t.Errorf("snapshot reset fell back: %s", rep.FallbackReason)
	}
	if rep := f.reset(tg); rep.FallbackReason != "" {
		t.Errorf("own clone counted as foreign DDL: %s", rep.FallbackReason)
	}
	// Statements by someone else in another database, and by another
	// lease in its own: the counters see them (and the full check finds
	// this database clean); the directory and the binary log do not.
	mustExec(t, f.srv.DB, "CREATE DATABASE other_scratch_"+m)
	mustExec(t, f.srv.DB, "CREATE TABLE other_scratch_"+m+".t (id INT)")
	mustExec(t, db2, "CREATE TABLE scratch2 (id INT)")
	mustExec(t, db, "INSERT INTO tags VALUES ('zz', 'z')")
	rep = f.reset(tg)
	if f.mode == modeCounters {
		if !strings.Contains(rep.FallbackReason, "schema-changing statements") || len(rep.SchemaChanges) != 0 {
			t.Errorf("foreign DDL: %+v", rep)
		}
	} else if rep.FallbackReason != "" {
		t.Errorf("another database's DDL made this reset fall back: %+v", rep)
	}
	if d := f.diff(tg.Database); len(d) > 0 {
		t.Fatal(strings.Join(d, "\n"))
	}
	// This lease's own DDL is seen either way, and named.
	mustExec(t, db, "CREATE INDEX by_title ON posts (title)")
	rep = f.reset(tg)
	if rep.FallbackReason == "" || !strings.Contains(strings.Join(rep.SchemaChanges, ","), "table posts was altered") {
		t.Errorf("own DDL: %+v", rep)
	}
	if f.mode == modeBinlog && !strings.Contains(rep.FallbackReason, "CREATE INDEX by_title") {
		t.Errorf("own DDL, read from the binary log, not named: %s", rep.FallbackReason)
	}
	if d := f.diff(tg.Database); len(d) > 0 {
		t.Fatal(strings.Join(d, "\n"))
	}
	// And the other lease's, at its own reset.
	if rep := f.reset(tg2); !strings.Contains(strings.Join(rep.SchemaChanges, ","), "scratch2") {
		t.Errorf("the other lease's DDL at its own reset: %+v", rep)
	}
	if d := f.diff(tg2.Database); len(d) > 0 {
		t.Fatal(strings.Join(d, "\n"))
	}
}

// lockHolders describes, for a failed test's message, what held locks on
// the server when a reset timed out waiting for one: its sessions, its
// transactions and the lock waits, and the XA transactions it holds
// prepared. It reads as the server's administrator, and reports what it
// could not read instead of failing.
func lockHolders(db *sql.DB) string {
	var b strings.Builder
	for _, q := range []string{
		"SHOW FULL PROCESSLIST",
		"SELECT trx_id, trx_state, trx_started, trx_mysql_thread_id, trx_rows_locked, trx_rows_modified, trx_query FROM information_schema.INNODB_TRX",
		"SELECT * FROM information_schema.INNODB_LOCK_WAITS", // MariaDB
		"SELECT * FROM performance_schema.data_lock_waits",   // MySQL
		"XA RECOVER",
	} {
		fmt.Fprintf(&b, "  %s:\n", q)
		rows, err := db.Query(q)
		var lines []string
		if err == nil {
			lines, err = rowLines(rows)
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "    %s\n", l)
		}
		if err != nil {
			fmt.Fprintf(&b, "    (%v)\n", err)
		}
	}
	return b.String()
}

// rowLines reads rows, closing them, each as "column=value ...".
func rowLines(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return out, err
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			parts[i] = cols[i] + "=" + v.String
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out, rows.Err()
}
