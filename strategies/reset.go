package strategies

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/filename"
	"github.com/testdbd/testdbd/schema"
	"golang.org/x/sys/unix"
)

// Target is one worker database to reset and what is known about it.
type Target struct {
	DB *sql.DB // administrative pool of the server
	// StatusDB is a separate administrative pool for the detection reads,
	// shared by the resets on the server (see scan), so that resets holding
	// all of DB's connections do not wait on each other for one more.
	StatusDB *sql.DB
	Flavor   testdbd.Flavor // selects information_schema names and KILL syntax
	DDL      *DDLCounter    // the server's own-DDL counter
	Schema   *schema.Schema // the template's captured definition
	Database string         // the worker database
	// User is the lease's MySQL user; its sessions are ended first. Empty
	// means no user (e.g. revoked already).
	User string
	// Baseline is the state after the previous reset; nil makes the reset
	// check everything.
	Baseline *Baseline
	// Untrusted, when not empty, says why the detector's preconditions do
	// not hold (the reset then checks every table).
	Untrusted string
	// Strategy is the strategy asked for.
	Strategy testdbd.Strategy
	// Owner is the worker database's owner: the account named as the
	// definer of its views, triggers, routines and events (see
	// schema.Capture); empty when the template has none.
	Owner string
	// KeepAutoIncrement leaves AUTO_INCREMENT counters where the tests moved
	// them: no ALTER TABLE … AUTO_INCREMENT, and a table whose only
	// difference is its counter is not restored. The next reset without it
	// rewinds every counter that differs from the template's.
	KeepAutoIncrement bool
	// Dir is the worker database's directory as the daemon sees it, when
	// the server's datadir can be watched (instance.Member.DatabaseDir).
	// Schema changes are then detected per database: from the directory
	// (every DDL statement on a table, view or trigger creates, renames or
	// removes a file there) and the database's routines and events. Empty
	// means from the binary log (Binlog), or without one from the server's
	// statement counters, which also count other databases' schema changes.
	Dir string
	// Binlog reads the server's binary log (nil: the server keeps none).
	// The prepared XA transactions that wrote to the database are rolled
	// back once the lease's sessions have ended; and, without Dir, schema
	// changes are found from the statements the log holds in the database
	// (binlog.Log.SchemaChangedSince) instead of the server's statement
	// counters.
	Binlog *binlog.Log
}

// Baseline is a worker database's state right after a reset.
type Baseline struct {
	Tables    map[string]TableState
	ServerDDL int64 // the server's schema-changing statements so far
	own       mark  // the daemon's count when ServerDDL was read
	// Second is the server's clock (UNIX_TIMESTAMP()) when Tables was read.
	Second int64
	// AutoIncKept: the reset that took it left AUTO_INCREMENT counters
	// where the tests moved them (Target.KeepAutoIncrement).
	AutoIncKept bool
	// With Target.Dir: the database directory's identity and modification
	// time, and a digest of the database's routines and events.
	Dir      DirStamp
	Routines string
	// Binlog, with Target.Binlog and no Target.Dir: where the binary log
	// ended when the baseline's detection read it; the test's schema
	// changes come after.
	Binlog binlog.Pos
}

// DirStamp identifies a directory's contents: any file created, renamed
// or removed in it changes its modification time, and a directory made
// anew has a new inode.
type DirStamp struct {
	Ino   uint64
	Mtime unix.Timespec
}

// statDir reads dir's stamp.
func statDir(dir string) (DirStamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return DirStamp{}, err
	}
	return DirStamp{Ino: st.Ino, Mtime: st.Mtim}, nil
}

// TableState is what the detector reads for one table (see
// readTableStates).
type TableState struct {
	ID       int64 // MariaDB: InnoDB table id, which changes on TRUNCATE and table rebuilds
	Modified int64 // MariaDB: MODIFIED_COUNTER: rows written, rolled back or cascaded
	// Rows is, on MariaDB, InnoDB's running row count (NUM_ROWS): one up
	// for each row inserted, one down for each row deleted (see
	// appendedRows). 0 until the table's statistics are loaded.
	Rows    int64
	Updated int64 // MySQL: UPDATE_TIME in seconds (0: NULL, no write since the table was loaded)
	AutoInc int64 // next AUTO_INCREMENT value (0: none, or none yet on MySQL)
	// Unknown marks a table the last reset restored: its counters were not
	// read afterwards, so the next reset compares its content instead.
	Unknown bool
}

// moved reports whether a table's state differs from base's: its id,
// counters or AUTO_INCREMENT. Rows is left out: it changes only with
// Modified, except when InnoDB loads the table's statistics on opening it,
// which writes nothing.
func (s TableState) moved(base TableState) bool {
	s.Rows = base.Rows
	return s != base
}

// Reset brings t.Database back to the template by t.Strategy and returns the
// report and the new baseline. On error the database may be dirty; the
// caller must not hand it out (a later Reset with a nil baseline, or a
// re-clone, repairs it).
func Reset(ctx context.Context, t Target) (testdbd.ResetReport, *Baseline, error) {
	start := time.Now()
	r := testdbd.ResetReport{Database: t.Database, Requested: t.Strategy, Strategy: t.Strategy,
		TablesTotal: len(t.Schema.Tables), KeepAutoIncrement: t.KeepAutoIncrement}
	if r.Strategy == testdbd.StrategyUnspecified {
		r.Strategy, r.Requested = testdbd.StrategySnapshot, testdbd.StrategySnapshot
	}
	conn, err := t.DB.Conn(ctx)
	if err != nil {
		return r, nil, fmt.Errorf("reset %s: %w", t.Database, err)
	}
	defer conn.Close()
	rs := &resetter{t: t, conn: conn, r: &r}
	base, err := rs.run(ctx)
	r.Total = time.Since(start)
	if err != nil {
		// The session may have stopped mid-batch with its settings changed.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return r, nil, ExplainLockWait(ctx, t.DB, fmt.Errorf("reset %s: %w", t.Database, err))
	}
	return r, base, nil
}

// TakeBaseline reads a freshly cloned database's state through statusDB
// (see Target.StatusDB); dir and log are as Target.Dir and Target.Binlog.
func TakeBaseline(ctx context.Context, statusDB *sql.DB, flavor testdbd.Flavor, ddl *DDLCounter, database, dir string, log *binlog.Log) (*Baseline, error) {
	rs := &resetter{t: Target{StatusDB: statusDB, Flavor: flavor, Database: database, DDL: ddl, Dir: dir, Binlog: log}}
	obs, err := rs.observe(ctx)
	if err == nil && obs.dirErr != nil {
		err = obs.dirErr
	}
	if err != nil {
		return nil, fmt.Errorf("baseline of %s: %w", database, err)
	}
	return obs.baseline(), nil
}

type resetter struct {
	t    Target
	conn *sql.Conn
	r    *testdbd.ResetReport
	obs  *observation // what detection read
	// appended are the tables restored by deleting the rows a test added
	// (see appendedRows).
	appended map[string]bool
	// presums are the checksums, by "db.table", of the tables the last
	// reset restored, read while detection ran (see observe).
	presums map[string]int64
}

func (rs *resetter) run(ctx context.Context) (_ *Baseline, err error) {
	t := rs.t
	phase := time.Now()
	if t.User != "" {
		// Watching the directory, the account stays locked until the new
		// baseline is read: a session started by a client that did not wait
		// for the reset could otherwise change the schema between the
		// restore and that reading, unseen.
		lock := t.Dir != ""
		n, err := accounts.EndSessions(ctx, rs.conn, t.Flavor, t.User, lock)
		if lock {
			defer func() {
				if uerr := accounts.Unlock(context.WithoutCancel(ctx), rs.conn, t.User); uerr != nil && err == nil {
					err = uerr
				}
			}()
		}
		if err != nil {
			return nil, err
		}
		rs.r.SessionsEnded = n
	}
	if t.Binlog != nil && !brokenXA {
		// A test that left an XA transaction prepared left its changes,
		// uncommitted, with their row locks, for anyone to commit later.
		rolled, _, err := t.Binlog.RollBackXA(ctx, rs.conn, t.Database)
		if err != nil {
			return nil, fmt.Errorf("roll back the XA transactions left prepared in %s: %w", t.Database, err)
		}
		for _, id := range rolled {
			rs.r.XARolledBack = append(rs.r.XARolledBack, id.String())
		}
	}
	rs.r.Phases.Sessions = time.Since(phase)

	phase = time.Now()
	obs, err := rs.observe(ctx)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	rs.obs = obs
	why := rs.needsFullCheck(obs)
	rs.r.Phases.Detect = time.Since(phase)

	if why != "" {
		return rs.fullCheck(ctx, why)
	}
	changed, unsure := rs.candidates(obs)
	forced := rs.alwaysRestored()
	changed, unsure = without(changed, forced), without(unsure, forced)
	drifted := rs.drifted(obs, changed, unsure, forced)
	if t.Strategy == testdbd.StrategyRollback {
		phase = time.Now()
		quiet, err := rs.uncommitted(ctx, changed)
		if err != nil {
			return nil, err
		}
		drifted = append(drifted, rs.rewound(quiet)...)
		return rs.rollback(ctx, append(without(changed, quiet), unsure...), forced, drifted, obs, phase)
	}
	phase = time.Now()
	if rs.appended, err = rs.appendedRows(ctx, changed, obs); err != nil {
		return nil, err
	}
	// A big table changed otherwise is compared with the template first: a
	// checksum reads it in a few milliseconds where copying it back takes
	// tens, and a test that rolled its writes back left it as it was
	// (which uncommitted proves cheaper still where it can).
	restore := append([]*schema.Table(nil), forced...)
	var big []*schema.Table
	for _, tbl := range changed {
		if !rs.appended[tbl.Name] && tbl.Rows >= BigTableRows && !tbl.Fulltext {
			big = append(big, tbl)
		} else {
			restore = append(restore, tbl)
		}
	}
	quiet, err := rs.uncommitted(ctx, big)
	if err != nil {
		return nil, err
	}
	big, drifted = without(big, quiet), append(drifted, rs.rewound(quiet)...)
	if len(unsure)+len(big) > 0 {
		sums, err := rs.checksums(ctx, append(append([]*schema.Table(nil), unsure...), big...))
		if err != nil {
			return nil, err
		}
		for _, tbl := range unsure {
			if sums[t.Database+"."+tbl.Name] != tbl.Checksum || (!t.KeepAutoIncrement && autoIncDiffers(obs.tables[tbl.Name], tbl)) {
				restore = append(restore, tbl)
			}
		}
		differ, rewind := rs.compare(sums, big, obs)
		restore, drifted = append(restore, differ...), append(drifted, rewind...)
	}
	rs.r.Phases.Verify = time.Since(phase)
	if len(restore)+len(drifted) == 0 && len(obs.statsTouched) == 0 {
		return rs.baselineAfter(nil), nil
	}
	return rs.restoreAndRewind(ctx, restore, drifted, obs, rs.r.Strategy)
}

// appendedRows returns the big tables of changed (BigTableRows) that the
// test only added rows to, all above the template's (schema.AppendedKey):
// those are restored by deleting the added rows (delta
// restore) instead of copying the whole table back.
//
// InnoDB's counters say so exactly (MariaDB): since the baseline, NUM_ROWS
// went up by n and MODIFIED_COUNTER by n too. Every row inserted moves both
// by one; an update moves the second only, a delete moves the first down,
// and a rolled-back change moves the second by two; so the two moving by
// the same n > 0 means n inserts and nothing else. The rows whose key is
// above the template's are then counted (a range of the primary key): n of
// them means every added row is there.
func (rs *resetter) appendedRows(ctx context.Context, changed []*schema.Table, obs *observation) (map[string]bool, error) {
	if rs.t.Strategy == testdbd.StrategyRollback || rs.t.Baseline == nil {
		return nil, nil
	}
	added := map[string]bool{}
	var parts, names []string
	var want []int64
	for _, tbl := range changed {
		col, from, ok := tbl.AppendedKey()
		base, cur := rs.t.Baseline.Tables[tbl.Name], obs.tables[tbl.Name]
		n := cur.Rows - base.Rows
		// NUM_ROWS is 0 until InnoDB loads a table's statistics, when the
		// table is first opened: a baseline read before that says nothing.
		if !ok || tbl.Rows < BigTableRows || tbl.Fulltext || base.Unknown || base.Rows == 0 || obs.statsTouched[tbl.Name] || n <= 0 ||
			(cur.Modified-base.Modified != n && !brokenDelta) {
			continue
		}
		added[tbl.Name], want = true, append(want, n)
		parts = append(parts, fmt.Sprintf("SELECT %d, COUNT(*) FROM %s.%s WHERE %s >= %d", len(names),
			schema.Quote(rs.t.Database), schema.Quote(tbl.Name), schema.Quote(col), from))
		names = append(names, tbl.Name)
	}
	if len(parts) == 0 || brokenDelta {
		return added, nil
	}
	err := schema.EachRow(ctx, rs.conn, strings.Join(parts, " UNION ALL "), nil, func(rows *sql.Rows) error {
		var i int
		var n int64
		if err := rows.Scan(&i, &n); err != nil {
			return err
		}
		if want[i] != n {
			delete(added, names[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count added rows: %w", err)
	}
	return added, nil
}

// recount reads again, after a restore, the counters of the big tables it
// restored or rewound (BigTableRows), so that the next reset need not
// checksum them (the other restored tables stay unknown: a checksum of a
// small table costs less than the read). Only while the lease's account is
// locked (Target.Dir): nothing else writes in between.
func (rs *resetter) recount(ctx context.Context, base *Baseline, restored []*schema.Table) error {
	var big []*schema.Table
	for _, tbl := range restored {
		if tbl.Rows >= BigTableRows {
			big = append(big, tbl)
		}
	}
	if len(big) == 0 {
		return nil
	}
	if _, err := rs.conn.ExecContext(ctx, schema.OpenSQL(rs.t.Database, big)); err != nil {
		return fmt.Errorf("open the restored tables: %w", err)
	}
	tables, _, err := readTableStates(ctx, rs.conn, rs.t.Flavor, map[string]bool{rs.t.Database: true})
	if err != nil {
		return fmt.Errorf("read counters after the restore: %w", err)
	}
	for _, tbl := range big {
		if st, ok := tables[rs.t.Database][tbl.Name]; ok {
			base.Tables[tbl.Name] = st
		}
	}
	return nil
}

// needsFullCheck says why the fast path cannot be trusted, or "".
func (rs *resetter) needsFullCheck(obs *observation) string {
	t := rs.t
	switch {
	case t.Untrusted != "":
		return "detector preconditions not met: " + t.Untrusted
	case t.Baseline == nil:
		return "no baseline for this database"
	case t.Dir != "":
		if why := rs.schemaChangedHere(obs); why != "" {
			return why
		}
	case obs.fromLog:
		if obs.schemaStmt != "" && !brokenSchemaWatch {
			return "a schema-changing statement ran in this database since the last reset: " + obs.schemaStmt
		}
	case obs.own.unknown != t.Baseline.own.unknown || obs.own.unknown%2 == 1 || t.Baseline.own.unknown%2 == 1:
		return "a template was built on this server since the last reset"
	case obs.own.failed != t.Baseline.own.failed:
		return "a batch of schema changes by testdbd failed on this server since the last reset"
	}
	if foreign := (obs.serverDDL - t.Baseline.ServerDDL) - (obs.own.own - t.Baseline.own.own); t.Dir == "" && !obs.fromLog && foreign > 0 {
		return fmt.Sprintf("%d schema-changing statements ran on the server since the last reset that testdbd did not run", foreign)
	}
	for _, tbl := range t.Schema.Tables {
		cur, ok := obs.tables[tbl.Name]
		if !ok {
			return "table " + tbl.Name + " is gone or was evicted from InnoDB's cache"
		}
		// A table the last reset restored may have a new id (TRUNCATE);
		// a test's TRUNCATE or ALTER of it shows in the DDL counters.
		if base, ok := t.Baseline.Tables[tbl.Name]; !ok || (!base.Unknown && base.ID != cur.ID) {
			return "table " + tbl.Name + " was rebuilt (TRUNCATE or ALTER)"
		}
	}
	if len(obs.tables) != len(t.Schema.Tables) {
		for name := range obs.tables {
			if _, ok := t.Schema.Table(name); !ok {
				return "table " + name + " was created"
			}
		}
	}
	return ""
}

// schemaChangedHere says why the database's own schema changed since the
// baseline, watching its directory and its routines (Target.Dir), or "".
func (rs *resetter) schemaChangedHere(obs *observation) string {
	base := rs.t.Baseline
	switch {
	case brokenSchemaWatch:
		return ""
	case obs.dirErr != nil:
		return "the database's directory could not be read (" + obs.dirErr.Error() + "): it was dropped?"
	case obs.dir.Ino != base.Dir.Ino:
		return "the database was dropped and created again"
	case obs.dir != base.Dir:
		return "a table, view or trigger of this database was created, altered, renamed, truncated or dropped since the last reset"
	case obs.routines != base.Routines:
		return "a procedure, function or event of this database was created, altered or dropped since the last reset"
	}
	return ""
}

// candidates splits the tables that may differ from the template: changed
// ones, whose counters moved since the baseline, and unsure ones, restored
// by the previous reset (their counters after a restore are not read, to
// save a query; their content is checked instead).
//
// UPDATE_TIME (MySQL) counts in whole seconds, and a commit after the
// baseline may be stamped with the second before the baseline's (see
// stampLag): a table whose UPDATE_TIME at the baseline was that second or
// the baseline's own may have been written again without its UPDATE_TIME
// moving, so such a table is unsure too. Writes in later seconds move it.
func (rs *resetter) candidates(obs *observation) (changed, unsure []*schema.Table) {
	for _, tbl := range rs.t.Schema.Tables {
		base := rs.t.Baseline.Tables[tbl.Name]
		switch {
		case base.Unknown, obs.statsTouched[tbl.Name]:
			// ANALYZE TABLE also resets the table's MODIFIED_COUNTER: a
			// table whose statistics moved is checked by its content.
			unsure = append(unsure, tbl)
		case brokenDetector != nil && brokenDetector(tbl.Name):
		case obs.tables[tbl.Name].moved(base):
			changed = append(changed, tbl)
		case base.Updated != 0 && base.Updated >= rs.t.Baseline.Second-stampLag:
			unsure = append(unsure, tbl)
		}
	}
	return changed, unsure
}

// alwaysRestored returns the tables restored at every reset, whatever
// detection read: on MySQL, the tables with a FULLTEXT index, whose index
// changes with writes that leave no other trace (a DELETE rolled back
// changes the relevance of every document, with the rows, UPDATE_TIME and
// AUTO_INCREMENT as they were). MariaDB's counters see those writes.
func (rs *resetter) alwaysRestored() []*schema.Table {
	if rs.t.Flavor != testdbd.MySQL {
		return nil
	}
	var out []*schema.Table
	for _, tbl := range rs.t.Schema.Tables {
		if tbl.Fulltext {
			out = append(out, tbl)
		}
	}
	return out
}

// drifted returns, for a reset that rewinds AUTO_INCREMENT after one that
// kept it, the tables whose counter is not the template's and that are
// not otherwise candidates (those are restored or checked with their
// counter).
func (rs *resetter) drifted(obs *observation, lists ...[]*schema.Table) []*schema.Table {
	if rs.t.KeepAutoIncrement || rs.t.Baseline == nil || !rs.t.Baseline.AutoIncKept {
		return nil
	}
	var others []*schema.Table
	for _, l := range lists {
		others = append(others, l...)
	}
	var out []*schema.Table
	for _, tbl := range without(rs.t.Schema.Tables, others) {
		if tbl.AutoIncrement != 0 && autoIncDiffers(obs.tables[tbl.Name], tbl) {
			out = append(out, tbl)
		}
	}
	return out
}

// without returns tables less those in drop.
func without(tables, drop []*schema.Table) []*schema.Table {
	if len(drop) == 0 {
		return tables
	}
	var out []*schema.Table
	for _, t := range tables {
		if !slices.Contains(drop, t) {
			out = append(out, t)
		}
	}
	return out
}

// autoIncDiffers reports whether a table's next AUTO_INCREMENT value as
// detection read it is not the template's. MySQL shows none (0) for a table
// no row was ever written to, whose next value is 1, the template's.
func autoIncDiffers(st TableState, tbl *schema.Table) bool {
	return st.AutoInc != tbl.AutoIncrement && !(st.AutoInc == 0 && tbl.AutoIncrement == 1 && tbl.AutoIncrementColumn != "")
}

// compare splits checksummed tables: those whose rows differ from the
// template's (sums by "db.table"), and those whose rows are the template's
// but whose AUTO_INCREMENT is not (unless the lease keeps it).
func (rs *resetter) compare(sums map[string]int64, tables []*schema.Table, obs *observation) (differ, rewind []*schema.Table) {
	for _, tbl := range tables {
		if sums[rs.t.Database+"."+tbl.Name] != tbl.Checksum {
			differ = append(differ, tbl)
		} else if !rs.t.KeepAutoIncrement && autoIncDiffers(obs.tables[tbl.Name], tbl) {
			rewind = append(rewind, tbl)
		}
	}
	return differ, rewind
}

// checksums returns CHECKSUM TABLE of tables by "db.table", taking those
// read during detection (presums) from there.
func (rs *resetter) checksums(ctx context.Context, tables []*schema.Table) (map[string]int64, error) {
	sums := make(map[string]int64, len(tables))
	var names []string
	for _, tbl := range tables {
		key := rs.t.Database + "." + tbl.Name
		if sum, ok := rs.presums[key]; ok {
			sums[key] = sum
		} else {
			names = append(names, schema.Quote(rs.t.Database)+"."+schema.Quote(tbl.Name))
		}
	}
	if len(names) == 0 {
		return sums, nil
	}
	read, err := schema.Checksums(ctx, rs.conn, "CHECKSUM TABLE "+strings.Join(names, ", "))
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	maps.Copy(sums, read)
	return sums, nil
}

// baselineAfter is the baseline after restoring tables: the counters
// detection read, with the restored tables marked unsure. Sessions were
// ended before detection, so nothing else changed since. A restore may
// have run DDL (TRUNCATE, ALTER TABLE … AUTO_INCREMENT, triggers), so a
// watched directory is read again.
func (rs *resetter) baselineAfter(restored []*schema.Table) *Baseline {
	b := rs.obs.baseline()
	b.AutoIncKept = rs.t.KeepAutoIncrement
	if rs.t.Dir != "" && len(restored) > 0 {
		b.Dir, _ = statDir(rs.t.Dir) // unreadable: a zero stamp makes the next reset check everything
	}
	for _, tbl := range restored {
		st := b.Tables[tbl.Name]
		st.Unknown = true
		b.Tables[tbl.Name] = st
	}
	return b
}

// rollback: the client rolled back (or its sessions were just ended, which
// rolls back). Check with CHECKSUM TABLE that nothing was committed to the
// candidate tables, restore the ones that differ, and rewind the
// AUTO_INCREMENT counters that moved.
func (rs *resetter) rollback(ctx context.Context, candidates, forced, drifted []*schema.Table, obs *observation, phase time.Time) (*Baseline, error) {
	if len(candidates) == 0 {
		rs.r.Phases.Verify = time.Since(phase)
		if len(obs.statsTouched) > 0 || len(forced)+len(drifted) > 0 {
			return rs.restoreAndRewind(ctx, forced, drifted, obs, testdbd.StrategySnapshot)
		}
		return rs.baselineAfter(nil), nil
	}
	sums, err := rs.checksums(ctx, candidates)
	if err != nil {
		return nil, err
	}
	committed, rewind := rs.compare(sums, candidates, obs)
	rs.r.Phases.Verify = time.Since(phase)
	if len(committed) > 0 {
		rs.r.Strategy = testdbd.StrategySnapshot
		rs.r.FallbackReason = "writes were committed to " + tableNames(committed) +
			" (an explicit COMMIT, an implicit commit by DDL, or a second connection); restored them from the template"
	}
	rewind = append(rewind, drifted...)
	if len(committed)+len(rewind)+len(forced) == 0 && len(obs.statsTouched) == 0 {
		return rs.baselineAfter(nil), nil
	}
	return rs.restoreAndRewind(ctx, append(committed, forced...), rewind, obs, testdbd.StrategySnapshot)
}

// uncommitted returns the tables of changed that no transaction committed
// to since the baseline was read: their counters moved, but every change
// was rolled back, so their rows are the template's (only their
// AUTO_INCREMENT may have moved). Such a table needs neither a checksum nor
// a restore.
//
// MariaDB sets a table's UPDATE_TIME, when a transaction that wrote to it
// commits (cascades included), to the second that transaction started; a
// rollback leaves it, and so does ALTER TABLE … AUTO_INCREMENT. With the
// lease's account locked from before the baseline was read until after it
// (Target.Dir), every transaction a test ran since started at or after the
// baseline's second (Baseline.Second, the server's clock when the counters
// were read), and was stamped with that second or, by the coarse clock
// InnoDB stamps with, the one before (stampLag): an UPDATE_TIME before
// those two proves that none of them committed to the table. One in
// either proves nothing (the resolution is a second), nor does NULL (the
// table was loaded into InnoDB's cache since, which forgets the time). Only tables whose counters were read
// at the baseline qualify (not one the last reset restored), not partitioned
// ones (the partitions' times add up), and only on MariaDB: MySQL's
// UPDATE_TIME is the time of the commit and already its detection signal.
func (rs *resetter) uncommitted(ctx context.Context, changed []*schema.Table) ([]*schema.Table, error) {
	base := rs.t.Baseline
	if rs.t.Flavor == testdbd.MySQL || rs.t.Dir == "" || base == nil || base.Second == 0 {
		return nil, nil
	}
	var names []string
	for _, tbl := range changed {
		if !base.Tables[tbl.Name].Unknown && !strings.Contains(tbl.Create, "PARTITION BY") {
			names = append(names, "'"+strings.ReplaceAll(tbl.Name, "'", "''")+"'")
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	// In UTC, where every time converts back to one UNIX time.
	quiet := map[string]bool{}
	err := schema.EachRow(ctx, rs.conn, "SET STATEMENT time_zone = '+00:00' FOR SELECT TABLE_NAME, COALESCE(UNIX_TIMESTAMP(UPDATE_TIME), 0) "+
		"FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+strings.ReplaceAll(rs.t.Database, "'", "''")+"' AND TABLE_NAME IN ("+
		strings.Join(names, ",")+")", nil, func(rows *sql.Rows) error {
		var name string
		var updated int64
		if err := rows.Scan(&name, &updated); err != nil {
			return err
		}
		if updated != 0 && (updated < base.Second-stampLag || (brokenUpdateTime && updated <= base.Second)) {
			quiet[name] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the tables' last commit: %w", err)
	}
	var out []*schema.Table
	for _, tbl := range changed {
		if quiet[tbl.Name] {
			out = append(out, tbl)
		}
	}
	uncommittedTables.Add(int64(len(out)))
	return out, nil
}

// stampLag is how many seconds an UPDATE_TIME that InnoDB stamps after a
// reading of UNIX_TIMESTAMP() can be behind that reading. InnoDB takes the
// time for it from time() (MariaDB: when the transaction started; MySQL:
// when it commits), the kernel's coarse clock, which is updated once a
// timer tick and so lags the clock UNIX_TIMESTAMP() reads by up to a tick
// (milliseconds): a transaction that starts just after a reading that
// returned second S can be stamped S-1.
const stampLag = 1

// uncommittedTables counts the tables uncommitted found, for tests to show
// that their workloads take that path.
var uncommittedTables atomic.Int64

// rewound returns the tables of quiet (see uncommitted) whose AUTO_INCREMENT
// a rolled-back insert moved, which the reset sets back unless the lease
// keeps it.
func (rs *resetter) rewound(quiet []*schema.Table) []*schema.Table {
	var out []*schema.Table
	for _, tbl := range quiet {
		if !rs.t.KeepAutoIncrement && autoIncDiffers(rs.obs.tables[tbl.Name], tbl) {
			out = append(out, tbl)
		}
	}
	return out
}

// BigTableRows is the template row count from which a table is restored
// by TRUNCATE whatever the strategy (see restoreAndRewind), unless the test
// only added rows to it (see appendedRows).
const BigTableRows = schema.BigTableRows

// restoreAndRewind restores tables (truncate: TRUNCATE + copy; snapshot:
// DELETE + copy) and sets AUTO_INCREMENT where it is not the template's,
// with the restored tables' triggers dropped around the copy so that they
// do not fire, all in one batch that ends with the new baseline.
func (rs *resetter) restoreAndRewind(ctx context.Context, restore, rewind []*schema.Table, obs *observation, how testdbd.Strategy) (*Baseline, error) {
	phase := time.Now()
	s, db := rs.t.Schema, schema.Quote(rs.t.Database)
	var b strings.Builder
	ddl := 0
	b.WriteString(schema.CopySession + ";\n")
	// Tables whose statistics go back to the template's: those a test
	// analyzed or truncated, and those this restore truncates (TRUNCATE
	// empties them). TRUNCATE also gives a FULLTEXT index back its template
	// state (a DELETE leaves the deleted rows' words in it, which changes
	// relevance).
	//
	// Big tables are restored by TRUNCATE too: a DELETE leaves their old
	// rows delete-marked in every index until InnoDB purges them, and the
	// optimizer's row estimates count those, so the same query would be
	// planned unlike on the template for a while after the reset.
	truncate := func(tbl *schema.Table) bool {
		return !rs.appended[tbl.Name] && (how == testdbd.StrategyTruncate || tbl.Fulltext || tbl.Rows >= BigTableRows)
	}
	restats := map[string]bool{}
	for name := range obs.statsTouched {
		restats[name] = true
	}
	for _, tbl := range restore {
		if truncate(tbl) {
			restats[tbl.Name] = true
		}
	}
	// On MariaDB, ALTER TABLE … AUTO_INCREMENT makes InnoDB recompute the
	// table's statistics from its pages, which in a copy of a table may be
	// laid out unlike the template's: settleStats checks them afterwards.
	// An empty table's come out as the template's as a rule, but stamped
	// with the time of the recomputation: settleStats marks them as copied
	// again, or the next reset would find them moved and copy them back.
	// MySQL changes the counter alone and keeps the statistics
	// (TestStatisticsStayCopied shows both).
	rewinds := func(tbl *schema.Table) bool {
		if rs.t.KeepAutoIncrement {
			return false
		}
		if truncate(tbl) {
			return tbl.AutoIncrement != 0 && tbl.AutoIncrement != tbl.NaturalAutoIncrement
		}
		return tbl.AutoIncrement != 0 && autoIncDiffers(obs.tables[tbl.Name], tbl)
	}
	var recomputed []*schema.Table
	for _, tbl := range append(append([]*schema.Table(nil), restore...), rewind...) {
		if rs.t.Flavor != testdbd.MySQL && !restats[tbl.Name] && (rewinds(tbl) || slices.Contains(rewind, tbl)) {
			recomputed = append(recomputed, tbl)
		}
	}
	// Triggers are dropped around the copy, so that they do not fire, and
	// around the renames that load statistics, which would rewrite them.
	var triggered []*schema.Table
	for _, tbl := range s.Tables {
		if tbl.HasTriggers && (restats[tbl.Name] || slices.Contains(restore, tbl)) {
			triggered = append(triggered, tbl)
		}
	}
	triggers := s.TriggersOf(triggered)
	for _, tr := range triggers {
		fmt.Fprintf(&b, "DROP TRIGGER %s.%s;\n", db, schema.Quote(tr.Name))
		ddl++
	}
	for _, tbl := range restore {
		name := db + "." + schema.Quote(tbl.Name)
		ai := rewinds(tbl)
		delta := rs.appended[tbl.Name]
		switch {
		case delta:
			col, from, _ := tbl.AppendedKey()
			fmt.Fprintf(&b, "DELETE FROM %s WHERE %s >= %d;\n", name, schema.Quote(col), from)
			rs.r.TablesDelta = append(rs.r.TablesDelta, tbl.Name)
		case truncate(tbl):
			fmt.Fprintf(&b, "TRUNCATE TABLE %s;\n", name)
			ddl++
		default:
			fmt.Fprintf(&b, "DELETE FROM %s;\n", name)
		}
		if tbl.Rows > 0 && !delta {
			b.WriteString(s.CopyRowsSQL(tbl, rs.t.Database))
			b.WriteString(";\n")
		}
		if ai {
			fmt.Fprintf(&b, "ALTER TABLE %s AUTO_INCREMENT = %d;\n", name, tbl.AutoIncrement)
			ddl++
		}
		rs.r.TablesReset = append(rs.r.TablesReset, tbl.Name)
	}
	for _, tbl := range rewind {
		fmt.Fprintf(&b, "ALTER TABLE %s.%s AUTO_INCREMENT = %d;\n", db, schema.Quote(tbl.Name), tbl.AutoIncrement)
		ddl++
		rs.r.TablesReset = append(rs.r.TablesReset, tbl.Name)
	}
	var statsTables []*schema.Table
	for _, tbl := range s.Tables {
		if restats[tbl.Name] {
			statsTables = append(statsTables, tbl)
		}
	}
	// The triggers come back after the statistics' renames (which would
	// rewrite them). The statistics live in tables every database on the
	// server shares, where concurrent resets can deadlock: that part runs
	// in a batch of its own, retried, in READ COMMITTED (no gap locks).
	var tail strings.Builder
	tailDDL := 0
	next := &b
	if len(statsTables) > 0 {
		b.WriteString(schema.ResetSession)
		next = &tail
		stats, statsDDL := s.StatsSQL(rs.t.Database, statsTables)
		tail.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n")
		tail.WriteString(stats)
		tail.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\n")
		tailDDL += statsDDL
	}
	if len(triggers) > 0 {
		fmt.Fprintf(next, "USE %s;\n", db)
		if err := schema.WriteObjects(next, triggers, rs.t.Owner); err != nil {
			return nil, err
		}
		if next == &b {
			ddl += len(triggers)
		} else {
			tailDDL += len(triggers)
		}
	}
	next.WriteString(schema.ResetSession)
	err := rs.t.DDL.Exec(ctx, rs.conn, ddl, b.String())
	if err == nil && tail.Len() > 0 {
		err = rs.execRetrying(ctx, tailDDL, tail.String())
	}
	if err == nil && len(recomputed) > 0 {
		var renamed []*schema.Table
		renamed, err = rs.settleStats(ctx, recomputed)
		statsTables = append(statsTables, renamed...)
	}
	rs.r.Phases.Restore = time.Since(phase)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", tableNames(restore), err)
	}
	// Renaming a table for its statistics resets its counters: treat it as
	// restored.
	base := rs.baselineAfter(append(append(restore, rewind...), statsTables...))
	if rs.t.Dir == "" {
		return base, nil
	}
	return base, rs.recount(ctx, base, append(append([]*schema.Table(nil), restore...), rewind...))
}

// settleStats follows an ALTER TABLE … AUTO_INCREMENT of tables that hold
// rows, which made InnoDB recompute their statistics: where the figures
// came out as the template's, the rows get their copied mark back
// (schema.StatsSentinel) and nothing else is needed, in one round trip
// that also names the others; where they differ, the template's go back
// (schema.StatsSQL, which renames the table: its triggers are dropped and
// re-created around it). It returns the tables renamed.
func (rs *resetter) settleStats(ctx context.Context, tables []*schema.Table) ([]*schema.Table, error) {
	s, db := rs.t.Schema, schema.Quote(rs.t.Database)
	var names sql.NullString
	settle := "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n" + s.StatsSettleSQL(rs.t.Database, tables) +
		";\nSET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
	err := retrying(ctx, func() error { return queryOne(ctx, rs.conn, settle, &names) })
	if err != nil {
		return nil, fmt.Errorf("compare statistics: %w", err)
	}
	differs := map[string]bool{}
	for _, name := range strings.Split(names.String, ",") {
		if decoded, err := filename.Decode(name); err == nil {
			name = decoded
		}
		differs[name] = true
	}
	var differ []*schema.Table
	for _, tbl := range tables {
		if differs[tbl.Name] {
			differ = append(differ, tbl)
		}
	}
	if len(differ) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n")
	triggers := s.TriggersOf(differ)
	for _, tr := range triggers {
		fmt.Fprintf(&b, "DROP TRIGGER %s.%s;\n", db, schema.Quote(tr.Name))
	}
	stats, statsDDL := s.StatsSQL(rs.t.Database, differ)
	b.WriteString(stats)
	ddl := statsDDL + 2*len(triggers)
	if len(triggers) > 0 {
		fmt.Fprintf(&b, "USE %s;\n", db)
		if err := schema.WriteObjects(&b, triggers, rs.t.Owner); err != nil {
			return nil, err
		}
	}
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\n")
	b.WriteString(schema.ResetSession)
	return differ, rs.execRetrying(ctx, ddl, b.String())
}

// queryOne runs q, a batch of which one statement returns one row of
// len(dest) columns, on conn, and scans that row into dest.
func queryOne(ctx context.Context, conn *sql.Conn, q string, dest ...any) error {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	found := false
	for {
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			found = true
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !found {
		return errors.New("the batch returned no row")
	}
	return nil
}

// retrying runs fn, which writes the statistics tables every database on
// the server shares, where concurrent resets can deadlock: up to 5 times
// while the server resolves it by failing fn.
func retrying(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt == 4 || !Retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(1+attempt) * time.Millisecond)
	}
}

// execRetrying runs a batch that writes the statistics tables every
// database on the server shares, where concurrent resets can deadlock:
// up to 5 times while the server resolves it by failing the batch.
func (rs *resetter) execRetrying(ctx context.Context, ddl int, q string) error {
	return retrying(ctx, func() error { return rs.t.DDL.Exec(ctx, rs.conn, ddl, q) })
}

// fullCheck compares every object and every table of the worker with the
// template. A schema difference re-creates the database from the template;
// otherwise the tables whose content or AUTO_INCREMENT differ are restored.
func (rs *resetter) fullCheck(ctx context.Context, why string) (*Baseline, error) {
	phase := time.Now()
	rs.r.FallbackReason = why + "; checked every table"
	worker, err := schema.CaptureConn(ctx, rs.conn, rs.t.Database, rs.t.Owner)
	var changes []string
	if err != nil {
		changes = []string{"database " + rs.t.Database + " could not be read (" + err.Error() + ")"}
	} else {
		changes = schema.Diff(rs.t.Schema, worker)
	}
	rs.r.Phases.Verify = time.Since(phase)
	var recreated []*schema.Table
	if len(changes) > 0 {
		// Name what the test did (schema_changes has the whole list).
		found := changes
		if len(found) > 3 {
			found = append(found[:3:3], fmt.Sprintf("%d more", len(changes)-3))
		}
		rs.r.FallbackReason += " (" + strings.Join(found, "; ") + ")"
		if err != nil {
			return rs.reclone(ctx, changes)
		}
		changed, extra, ok := schema.TableChanges(rs.t.Schema, worker)
		if !ok {
			return rs.reclone(ctx, changes)
		}
		if err := rs.recreateTables(ctx, changes, changed, extra); err != nil {
			return nil, err
		}
		recreated = changed
	}
	forced := rs.alwaysRestored()
	restore := append(append([]*schema.Table(nil), forced...), recreated...)
	for _, tbl := range without(rs.t.Schema.Tables, restore) {
		w, _ := worker.Table(tbl.Name)
		if w.Checksum != tbl.Checksum || (!rs.t.KeepAutoIncrement && w.AutoIncrement != tbl.AutoIncrement) || w.Rows != tbl.Rows {
			restore = append(restore, tbl)
		}
	}
	// Snapshot-style restore brings AUTO_INCREMENT back whatever the detected
	// counter was; pretend every counter moved. A re-created table has an
	// empty table's statistics: the template's go back.
	obs := observation{tables: map[string]TableState{}, statsTouched: map[string]bool{}}
	for name := range rs.obs.statsTouched {
		obs.statsTouched[name] = true
	}
	for _, tbl := range recreated {
		obs.statsTouched[tbl.Name] = true
	}
	for _, tbl := range restore {
		obs.tables[tbl.Name] = TableState{AutoInc: -1}
	}
	how := rs.r.Strategy
	if how == testdbd.StrategyRollback {
		how = testdbd.StrategySnapshot
	}
	return rs.restoreAndRewind(ctx, restore, nil, &obs, how)
}

// recreateTables repairs a schema in which only base tables differ from the
// template (schema.TableChanges): it drops the tables the test created and
// re-creates, empty, with their triggers, those it altered or dropped;
// fullCheck then copies their rows back with the other tables that differ.
// Foreign keys are not checked meanwhile, so a table others refer to can be
// dropped and created again, and the references hold.
func (rs *resetter) recreateTables(ctx context.Context, changes []string, changed []*schema.Table, extra []string) error {
	phase := time.Now()
	defer func() { rs.r.Phases.Schema = time.Since(phase) }()
	rs.r.SchemaChanges = changes
	rs.r.FallbackReason += "; only tables differ from the template, so those were re-created from it"
	if rs.r.Strategy == testdbd.StrategyRollback {
		rs.r.Strategy = testdbd.StrategySnapshot
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s;\nUSE %s;\n", schema.CreateSession, schema.Quote(rs.t.Database))
	ddl := 0
	for _, name := range extra {
		fmt.Fprintf(&b, "DROP TABLE %s;\n", schema.Quote(name))
		ddl++
	}
	for _, tbl := range changed {
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS %s;\n%s;\n", schema.Quote(tbl.Name), tbl.Create)
		ddl += 2
	}
	triggers := rs.t.Schema.TriggersOf(changed)
	if err := schema.WriteObjects(&b, triggers, rs.t.Owner); err != nil {
		return err
	}
	ddl += len(triggers)
	b.WriteString(schema.ResetSession)
	if err := rs.t.DDL.Exec(ctx, rs.conn, ddl, b.String()); err != nil {
		return fmt.Errorf("re-create %s: %w", tableNames(changed), err)
	}
	return nil
}

// reclone drops the worker database and creates it again from the template.
func (rs *resetter) reclone(ctx context.Context, changes []string) (*Baseline, error) {
	phase := time.Now()
	rs.r.SchemaChanges = changes
	rs.r.FallbackReason += "; the schema differs from the template, so the database was re-created from it"
	if rs.r.Strategy == testdbd.StrategyRollback {
		rs.r.Strategy = testdbd.StrategySnapshot
	}
	q, ddl, err := rs.t.Schema.CloneSQL(rs.t.Database, rs.t.Owner)
	if err != nil {
		return nil, err
	}
	q = "DROP DATABASE IF EXISTS " + schema.Quote(rs.t.Database) + ";\n" + q
	if err := rs.t.DDL.Exec(ctx, rs.conn, ddl+1, q); err != nil {
		return nil, fmt.Errorf("re-create %s: %w", rs.t.Database, err)
	}
	base, err := rs.rebaseline(ctx)
	rs.r.Phases.Schema = time.Since(phase)
	if err != nil {
		return nil, fmt.Errorf("baseline after re-creating %s: %w", rs.t.Database, err)
	}
	for _, tbl := range rs.t.Schema.Tables {
		rs.r.TablesReset = append(rs.r.TablesReset, tbl.Name)
	}
	return base, nil
}

// brokenSchemaWatch, set only by tests, makes schemaChangedHere see no
// change, to show that the property test catches a blind watch.
var brokenSchemaWatch bool

// brokenXA, set only by tests, makes resets leave the XA transactions a
// test left prepared alone, to show that the property test catches them.
var brokenXA bool

// brokenDelta, set only by tests, makes appendedRows trust NUM_ROWS alone,
// to show that the property test catches a delta restore that is not exact.
var brokenDelta bool

// brokenUpdateTime, set only by tests, makes uncommitted trust an
// UPDATE_TIME in the baseline's own second or the one before (stampLag), to
// show that the property test catches the one-second resolution ignored.
var brokenUpdateTime bool

// brokenDetector, set only by tests, makes the detector ignore the tables
// it returns true for, to show that the property test catches a detector
// that misses changes.
var brokenDetector func(table string) bool

// observation is what one detection query read.
type observation struct {
	tables    map[string]TableState
	second    int64 // the server's clock when tables was read
	serverDDL int64
	own       mark
	routines  string // with Target.Dir: the digest of routines and events
	// statsTouched are the tables whose optimizer statistics are no longer
	// the template's (ANALYZE, TRUNCATE by the test).
	statsTouched map[string]bool
	dir          DirStamp // with Target.Dir: the directory's stamp
	dirErr       error
	// fromLog: schema changes were looked for in the binary log (Target.Binlog
	// without Target.Dir); schemaStmt is the last one it holds in the
	// database since the baseline, binlogEnd where the log ended.
	fromLog    bool
	schemaStmt string
	binlogEnd  binlog.Pos
}

// observe reads the worker's table states and the server's DDL counters,
// with no schema-changing batch of the daemon in flight on the server. The
// read is shared with the other resets on the server that wait for one at
// the same moment (see scan).
func (rs *resetter) observe(ctx context.Context) (*observation, error) {
	t := rs.t
	fromLog := t.Dir == "" && t.Binlog != nil
	// The binary log is read on the lease's connection while the table
	// states are read on the status pool: neither waits for the other.
	type logRead struct {
		stmt string
		end  binlog.Pos
		err  error
	}
	// Meanwhile the lease's connection also checksums the tables the last
	// reset restored, which the reset compares with the template whatever
	// detection reads (see candidates); but only while no session of the
	// lease can start (its account locked: by run with Target.Dir, or,
	// without Target.User, before the reset): a commit between this
	// checksum and the reading of the counters would otherwise pass the
	// one and be taken into the next baseline by the other. (Read after
	// the counters, as without the lock, such a commit shows in one or the
	// other.) Tables restored at every reset need no checksum.
	var unknown []*schema.Table
	if rs.conn != nil && t.Baseline != nil && (t.Dir != "" || t.User == "") {
		for _, tbl := range without(t.Schema.Tables, rs.alwaysRestored()) {
			if t.Baseline.Tables[tbl.Name].Unknown {
				unknown = append(unknown, tbl)
			}
		}
	}
	var connDone chan logRead
	if fromLog || len(unknown) > 0 {
		var since binlog.Pos
		if t.Baseline != nil {
			since = t.Baseline.Binlog
		}
		var q binlog.Querier = t.StatusDB
		if rs.conn != nil {
			q = rs.conn
		}
		connDone = make(chan logRead, 1)
		go func() {
			var r logRead
			if fromLog {
				r.stmt, r.end, r.err = t.Binlog.SchemaChangedSince(ctx, q, t.Database, since)
			}
			if r.err == nil && len(unknown) > 0 {
				rs.presums, r.err = rs.checksums(ctx, unknown)
			}
			connDone <- r
		}()
	}
	obs, err := t.DDL.observeShared(ctx, t.StatusDB, t.Flavor, t.Database, t.Dir != "", !fromLog)
	if connDone != nil {
		r := <-connDone
		if err == nil && r.err != nil {
			err = r.err
		}
		if err == nil && fromLog {
			obs.fromLog, obs.schemaStmt, obs.binlogEnd = true, r.stmt, r.end
		}
	}
	if err != nil {
		return nil, err
	}
	if t.Dir != "" {
		obs.dir, obs.dirErr = statDir(t.Dir)
	}
	return obs, nil
}

// readDDLStatus returns the sum of the server's schema-changing statement
// counters.
func readDDLStatus(ctx context.Context, db queryer) (int64, error) {
	rows, err := db.QueryContext(ctx, ddlStatusQuery)
	if err != nil {
		return 0, fmt.Errorf("read DDL counters: %w", err)
	}
	defer rows.Close()
	var sum int64
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return 0, err
		}
		n, _ := strconv.ParseInt(value, 10, 64)
		sum += n
	}
	return sum, rows.Err()
}

// rebaseline reads the table states after a restore. The server's DDL count
// is the one detection read, before the restore: an earlier count only
// makes the next check count more statements as others', never fewer, and
// the daemon's own statements since then are counted on both sides.
func (rs *resetter) rebaseline(ctx context.Context) (*Baseline, error) {
	tables, second, err := readTableStates(ctx, rs.conn, rs.t.Flavor, map[string]bool{rs.t.Database: true})
	if err != nil {
		return nil, err
	}
	states := tables[rs.t.Database]
	if states == nil {
		states = map[string]TableState{}
	}
	b := &Baseline{Tables: states, ServerDDL: rs.obs.serverDDL, own: rs.obs.own, Second: second, Binlog: rs.obs.binlogEnd}
	if rs.t.Dir != "" {
		sigs, err := readRoutineDigests(ctx, rs.conn, map[string]bool{rs.t.Database: true})
		if err != nil {
			return nil, err
		}
		b.Routines = sigs[rs.t.Database]
		if b.Dir, err = statDir(rs.t.Dir); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (o *observation) baseline() *Baseline {
	return &Baseline{Tables: o.tables, ServerDDL: o.serverDDL, own: o.own, Dir: o.dir, Routines: o.routines, Second: o.second,
		Binlog: o.binlogEnd}
}

func tableNames(ts []*schema.Table) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// ExplainLockWait adds to err, when it is a lock wait timeout, the XA
// transactions the server holds prepared: a test that left one prepared
// (XA PREPARE without XA COMMIT or XA ROLLBACK) leaves it, with its locks,
// when its session ends. Resets roll back those the binary log shows wrote
// to their database (Target.Binlog); one the log does not show (the server
// runs without it) is left to whoever knows its xid.
func ExplainLockWait(ctx context.Context, db *sql.DB, err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1205 {
		return err
	}
	var xids []string
	qerr := schema.EachRow(context.WithoutCancel(ctx), db, "XA RECOVER", nil, func(rows *sql.Rows) error {
		var format, gtridLen, bqualLen int64
		var data string
		if err := rows.Scan(&format, &gtridLen, &bqualLen, &data); err != nil {
			return err
		}
		xids = append(xids, "'"+data+"'")
		return nil
	})
	if qerr != nil {
		return err
	}
	if len(xids) == 0 {
		return err
	}
	return testdbd.Wrapf(err, "the server holds prepared XA transactions (%s), whose locks are likely in the way: a test "+
		"left an XA transaction prepared (XA PREPARE without XA COMMIT or XA ROLLBACK), which outlives its session; end it "+
		"with XA ROLLBACK <xid> and finish XA transactions within the test", strings.Join(xids, ", "))
}

// Retryable reports a deadlock or lock wait the server resolved by failing
// the statement: trying again is the documented remedy.
func Retryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1205, 1213: // lock wait timeout, deadlock
			return true
		case 1025: // error on rename, e.g. "Lock deadlock; Retry transaction"
			return strings.Contains(me.Message, "deadlock") || strings.Contains(me.Message, "Deadlock")
		}
	}
	return false
}
