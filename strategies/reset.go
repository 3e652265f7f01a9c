package strategies

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
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
	// Rows follows the server's binary log for the rows tests change
	// (nil: not followed); the database must be tracked there from its
	// clone on. A reset then puts back the rows the log shows changed
	// instead of whole tables (see delta.go).
	Rows *binlog.Rows
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
	// Rows is InnoDB's running row count (MariaDB: NUM_ROWS; MySQL:
	// TABLE_ROWS): one up for each row inserted, one down for each row
	// deleted (see appendedRows, fulltextUntouched). 0 until the table's
	// statistics are loaded.
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
	// delta is what the binary log shows changed (Target.Rows); deltaOK
	// the keys to put back in the tables it vouches for, deltaWhy why it
	// does not for the others (see deltaKeys).
	delta    binlog.Changes
	deltaOK  map[string][]string
	deltaWhy map[string]string
}

// run ends the lease's sessions, finds what the test changed and brings it
// back to the template, and returns the new baseline.
func (rs *resetter) run(ctx context.Context) (_ *Baseline, err error) {
	phase := time.Now()
	locked, err := rs.endSessions(ctx)
	if locked {
		defer rs.unlock(ctx, &err)
	}
	if err != nil {
		return nil, err
	}
	if err := rs.rollBackXA(ctx); err != nil {
		return nil, err
	}
	rs.r.Phases.Sessions = time.Since(phase)

	phase = time.Now()
	obs, err := rs.observe(ctx)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	rs.obs = obs
	rs.takeDelta(ctx)
	why := rs.needsFullCheck(obs)
	rs.r.Phases.Detect = time.Since(phase)

	if why != "" {
		// What the log shows is since the last reset, which may not have
		// left the database as the template (no baseline).
		return rs.fullCheck(ctx, why)
	}
	rs.deltaOK, rs.deltaWhy = deltaKeys(rs.t.Schema, rs.delta)
	changed, unsure := rs.candidates(obs)
	forced := rs.alwaysRestored(obs)
	// FULLTEXT tables on MySQL are restored when forced, left alone
	// otherwise: fulltextUntouched read the same states, and the log.
	fulltext := rs.fulltextTables()
	changed, unsure = without(changed, fulltext), without(unsure, fulltext)
	drifted := rs.drifted(obs, changed, unsure, forced)
	phase = time.Now()
	if rs.t.Strategy == testdbd.StrategyRollback {
		quiet, err := rs.uncommitted(ctx, changed)
		if err != nil {
			return nil, err
		}
		drifted = append(drifted, rs.rewound(quiet)...)
		return rs.rollback(ctx, append(without(changed, quiet), unsure...), forced, drifted, obs, phase)
	}
	return rs.verify(ctx, changed, unsure, forced, drifted, obs, phase)
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

func tableNames(ts []*schema.Table) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}
