package strategies_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/strategies"
)

var (
	propertyN = flag.Int("property.n", envInt("TESTDBD_PROPERTY_N", 150),
		"random workloads per strategy in TestPropertyResetEqualsTemplate (make property runs 2500)")
	propertySeed  = flag.Uint64("property.seed", 0, "seed of the random workloads; 0 picks one (printed)")
	propertyBreak = flag.String("property.break", "",
		`break the detector on purpose to show the test catches it: "cascades" ignores tables the workload did not write directly (cascades, triggers); "schema" makes resets that watch the database's directory blind to it; "delta" restores big tables by deleting the rows above the template's keys whenever their row count went up; "updatetime" trusts an UPDATE_TIME in the baseline's own second or the one before; "xa" leaves the XA transactions a workload left prepared alone; "fulltext" leaves a FULLTEXT table alone on MySQL whatever its row count; "rowkeys" leaves one changed row of every table out of delta restores by the binary log`)
)

// workloads returns the count a flag asks for; in the quick tier (go test
// -short) it is quick unless the flag or its environment variable was set:
// make test runs the proof briefly on the native server, make test-all at
// the flag's default on every engine, make property at length.
func workloads(flagName, envName string, v *int, quick int) int {
	if !testing.Short() || os.Getenv(envName) != "" {
		return *v
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == flagName })
	if set {
		return *v
	}
	return min(*v, quick)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestPropertyResetEqualsTemplate runs random workloads against a worker
// database — inserts, updates, deletes, cascading deletes and updates,
// trigger and procedure side effects, failing statements, rolled-back and
// committed transactions, a second connection, occasional DDL — resets it
// with each strategy, and compares the whole database with the template:
// every object, every table's rows and every AUTO_INCREMENT counter.
func TestPropertyResetEqualsTemplate(t *testing.T) {
	seed := *propertySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	n := workloads("property.n", "TESTDBD_PROPERTY_N", propertyN, 30)
	t.Logf("seed %d (rerun with -property.seed=%d), %d workloads per strategy", seed, seed, n)
	for _, p := range testenv.EngineCells() {
		t.Run(p.Name, func(t *testing.T) { propertyRun(t, p, seed, n, modeAuto) })
		if p.Kind == "native" {
			// Schema changes detected from the binary log, as where the
			// datadir cannot be watched; and from the server's statement
			// counters, as on a server without a binary log.
			t.Run(p.Name+"-binlog", func(t *testing.T) { propertyRun(t, p, seed, n, modeBinlog) })
			t.Run(p.Name+"-counters", func(t *testing.T) { propertyRun(t, p, seed, n, modeCounters) })
		}
	}
}

func propertyRun(t *testing.T, p testenv.Provider, seed uint64, workloads int, mode detectMode) {
	// The 100,000-row table on the native cell, and on every cell with
	// TESTDBD_PROPERTY_BIG (make property): copying it whole where a
	// workload goes past what a delta restore puts back costs the full
	// matrix minutes per cell.
	var f *fixture
	if p.Kind == "native" || os.Getenv("TESTDBD_PROPERTY_BIG") != "" {
		f = newBigFixture(t, p)
	} else {
		f = newFixture(t, p)
	}
	f.mode = mode
	if mode == modeAuto && !f.srv.Watch {
		t.Logf("the datadir cannot be watched (%s): schema changes are detected from the binary log", f.srv.WatchWhy)
	}
	// Each strategy exact, then each keeping AUTO_INCREMENT (a quarter of
	// the workloads: counters are left out of the comparison, and a last
	// exact reset must bring them all back).
	for _, keep := range []bool{false, true} {
		for _, s := range testdbd.Strategies {
			name, n := s.String(), workloads
			if keep {
				name, n = "keep-auto-increment-"+name, max(1, n/4)
			}
			t.Run(name, func(t *testing.T) {
				f.t = t
				rng := rand.New(rand.NewPCG(seed, uint64(s)))
				db := "w_prop_" + s.String()
				if keep {
					db = "w_prop_keep_" + s.String() // user names are at most 32 characters on MySQL
				}
				tg, a := f.worker(db, s)
				tg.KeepAutoIncrement = keep
				b := reopenAs(t, a) // a second client of the same lease
				stats := map[string]int{}
				for i := 0; i < n; i++ {
					w := &randomWorkload{rng: rng, a: a, b: b, strategy: s, direct: map[string]bool{}, xidPrefix: db + "_",
						noAbandon: mode == modeCounters, endEmptyXA: f.srv.Flavor == testdbd.MySQL}
					w.run(t)
					switch *propertyBreak {
					case "cascades":
						strategies.BreakDetector(func(table string) bool { return !w.direct[table] })
					case "schema":
						strategies.BreakSchemaWatch(true)
					case "delta":
						strategies.BreakDelta(true)
					case "rowkeys":
						strategies.BreakRowKeys(true)
					case "updatetime":
						strategies.BreakUpdateTime(true)
					case "xa":
						strategies.BreakXA(true)
					case "fulltext":
						strategies.BreakFulltext(true)
					}
					before := strategies.UncommittedTables()
					rep, base, err := strategies.Reset(context.Background(), *tg)
					stats["rolled back, not checked"] += int(strategies.UncommittedTables() - before)
					strategies.BreakDetector(nil)
					strategies.BreakSchemaWatch(false)
					strategies.BreakDelta(false)
					strategies.BreakRowKeys(false)
					strategies.BreakUpdateTime(false)
					strategies.BreakXA(false)
					strategies.BreakFulltext(false)
					if err != nil {
						t.Fatalf("seed %d workload %d: reset: %v\nworkload:\n%s\nthe server after the reset failed:\n%s", seed, i, err, w.log.String(), lockHolders(f.srv.DB))
					}
					tg.Baseline = base
					if os.Getenv("TESTDBD_PROPERTY_SLOW") != "" && rep.Total > 20*time.Millisecond {
						t.Logf("slow reset %v: %+v", rep.Total, rep.Phases)
					}
					if d := withoutAutoInc(f.diff(tg.Database), keep); len(d) > 0 {
						t.Fatalf("seed %d workload %d: the %s reset left %d differences:\n%s\nreport: %+v\nworkload:\n%s",
							seed, i, name, len(d), strings.Join(d, "\n"), rep, w.log.String())
					}
					if left := commitAbandoned(t, f.srv.DB, w.xidPrefix); len(left) > 0 {
						// Those wrote nothing (a statement that changed no
						// row): committing them must not change the database.
						if d := withoutAutoInc(f.diff(tg.Database), keep); len(d) > 0 {
							t.Fatalf("seed %d workload %d: the %s reset left XA transactions prepared (%v), and committing them changed the database:\n%s\nreport: %+v\nworkload:\n%s",
								seed, i, name, left, strings.Join(d, "\n"), rep, w.log.String())
						}
						stats["XA left prepared with nothing written"] += len(left)
					}
					stats["XA rolled back"] += len(rep.XARolledBack)
					stats["tables reset"] += len(rep.TablesReset)
					stats["delta restores"] += len(rep.TablesDelta)
					if rep.DeltaFallback != "" {
						_, why, _ := strings.Cut(rep.DeltaFallback, "copied back whole: ")
						stats["copied whole: "+why]++
					}
					if rep.FallbackReason != "" {
						stats["fallbacks"]++
					}
					if len(rep.SchemaChanges) > 0 {
						stats["schema repairs"]++
					}
					stats["sessions ended"] += rep.SessionsEnded
					stats["statements"] += w.statements
					stats["failed statements"] += w.failed
				}
				if keep {
					tg.KeepAutoIncrement = false
					f.reset(tg)
					if d := f.diff(tg.Database); len(d) > 0 {
						t.Fatalf("seed %d: the exact reset after keeping AUTO_INCREMENT left %d differences:\n%s", seed, len(d), strings.Join(d, "\n"))
					}
				}
				t.Logf("%s: %d workloads, all equal to the template after reset; %v", name, n, stats)
			})
		}
	}
}

// withoutAutoInc leaves out the AUTO_INCREMENT differences when keep.
func withoutAutoInc(diffs []string, keep bool) []string {
	if !keep {
		return diffs
	}
	var out []string
	for _, d := range diffs {
		if !strings.HasPrefix(d, "AUTO_INCREMENT of ") {
			out = append(out, d)
		}
	}
	return out
}

// reopenAs opens a second pool with the same DSN as db (a second client of
// the same lease).
func reopenAs(t *testing.T, db *sql.DB) *sql.DB {
	t.Helper()
	dsn := dsnOf[db]
	if dsn == "" {
		t.Fatal("unknown pool")
	}
	b, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// randomWorkload is one random test.
type randomWorkload struct {
	rng        *rand.Rand
	a, b       *sql.DB
	strategy   testdbd.Strategy
	log        strings.Builder
	direct     map[string]bool // tables the workload's own statements named
	statements int
	failed     int
	// mix, when set, shapes the workload as a suite's test would be: one DDL
	// statement in a share of the workloads, and rollback tests that never
	// commit; otherwise every kind of statement is drawn at random.
	mix           *suiteMix
	changedSchema bool // the workload ran a schema-changing statement
	// xidPrefix starts the xids of the workload's XA transactions: its
	// database's name, so that they tell which lease left them.
	xidPrefix string
	// noAbandon leaves out XA transactions left prepared: resets without
	// the binary log cannot roll them back.
	noAbandon bool
	// endEmptyXA ends, instead of leaving it prepared, an XA transaction
	// whose statement changed no row (failed, or matched nothing): MySQL
	// keeps such a transaction's row locks at XA PREPARE but writes
	// nothing of it to the binary log, so no reset can tell whose it is
	// (docs/strategies.md); MariaDB releases the locks of rows it did not
	// change.
	endEmptyXA bool
	// dml and schemaDDL, when set, draw the statements instead of
	// statement and ddl (another schema's workloads).
	dml, schemaDDL func() string
}

func (w *randomWorkload) nextDML() string {
	if w.dml != nil {
		return w.dml()
	}
	return w.statement()
}

func (w *randomWorkload) nextDDL() string {
	if w.schemaDDL != nil {
		return w.schemaDDL()
	}
	return w.ddl()
}

// suiteMix shapes workloads like a real suite's tests.
type suiteMix struct {
	ddlShare float64 // the share of workloads that run one DDL statement
}

// exec runs one statement, logging it; errors (foreign keys, duplicates)
// are part of the workload.
func (w *randomWorkload) exec(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, who, q string) {
	w.statements++
	for _, tbl := range []string{"users", "posts", "comments", "audit_log", "post_counts", "tags", "post_tags", "categories",
		"articles", "places", "kinds", "kind_log", "teams", "players", "event_log", "ledger"} {
		if strings.Contains(q, " "+tbl+" ") || strings.Contains(q, " "+tbl+"(") || strings.HasSuffix(q, " "+tbl) {
			w.direct[tbl] = true
		}
	}
	_, err := db.ExecContext(ctx, q)
	fmt.Fprintf(&w.log, "  %s: %s", who, q)
	if err != nil {
		w.failed++
		fmt.Fprintf(&w.log, "  -- %v", err)
	}
	w.log.WriteString("\n")
}

func (w *randomWorkload) n(k int) int { return w.rng.IntN(k) }

// statement returns a random DML statement.
func (w *randomWorkload) statement() string {
	id := func() int { return 1 + w.n(12) }
	word := func() string { return fmt.Sprintf("w%d", w.n(1000)) }
	switch w.n(31) {
	case 0:
		return fmt.Sprintf("INSERT INTO users (email, name) VALUES ('%s@x', '%s')", word(), word())
	case 1:
		return fmt.Sprintf("INSERT INTO users (id, email, name) VALUES (%d, '%s@y', 'explicit')", 20+w.n(50), word())
	case 2:
		return fmt.Sprintf("INSERT INTO posts (user_id, title, body) VALUES (%d, 'T %s', 'b')", id(), word())
	case 3:
		return fmt.Sprintf("INSERT INTO comments (post_id, user_id, body) VALUES (%d, %d, 'c')", id(), id())
	case 4:
		return fmt.Sprintf("INSERT INTO tags VALUES ('%s', 'L')", word())
	case 5:
		return fmt.Sprintf("INSERT INTO post_tags VALUES (%d, '%s')", id(), []string{"go", "sql", "db"}[w.n(3)])
	case 6:
		return fmt.Sprintf("INSERT INTO categories (parent_id, name) VALUES (%d, 'c')", 1+w.n(5))
	case 7:
		return fmt.Sprintf("UPDATE users SET name = '%s' WHERE id = %d", word(), id())
	case 8:
		return fmt.Sprintf("UPDATE tags SET code = '%s' WHERE code = '%s'", word(), []string{"go", "sql", "db"}[w.n(3)])
	case 9:
		return fmt.Sprintf("UPDATE posts SET title = 'U %s' WHERE user_id = %d", word(), id())
	case 10:
		return fmt.Sprintf("DELETE FROM users WHERE id = %d", id())
	case 11:
		return fmt.Sprintf("DELETE FROM posts WHERE id = %d", id())
	case 12:
		return fmt.Sprintf("DELETE FROM categories WHERE id = %d", 1+w.n(5))
	case 13:
		return fmt.Sprintf("CALL log_action('x', %d, 'call')", id())
	case 14:
		return fmt.Sprintf("INSERT INTO post_counts (user_id, posts) VALUES (%d, 1) ON DUPLICATE KEY UPDATE posts = posts + 1", id())
	case 15:
		return "DELETE FROM audit_log WHERE id % 2 = 0"
	case 17:
		return fmt.Sprintf("INSERT INTO articles (title, body) VALUES ('%s', 'a database %s with %s')", word(),
			[]string{"reset", "template", "server"}[w.n(3)], word())
	case 18:
		return fmt.Sprintf("DELETE FROM articles WHERE id = %d", 1+w.n(7))
	case 19:
		return fmt.Sprintf("UPDATE articles SET body = CONCAT(body, ' tests %s') WHERE id = %d", word(), 1+w.n(7))
	case 20:
		return fmt.Sprintf("INSERT INTO places (name, pos) VALUES ('%s', ST_GeomFromText('POINT(%d %d)'))", word(), w.n(20), w.n(20))
	case 21:
		return fmt.Sprintf("DELETE FROM places WHERE MBRContains(ST_GeomFromText('POLYGON((-1 -1, -1 %d, %d %d, %d -1, -1 -1))'), pos)",
			1+w.n(12), 1+w.n(12), 1+w.n(12), 1+w.n(12))
	case 22:
		// The trigger writes NOW(6) to kind_log.
		return fmt.Sprintf("UPDATE kinds SET mood = '%s', flags = '%s', born = %d WHERE id = %d",
			[]string{"happy", "sad", "meh"}[w.n(3)], []string{"", "a", "b,c", "a,b,c"}[w.n(4)], 1990+w.n(40), 1+w.n(4))
	case 23:
		return fmt.Sprintf("INSERT INTO kinds (mood, flags, born) VALUES ('%s', 'c', %d)", []string{"happy", "sad", "bogus"}[w.n(3)], 2000+w.n(20))
	case 24:
		// The foreign-key cycle: deleting a player or a team sets the
		// other side's reference to NULL.
		return fmt.Sprintf("DELETE FROM players WHERE id = %d", 1+w.n(4))
	case 25:
		return fmt.Sprintf("DELETE FROM teams WHERE id = %d", 1+w.n(3))
	case 26:
		return fmt.Sprintf("INSERT INTO players (team_id, name) VALUES (%d, '%s')", 1+w.n(3), word())
	case 27:
		// Appending only is restored by deleting the added rows (a delta
		// restore); the others below must not be taken for it.
		switch w.n(6) {
		case 0:
			return fmt.Sprintf("INSERT INTO event_log (id, kind, payload) VALUES (%d, 1, '%s')", 16385+w.n(4), word())
		case 1:
			return fmt.Sprintf("INSERT INTO event_log (id, kind, payload) VALUES (%d, 2, 'below')", -w.n(3))
		case 2:
			return fmt.Sprintf("UPDATE event_log SET id = id + 20000 WHERE id = %d", 1+w.n(16384))
		case 3:
			return fmt.Sprintf("REPLACE INTO event_log (id, kind, payload) VALUES (%d, 3, '%s')", 16380+w.n(8), word())
		}
		return fmt.Sprintf("INSERT INTO event_log (kind, payload) VALUES (%d, '%s')", w.n(7), word())
	case 28:
		if w.n(2) == 0 {
			return fmt.Sprintf("UPDATE event_log SET payload = '%s' WHERE id = %d", word(), 1+w.n(16384))
		}
		return fmt.Sprintf("DELETE FROM event_log WHERE id = %d", 1+w.n(16384))
	case 29:
		// The 100,000-row table, a few rows at a time: restored by key.
		m := 1 + w.n(100000)
		key := fmt.Sprintf("account = 'acct-%d' AND seq = %d", m%1000, m)
		switch w.n(4) {
		case 0:
			return "UPDATE ledger SET amount = amount + 1 WHERE " + key
		case 1:
			return "DELETE FROM ledger WHERE " + key
		case 2:
			return fmt.Sprintf("INSERT INTO ledger VALUES ('ü-%d', %d, 1, NULL)", w.n(50), w.n(10))
		}
		return "UPDATE ledger SET seq = seq + 200000 WHERE " + key
	case 30:
		// Many rows of it at once; past what a delta restore puts back.
		switch w.n(3) {
		case 0:
			return fmt.Sprintf("UPDATE ledger SET note = 'bulk' WHERE amount = %d", w.n(1000))
		case 1:
			return fmt.Sprintf("DELETE FROM ledger WHERE account = 'acct-%d'", w.n(1000))
		}
		return "INSERT INTO ledger SELECT CONCAT('new-', n), n, 0, NULL FROM " + workload.Numbers + " seq WHERE n <= 2500"
	default:
		return fmt.Sprintf("UPDATE categories SET name = 'r' WHERE parent_id = %d", 1+w.n(4))
	}
}

// ddl returns a random schema-changing statement.
func (w *randomWorkload) ddl() string {
	stmts := []string{
		"TRUNCATE TABLE comments",
		"ALTER TABLE users ADD COLUMN extra INT",
		"ALTER TABLE users ALTER COLUMN name SET DEFAULT 'd'",
		"ALTER TABLE tags COMMENT = 'changed'",
		"DROP TABLE post_tags",
		"CREATE TABLE scratch (id INT PRIMARY KEY)",
		"DROP TRIGGER posts_after_insert",
		"CREATE OR REPLACE VIEW active_users AS SELECT id, email, name FROM users",
		"DROP PROCEDURE log_action",
		"RENAME TABLE tags TO tags2",
		"ANALYZE TABLE users",
		"OPTIMIZE TABLE posts",
		"CREATE INDEX by_name ON users (name)",
		"DROP EVENT purge_audit",
		"CREATE TEMPORARY TABLE tmp_work (id INT)",
		"OPTIMIZE TABLE articles",
		"ALTER TABLE event_log ADD INDEX by_payload (payload)",
	}
	return stmts[w.n(len(stmts))]
}

func (w *randomWorkload) run(t testing.TB) {
	ctx := context.Background()
	conn, err := w.a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if w.mix != nil {
		w.runMix(ctx, conn)
		return
	}
	ops := 1 + w.n(8)
	cooperative := w.strategy == testdbd.StrategyRollback && w.n(10) < 8
	if cooperative {
		w.exec(ctx, conn, "A", "BEGIN")
	}
	for i := 0; i < ops; i++ {
		switch r := w.n(100); {
		case r < 3:
			w.exec(ctx, conn, "A", w.nextDDL())
		case r < 10:
			w.exec(ctx, w.b, "B", w.nextDML()) // a second connection, autocommit
		case r < 20 && !cooperative:
			w.exec(ctx, conn, "A", "BEGIN")
			w.exec(ctx, conn, "A", w.nextDML())
			w.exec(ctx, conn, "A", w.nextDML())
			w.exec(ctx, conn, "A", []string{"ROLLBACK", "COMMIT"}[w.n(2)])
		case r < 25:
			// An XA transaction left prepared on a connection of its own,
			// which stays open until the reset ends it or is closed by
			// the client: the reset must roll it back.
			w.abandonXA(ctx)
		case r < 28 && !cooperative:
			// An XA transaction, carried to its end: one phase, or
			// prepared and then committed or rolled back.
			xid := w.xid()
			w.exec(ctx, conn, "A", "XA START "+xid)
			w.exec(ctx, conn, "A", w.nextDML())
			w.exec(ctx, conn, "A", "XA END "+xid)
			switch w.n(3) {
			case 0:
				w.exec(ctx, conn, "A", "XA COMMIT "+xid+" ONE PHASE")
			case 1:
				w.exec(ctx, conn, "A", "XA PREPARE "+xid)
				w.exec(ctx, conn, "A", "XA COMMIT "+xid)
			default:
				w.exec(ctx, conn, "A", "XA PREPARE "+xid)
				w.exec(ctx, conn, "A", "XA ROLLBACK "+xid)
			}
		default:
			w.exec(ctx, conn, "A", w.nextDML())
		}
	}
	if cooperative {
		switch r := w.n(100); {
		case r < 70:
			w.exec(ctx, conn, "A", "ROLLBACK")
		case r < 95:
			// left open: the reset ends the session
		default:
			w.exec(ctx, conn, "A", "COMMIT")
		}
	}
}

// xid returns a random xid of the workload's lease (see abandoned).
func (w *randomWorkload) xid() string {
	return fmt.Sprintf("'%s%d'", w.xidPrefix, w.n(1_000_000))
}

// abandonXA runs a random statement in an XA transaction on a connection
// of its own and prepares it, never to commit or roll it back; half the
// time the client then disconnects.
func (w *randomWorkload) abandonXA(ctx context.Context) {
	if w.noAbandon {
		return
	}
	c, err := w.a.Conn(ctx)
	if err != nil {
		fmt.Fprintf(&w.log, "  X: connect: %v\n", err)
		return
	}
	xid := w.xid()
	w.exec(ctx, c, "X", "XA START "+xid)
	w.exec(ctx, c, "X", w.nextDML())
	var changed int64
	if w.endEmptyXA && (c.QueryRowContext(ctx, "SELECT ROW_COUNT()").Scan(&changed) != nil || changed <= 0) {
		w.log.WriteString("  X: (changed no row: ended, as MySQL could not tell whose it is)\n")
		w.exec(ctx, c, "X", "XA END "+xid)
		w.exec(ctx, c, "X", "XA ROLLBACK "+xid)
		_ = c.Close()
		return
	}
	w.exec(ctx, c, "X", "XA END "+xid)
	w.exec(ctx, c, "X", "XA PREPARE "+xid)
	if w.n(2) == 0 {
		w.log.WriteString("  X: (disconnects)\n")
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = c.Close()
}

// commitAbandoned commits, as anyone on the server could, the XA
// transactions of the lease with xidPrefix that the server still holds
// prepared after a reset, and returns them. A reset rolls back every one
// that wrote to its database; those left wrote nothing (their statement
// changed no row, so the binary log has nothing of them), and committing
// them must leave the database as the reset did.
func commitAbandoned(t testing.TB, db *sql.DB, xidPrefix string) []string {
	t.Helper()
	ids, err := binlog.Prepared(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id.Gtrid, xidPrefix) {
			_, _ = db.Exec("XA COMMIT " + id.SQL())
			out = append(out, id.String())
		}
	}
	return out
}

// dsnOf remembers the DSN of each lease pool the fixture opened.
var dsnOf = map[*sql.DB]string{}

// runMix runs a workload shaped by w.mix: a few DML statements, one DDL
// statement in a share of the workloads, rollback tests in a transaction
// rolled back (or left open for the reset to end).
func (w *randomWorkload) runMix(ctx context.Context, conn *sql.Conn) {
	cooperative := w.strategy == testdbd.StrategyRollback
	if cooperative {
		w.exec(ctx, conn, "A", "BEGIN")
	}
	ops := 1 + w.n(6)
	ddlAt := -1
	if w.rng.Float64() < w.mix.ddlShare {
		ddlAt = w.n(ops)
	}
	if w.rng.Float64() < 0.03 {
		w.abandonXA(ctx) // a test that leaves an XA transaction prepared
	}
	for i := 0; i < ops; i++ {
		if i == ddlAt {
			w.changedSchema = true
			w.exec(ctx, conn, "A", w.schemaChange())
			continue
		}
		w.exec(ctx, conn, "A", w.statement())
	}
	if cooperative && w.n(4) > 0 {
		w.exec(ctx, conn, "A", "ROLLBACK")
	}
}

// schemaChange is a DDL statement that changes the schema (ddl's list
// without ANALYZE and temporary tables).
func (w *randomWorkload) schemaChange() string {
	for {
		s := w.ddl()
		if !strings.HasPrefix(s, "ANALYZE") && !strings.Contains(s, "TEMPORARY") {
			return s
		}
	}
}

var propertyConcurrentN = flag.Int("property.concurrent", envInt("TESTDBD_PROPERTY_CONCURRENT", 25),
	"workloads per lease in TestPropertyConcurrent (12 leases at once)")

// TestPropertyConcurrent runs what a CI runner does: 12 leases of one
// template on one server at once, 4 per strategy, each running workloads
// shaped like a suite's tests, 5% of them with a schema change, and
// resetting after each; every reset must leave its database equal to the
// template. It reports the share of resets that checked every table (a
// schema change seen) beside the share of workloads that changed the
// schema, and reset latency beside the same workloads run one lease at a
// time. Watching each database's directory, or reading the binary log, the
// first follows the second: one lease's DDL does not make the others check
// everything.
func TestPropertyConcurrent(t *testing.T) {
	concurrentN := workloads("property.concurrent", "TESTDBD_PROPERTY_CONCURRENT", propertyConcurrentN, 10)
	seed := *propertySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for _, p := range testenv.EngineCells() {
		t.Run(p.Name, func(t *testing.T) {
			f := newFixture(t, p)
			t.Logf("seed %d (rerun with -property.seed=%d), %d workloads per lease, watching directories: %v",
				seed, seed, concurrentN, f.srv.Watch)
			mix := &suiteMix{ddlShare: 0.05}
			alone := concurrentRun(t, f, "alone", 1, concurrentN, mix, seed, true)
			together := concurrentRun(t, f, "together", 4, concurrentN, mix, seed+1, false)
			for _, s := range testdbd.Strategies {
				a, b := alone[s], together[s]
				t.Logf("%-8s alone: p50 %v, full checks %d of %d; 12 leases: p50 %v p99 %v (%.2fx alone), full checks %d of %d (%.1f%%) for %d workloads with DDL (%.1f%%)",
					s, a.p(0.5), a.full, a.n, b.p(0.5), b.p(0.99), float64(b.p(0.5))/float64(a.p(0.5)),
					b.full, b.n, 100*float64(b.full)/float64(b.n), b.ddl, 100*float64(b.ddl)/float64(b.n))
				if (f.srv.Watch || f.log() != nil) && b.full > b.ddl+b.n/20 {
					t.Errorf("%s: %d of %d resets checked every table for %d workloads that changed the schema: another lease's DDL is not scoped",
						s, b.full, b.n, b.ddl)
				}
			}
		})
	}
}

// runResult is what concurrentRun measured for one strategy.
type runResult struct {
	n, full, ddl int
	took         []time.Duration
}

func (r *runResult) p(q float64) time.Duration {
	s := append([]time.Duration(nil), r.took...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// concurrentRun runs per leases of each strategy at once (with serial, one
// lease at a time), each through n workloads, resetting and comparing
// after each.
func concurrentRun(t *testing.T, f *fixture, name string, per, n int, mix *suiteMix, seed uint64, serial bool) map[testdbd.Strategy]*runResult {
	type worker struct {
		s    testdbd.Strategy
		tg   *strategies.Target
		a, b *sql.DB
		rng  *rand.Rand
	}
	var workers []*worker
	for _, s := range testdbd.Strategies {
		for i := 0; i < per; i++ {
			tg, a := f.worker(fmt.Sprintf("w_%s_%s_%d", name, s, i), s)
			workers = append(workers, &worker{s: s, tg: tg, a: a, b: reopenAs(t, a), rng: rand.New(rand.NewPCG(seed, uint64(len(workers))))})
		}
	}
	var mu sync.Mutex
	out := map[testdbd.Strategy]*runResult{}
	for _, s := range testdbd.Strategies {
		out[s] = &runResult{}
	}
	var wg sync.WaitGroup
	for _, wk := range workers {
		wg.Add(1)
		run := func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				w := &randomWorkload{rng: wk.rng, a: wk.a, b: wk.b, strategy: wk.s, direct: map[string]bool{}, mix: mix,
					xidPrefix: wk.tg.Database + "_", endEmptyXA: f.srv.Flavor == testdbd.MySQL}
				w.run(t)
				rep, base, err := strategies.Reset(context.Background(), *wk.tg)
				if err != nil {
					t.Errorf("%s %s workload %d: reset: %v\nworkload:\n%s", name, wk.tg.Database, i, err, w.log.String())
					return
				}
				wk.tg.Baseline = base
				left := commitAbandoned(t, f.srv.DB, w.xidPrefix) // see propertyRun
				if d := f.diffConcurrent(wk.tg.Database); len(d) > 0 {
					t.Errorf("%s %s workload %d: the %s reset left %d differences (after committing the XA transactions it left prepared: %v):\n%s\nreport: %+v\nworkload:\n%s",
						name, wk.tg.Database, i, wk.s, len(d), left, strings.Join(d, "\n"), rep, w.log.String())
					return
				}
				mu.Lock()
				r := out[wk.s]
				r.n++
				r.took = append(r.took, rep.Total)
				if strings.Contains(rep.FallbackReason, "checked every table") {
					if r.full < 3 && !w.changedSchema {
						t.Logf("%s %s: full check after a workload without DDL: %s", name, wk.s, rep.FallbackReason)
					}
					r.full++
				}
				if w.changedSchema {
					r.ddl++
				}
				mu.Unlock()
			}
		}
		if serial {
			run()
		} else {
			go run()
		}
	}
	wg.Wait()
	return out
}
