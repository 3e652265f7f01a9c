package strategies

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/schema"
)

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

func (o *observation) baseline() *Baseline {
	return &Baseline{Tables: o.tables, ServerDDL: o.serverDDL, own: o.own, Dir: o.dir, Routines: o.routines, Second: o.second,
		Binlog: o.binlogEnd}
}

// observe reads the worker's table states and the server's DDL counters,
// with no schema-changing batch of the daemon in flight on the server. The
// read is shared with the other resets on the server that wait for one at
// the same moment (see scan). Meanwhile the lease's connection reads the
// binary log and checksums the tables the last reset restored (see
// readOnConn).
func (rs *resetter) observe(ctx context.Context) (*observation, error) {
	t := rs.t
	fromLog := t.Dir == "" && t.Binlog != nil
	var connDone chan connRead
	if unknown := rs.unknownTables(); fromLog || len(unknown) > 0 {
		connDone = rs.readOnConn(ctx, fromLog, unknown)
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

// connRead is what readOnConn read: the last schema-changing statement the
// binary log holds in the database since the baseline, and where the log
// ended.
type connRead struct {
	stmt string
	end  binlog.Pos
	err  error
}

// unknownTables returns the tables the last reset restored, which the reset
// compares with the template whatever detection reads (see candidates), for
// the lease's connection to checksum while the counters are read (see
// readOnConn); but only while no session of the lease can start (its
// account locked: by run with Target.Dir, or, without Target.User, before
// the reset): a commit between this checksum and the reading of the
// counters would otherwise pass the one and be taken into the next baseline
// by the other. (Read after the counters, as without the lock, such a
// commit shows in one or the other.) Tables restored at every reset need no
// checksum.
func (rs *resetter) unknownTables() []*schema.Table {
	t := rs.t
	if rs.conn == nil || t.Baseline == nil || (t.Dir == "" && t.User != "") {
		return nil
	}
	var unknown []*schema.Table
	for _, tbl := range without(t.Schema.Tables, rs.fulltextTables()) {
		if t.Baseline.Tables[tbl.Name].Unknown {
			unknown = append(unknown, tbl)
		}
	}
	return unknown
}

// readOnConn starts reading, on the lease's connection (the status pool
// without one), the schema changes the binary log holds in the database
// since the baseline (fromLog), then the checksums of unknown (into
// rs.presums), while the table states are read on the status pool: neither
// waits for the other. The channel delivers what it read.
func (rs *resetter) readOnConn(ctx context.Context, fromLog bool, unknown []*schema.Table) chan connRead {
	t := rs.t
	var since binlog.Pos
	if t.Baseline != nil {
		since = t.Baseline.Binlog
	}
	var q binlog.Querier = t.StatusDB
	if rs.conn != nil {
		q = rs.conn
	}
	done := make(chan connRead, 1)
	go func() {
		var r connRead
		if fromLog {
			r.stmt, r.end, r.err = t.Binlog.SchemaChangedSince(ctx, q, t.Database, since)
		}
		if r.err == nil && len(unknown) > 0 {
			rs.presums, r.err = rs.checksums(ctx, unknown)
		}
		done <- r
	}()
	return done
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

// needsFullCheck says why the fast path cannot be trusted, or "".
func (rs *resetter) needsFullCheck(obs *observation) string {
	switch {
	case rs.t.Untrusted != "":
		return "detector preconditions not met: " + rs.t.Untrusted
	case rs.t.Baseline == nil:
		return "no baseline for this database"
	}
	if why := rs.schemaChanged(obs); why != "" {
		return why
	}
	return rs.tablesReplaced(obs)
}

// schemaChanged says why the database's schema may have changed since the
// baseline, or "": seen in its directory and routines (Target.Dir), in the
// binary log, or else in the server's statement counters.
func (rs *resetter) schemaChanged(obs *observation) string {
	t := rs.t
	switch {
	case t.Dir != "":
		return rs.schemaChangedHere(obs)
	case obs.fromLog:
		if obs.schemaStmt != "" && !brokenSchemaWatch {
			return "a schema-changing statement ran in this database since the last reset: " + obs.schemaStmt
		}
		return ""
	case obs.own.unknown != t.Baseline.own.unknown || obs.own.unknown%2 == 1 || t.Baseline.own.unknown%2 == 1:
		return "a template was built on this server since the last reset"
	case obs.own.failed != t.Baseline.own.failed:
		return "a batch of schema changes by testdbd failed on this server since the last reset"
	}
	if foreign := (obs.serverDDL - t.Baseline.ServerDDL) - (obs.own.own - t.Baseline.own.own); foreign > 0 {
		return fmt.Sprintf("%d schema-changing statements ran on the server since the last reset that testdbd did not run", foreign)
	}
	return ""
}

// tablesReplaced says why the tables detection read are not those of the
// baseline, or "": a table gone (or evicted from InnoDB's cache), rebuilt,
// or created.
func (rs *resetter) tablesReplaced(obs *observation) string {
	t := rs.t
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

// fulltextTables returns, on MySQL, the tables with a FULLTEXT index,
// whose index changes with writes that leave no trace detection reads
// otherwise: a DELETE rolled back leaves the rows, UPDATE_TIME and
// AUTO_INCREMENT as they were, but not InnoDB's running row count, which
// a search's relevance divides by. MariaDB's counters see those writes.
func (rs *resetter) fulltextTables() []*schema.Table {
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

// alwaysRestored returns the tables this reset restores whatever the rest
// of detection read: the FULLTEXT tables on MySQL (see fulltextTables),
// but those left alone that the binary log stream vouches no committed
// write reached and whose row count, AUTO_INCREMENT and UPDATE_TIME are
// as the last reset left them (see fulltextUntouched). obs is nil where there is no
// detection to go by.
func (rs *resetter) alwaysRestored(obs *observation) []*schema.Table {
	fulltext := rs.fulltextTables()
	if obs == nil || len(fulltext) == 0 {
		return fulltext
	}
	var out []*schema.Table
	cascaded := cascadedFrom(rs.t.Schema, rs.delta)
	for _, tbl := range fulltext {
		if !rs.fulltextUntouched(tbl, obs, cascaded) {
			out = append(out, tbl)
		}
	}
	return out
}

// fulltextUntouched reports whether a FULLTEXT table on MySQL is as the
// last reset left it. A committed write shows in the binary log stream
// (the rows it changed, or a statement that changed rows unlogged, which
// makes the whole database unsure), or, through a foreign key's action,
// follows one that does (cascaded); a write rolled back leaves InnoDB's
// row count (TABLE_ROWS, read fresh) or AUTO_INCREMENT moved: a DELETE
// lowers the count and the rollback does not raise it again, an INSERT
// takes AUTO_INCREMENT values the rollback does not give back, and an
// UPDATE rolled back leaves the index as it was (InnoDB applies a
// transaction's changes to a FULLTEXT index at its commit). UPDATE_TIME
// moved is taken as a write too, whatever the log says. The count the
// baseline holds must be one read after the last restore of the table
// (recountFulltext), and above 1: InnoDB shows an empty table as holding
// one row.
func (rs *resetter) fulltextUntouched(tbl *schema.Table, obs *observation, cascaded map[string]string) bool {
	if rs.t.Rows == nil || rs.t.Baseline == nil || rs.delta.Why != "" {
		return false
	}
	if _, logged := rs.delta.Tables[tbl.Name]; logged || cascaded[tbl.Name] != "" || obs.statsTouched[tbl.Name] {
		return false
	}
	base, ok := rs.t.Baseline.Tables[tbl.Name]
	cur, seen := obs.tables[tbl.Name]
	return ok && seen && !base.Unknown && base.Rows > 1 && (cur.Rows == base.Rows || brokenFulltext) && cur.AutoInc == base.AutoInc &&
		cur.Updated == base.Updated
}

// brokenFulltext, set only by tests, makes fulltextUntouched leave out
// InnoDB's row count, to show that the property test catches a FULLTEXT
// table left alone after a DELETE rolled back.
var brokenFulltext bool

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

// brokenSchemaWatch, set only by tests, makes schemaChangedHere see no
// change, to show that the property test catches a blind watch.
var brokenSchemaWatch bool

// brokenDetector, set only by tests, makes the detector ignore the tables
// it returns true for, to show that the property test catches a detector
// that misses changes.
var brokenDetector func(table string) bool
