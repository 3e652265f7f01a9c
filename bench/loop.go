package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

// The least a clean database handed out costs, looped beside testdbd's
// throughput runs by as many workers: the benchmark does itself, with no
// daemon work in between, what every hand-out needs and nothing else. Each
// worker owns a copy of the template (with the template's statistics, as
// testdbd's copies) and an account with privileges on it alone, and loops:
//
//   - a REST round trip to the daemon (GET /healthz, which does no work),
//     where testdbd's workers acquire;
//   - connect with the account's password, run the standard test (the
//     rollback variant inside a transaction it rolls back), disconnect;
//   - another REST round trip, where testdbd's workers release;
//   - the recycle, in one round trip of its own (recycleSQL): a new
//     password for the account, so that the old one stops working, its
//     sessions ended (KILL HARD CONNECTION USER, MariaDB), reads of what
//     a test may have changed (the tables' AUTO_INCREMENT, where even a
//     rolled-back insert shows, and UPDATE_TIME, which tells a commit
//     from a rollback; the procedures and events; the prepared XA
//     transactions, which ending sessions leaves), the floor's restore of
//     the dirty tables (floorVariant), and the statistics rows written
//     from a second before the hand-out began compared with the
//     template's: those of a test's ANALYZE TABLE and those MariaDB
//     recomputes at the restore's ALTER TABLE … AUTO_INCREMENT, whose
//     figures need not come out as the template's. Then, in a round trip
//     of their own as in testdbd's resets, the template's statistics put
//     back: for truncate those TRUNCATE empties (essentialsStats), and
//     wherever the comparison found a difference.
//
// The reads tell the loop nothing it does not already know (the benchmark
// knows the dirty tables), but an exact hand-out must read something of
// each. No schema-change detection (testdbd's looks at the database's
// directory, a stat on the daemon's side), no baseline, no bookkeeping, no
// wait for killed sessions: less than testdbd does. Each worker waits for
// its own recycle (testdbd's workers take another ready database
// meanwhile), so the loop's rate is not a ceiling; its CPU time per clean
// database is a floor, and the machine's cores over it are the most any
// hand-out through REST could reach (loopNote).
const loopSuffix = " + REST, looped"

// loopOf names each strategy variant's least loop.
var loopOf = func() map[string]string {
	out := map[string]string{}
	for _, v := range strategyVariants {
		out[v] = floorOf[v] + loopSuffix
	}
	return out
}()

// loopWhat describes a least loop for the report.
const loopWhat = "the benchmark's own loop of what a hand-out needs and nothing else, as many workers, each on a copy of the " +
	"template (with the template's statistics) with an account of its own: a REST round trip to the daemon (`GET /healthz`) " +
	"where testdbd's workers acquire, connect with the account's password, the standard test, disconnect, another REST round " +
	"trip where they release, then the recycle in one round trip: a new password, the account's sessions ended " +
	"(`KILL HARD CONNECTION USER`), reads of what a test may have changed (the database's `information_schema.TABLES`: " +
	"`AUTO_INCREMENT`, where even a rolled-back insert shows, and `UPDATE_TIME`, which tells a commit from a rollback; its " +
	"procedures and events in `mysql.proc` and `mysql.event`; `XA RECOVER`, as ending sessions leaves a prepared transaction), " +
	"the floor's restore of the 5 dirty tables, and the statistics rows written from a second before the hand-out began " +
	"compared with the template's (a test's `ANALYZE TABLE`, and the statistics MariaDB recomputes at the restore's " +
	"`ALTER TABLE … AUTO_INCREMENT`, whose figures need not come out as the template's); then, in a round trip of their own, " +
	"the template's statistics put back: for truncate those `TRUNCATE` empties, in every loop, and wherever the comparison " +
	"found a difference. The benchmark knows what the test changed, but an exact hand-out must read something of each; no " +
	"schema-change detection, no baseline, no bookkeeping, no wait for killed sessions, no daemon work. Each worker waits " +
	"for its own recycle, where testdbd's take another ready database, so its rate is no ceiling: its CPU time per clean " +
	"database is the floor, and the machine's cores over it the most any hand-out could reach (\"at most\" below)"

// leastLoop is the least loops' work on the server of the throughput
// daemon. Each run has databases and accounts of its own (open, close):
// the copies would otherwise sit on the server during testdbd's runs,
// whose detection reads time for every table there.
type leastLoop struct {
	d        *daemon
	cfg      *mysql.Config // the administrative login
	fp       *floorPlan
	restores map[string]string // the floors' restores, by strategy variant
	addr     string            // the server's address for the workers (TCP)
	pid      int               // the server's process
	dbs      []*loopDB
	// statsPutBack counts the recycles that found statistics other than
	// the template's (recycle).
	statsPutBack atomic.Int64
}

// loopDB is one worker's copy of the template and its account.
type loopDB struct {
	name, user, password string
	admin                *sql.DB // one session, on the database
}

// loopDatabase names worker i's copy.
func loopDatabase(i int) string { return "tdbbench_loop_" + strconv.Itoa(i) }

// newLeastLoop prepares the least loops of template on d's server. ok is
// false, with no error, where the server is not MariaDB's (the recycle's
// KILL … USER is MariaDB's).
func newLeastLoop(ctx context.Context, d *daemon, template string) (_ *leastLoop, ok bool, err error) {
	t, inst, err := templateInstance(ctx, d, template)
	if err != nil {
		return nil, false, err
	}
	cfg, admin, mariadb, err := floorAdmin(ctx, inst)
	if err != nil {
		return nil, false, err
	}
	defer admin.Close()
	if !mariadb {
		return nil, false, nil
	}
	fp, err := readFloorPlan(ctx, admin, t.Database)
	if err != nil {
		return nil, false, err
	}
	l := &leastLoop{d: d, cfg: cfg, fp: fp, restores: map[string]string{},
		addr: net.JoinHostPort(inst.Host, strconv.Itoa(int(inst.Port))), pid: int(inst.Pid)}
	for _, v := range strategyVariants {
		l.restores[v] = fp.restore(v)
	}
	return l, true, nil
}

// open copies the template once per worker and gives each copy an
// account.
func (l *leastLoop) open(ctx context.Context, workers int) (err error) {
	connector, err := mysql.NewConnector(l.cfg)
	if err != nil {
		return err
	}
	admin := sql.OpenDB(connector)
	defer admin.Close()
	defer func() {
		if err != nil {
			err = errors.Join(err, l.close(context.WithoutCancel(ctx)))
		}
	}()
	for i := range workers {
		name := loopDatabase(i)
		c := *l.cfg
		c.DBName = name
		connector, err := mysql.NewConnector(&c)
		if err != nil {
			return err
		}
		db := &loopDB{name: name, admin: sql.OpenDB(connector)}
		db.admin.SetMaxOpenConns(1)
		db.admin.SetMaxIdleConns(1)
		// Listed first, so that close drops what a failed copy left.
		l.dbs = append(l.dbs, db)
		if err := copyDatabase(ctx, admin, l.fp.template, name); err != nil {
			return fmt.Errorf("copy of the template for the least loop: %w", err)
		}
		// The template's statistics, as testdbd's copies have them.
		if _, err := db.admin.ExecContext(ctx, l.fp.statsSQLOf(name, l.fp.base)); err != nil {
			return fmt.Errorf("statistics of the least loop's %s: %w", name, err)
		}
		a, err := accounts.Create(ctx, admin, "tdbbench_", name, 0)
		if err != nil {
			return err
		}
		db.user, db.password = a.User, a.Password
	}
	quiet(ctx, l.pid)
	return nil
}

// quiet waits, up to 5 s, until server process pid has used less than one
// clock tick of CPU time in 200 ms: the work that copying the template
// leaves to the server's background threads (flushing, purging) is done
// before a run reads its CPU time.
func quiet(ctx context.Context, pid int) {
	deadline := time.Now().Add(5 * time.Second)
	last := cpuMs(pid)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		now := cpuMs(pid)
		if now-last < 1000/clockTicks {
			return
		}
		last = now
	}
}

// handOut is one loop of worker w (see leastLoop): the REST round trips'
// times are acquire and release, the recycle's is part of release.
func (l *leastLoop) handOut(ctx context.Context, strategy string, w int) (handOutTimes, error) {
	var h handOutTimes
	db := l.dbs[w]
	t0 := time.Now()
	if err := l.d.api.Health(ctx); err != nil {
		return h, err
	}
	t1 := time.Now()
	h.acquire = ms(t1.Sub(t0))
	c := mysql.NewConfig()
	c.User, c.Passwd, c.DBName, c.Net, c.Addr = db.user, db.password, db.name, "tcp", l.addr
	conn, err := openOne(c)
	if err != nil {
		return h, err
	}
	err = runTest(ctx, conn, strategy == vRollback)
	conn.Close()
	if err != nil {
		return h, err
	}
	t2 := time.Now()
	h.work = ms(t2.Sub(t1))
	if err := l.d.api.Health(ctx); err != nil {
		return h, err
	}
	if err := l.recycle(ctx, db, strategy, t0); err != nil {
		return h, err
	}
	h.release = ms(time.Since(t2))
	return h, nil
}

// recycle is the least loop's recycle of db after a hand-out that began
// at began, in one round trip (see recycleSQL); where the statistics of a
// table came out otherwise than the template's, they are put back in a
// second one, as are, for truncate, those TRUNCATE empties.
func (l *leastLoop) recycle(ctx context.Context, db *loopDB, strategy string, began time.Time) error {
	// The batch sets the new password first: from here on, whatever else
	// fails, the old one may no longer work.
	password := random.String(24, random.Alnum)
	db.password = password
	sets, err := queryResults(ctx, db.admin, l.recycleSQL(db, strategy, password, began))
	if err != nil {
		return fmt.Errorf("least loop's recycle of %s: %w", db.name, err)
	}
	if len(sets) != 4 {
		return fmt.Errorf("least loop's recycle of %s: %d results, want 4", db.name, len(sets))
	}
	if len(sets[0]) != len(l.fp.base) {
		return fmt.Errorf("least loop's recycle of %s: the read of the table state found %d tables, want %d", db.name, len(sets[0]), len(l.fp.base))
	}
	if len(sets[2]) > 0 {
		return fmt.Errorf("least loop's recycle of %s: the server holds %d prepared XA transactions, which the least loop does not "+
			"roll back (the standard test prepares none): something else on the server prepared them", db.name, len(sets[2]))
	}
	differ := l.fp.statsDiffer(sets[3])
	var put []*schema.Table
	for _, name := range differ {
		tbl := l.fp.table(name)
		if tbl == nil {
			return fmt.Errorf("least loop's recycle of %s: statistics of %s, a table the template lacks", db.name, name)
		}
		put = append(put, tbl)
	}
	if strategy == vTruncate {
		// Those TRUNCATE empties, in every recycle (the comparison left
		// them out).
		put = append(put, l.fp.dirty...)
	}
	if len(put) == 0 {
		return nil
	}
	if err := execRetrying(ctx, db.admin, l.fp.statsSQLOf(db.name, put)); err != nil {
		return fmt.Errorf("least loop's statistics of %s: %w", db.name, err)
	}
	if len(differ) > 0 {
		l.statsPutBack.Add(1)
	}
	return nil
}

// recycleSQL is the least loop's recycle of db in one round trip: the new
// password first, so that the old one stops working before the sessions
// are ended; the account's sessions ended; the reads of the database's
// table state, its procedures and events, and the server's prepared XA
// transactions; the floor's restore; and the read of the statistics
// figures of the tables whose statistics rows were written from a second
// before the hand-out began at began (a test's ANALYZE TABLE, or the
// recomputation the restore's ALTER TABLE … AUTO_INCREMENT makes MariaDB
// do), which the client compares with the template's (statsDiffer). For
// truncate that read leaves out the dirty tables, whose statistics the
// recycle puts back anyway. Its four results: the tables, the routines and
// events, the prepared XA transactions, and the statistics figures.
func (l *leastLoop) recycleSQL(db *loopDB, strategy, password string, began time.Time) string {
	name := strings.ReplaceAll(db.name, "'", "''")
	var skip []*schema.Table
	if strategy == vTruncate {
		skip = l.fp.dirty
	}
	return fmt.Sprintf("ALTER USER %s IDENTIFIED BY '%s'; KILL HARD CONNECTION USER '%s'; "+
		"SELECT TABLE_NAME, UPDATE_TIME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s'; "+
		"SELECT name, body FROM mysql.proc WHERE db = '%s' UNION ALL SELECT name, body FROM mysql.event WHERE db = '%s'; "+
		"XA RECOVER; %s; %s",
		accounts.Quote(db.user), password, db.user, name, name, name, l.restores[strategy],
		l.fp.recentStats(db.name, began.Add(-time.Second).Unix(), skip))
}

// queryResults runs batch q on one session of db and returns its result
// sets, each a slice of rows of the columns' text (empty for a query that
// found no row; none for a statement that returns no result set), retrying
// as execRetrying does.
func queryResults(ctx context.Context, db *sql.DB, q string) (sets [][][]string, err error) {
	err = retrying(ctx, func() error {
		sets, err = queryResultsOnce(ctx, db, q)
		return err
	})
	return sets, err
}

func queryResultsOnce(ctx context.Context, db *sql.DB, q string) ([][][]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sets [][][]string
	for {
		cols, err := rows.Columns()
		if err != nil {
			return nil, err
		}
		if len(cols) > 0 {
			set := [][]string{}
			vals := make([]any, len(cols))
			for i := range vals {
				vals[i] = new(sql.RawBytes)
			}
			for rows.Next() {
				if err := rows.Scan(vals...); err != nil {
					return nil, err
				}
				row := make([]string, len(vals))
				for i, v := range vals {
					row[i] = string(*v.(*sql.RawBytes))
				}
				set = append(set, row)
			}
			sets = append(sets, set)
		}
		if !rows.NextResultSet() {
			break
		}
	}
	return sets, rows.Err()
}

// execRetrying runs batch q on db, retrying (see retrying).
func execRetrying(ctx context.Context, db *sql.DB, q string) error {
	return retrying(ctx, func() error {
		_, err := db.ExecContext(ctx, q)
		return err
	})
}

// retrying runs a batch (fn) up to 5 times while the server fails it with
// a deadlock or lock wait, as testdbd's resets do: concurrent statistics
// statements of several databases write the same tables. Every batch of
// the loop can run again.
func retrying(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt == 4 || !strategies.Retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(1+attempt) * time.Millisecond)
	}
}

// close drops the copies and their accounts.
func (l *leastLoop) close(ctx context.Context) error {
	var errs []error
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, db := range l.dbs {
		// Each on its own, so that a failure of one does not keep the
		// other.
		if _, err := db.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+db.name+"`"); err != nil {
			errs = append(errs, fmt.Errorf("drop the least loop's %s: %w", db.name, err))
		}
		if db.user != "" {
			if err := accounts.Drop(ctx, db.admin, db.user); err != nil {
				errs = append(errs, fmt.Errorf("the least loop's %s: %w", db.name, err))
			}
		}
		db.admin.Close()
	}
	l.dbs = nil
	return errors.Join(errs...)
}
