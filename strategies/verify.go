package strategies

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/schema"
)

// verify finds, for a truncate or snapshot reset, which of the candidate
// tables (see candidates) differ from the template and which have only
// their AUTO_INCREMENT to set back, and restores them (see
// restoreAndRewind). phase is when verification began.
func (rs *resetter) verify(ctx context.Context, changed, unsure, forced, drifted []*schema.Table, obs *observation, phase time.Time) (*Baseline, error) {
	vouchedChanged, changed := rs.splitDelta(changed)
	vouchedUnsure, unsure := rs.splitDelta(unsure)
	byKeys, rewound := rs.byDelta(slices.Concat(vouchedChanged, vouchedUnsure), obs)
	drifted = append(drifted, rewound...)
	var err error
	if rs.appended, err = rs.appendedRows(ctx, changed, obs); err != nil {
		return nil, err
	}
	restore, big := rs.splitBig(forced, changed)
	restore = append(restore, byKeys...)
	quiet, err := rs.uncommitted(ctx, big)
	if err != nil {
		return nil, err
	}
	big, drifted = without(big, quiet), append(drifted, rs.rewound(quiet)...)
	if len(unsure)+len(big) > 0 {
		differ, rewind, err := rs.checkContent(ctx, unsure, big, obs)
		if err != nil {
			return nil, err
		}
		restore, drifted = append(restore, differ...), append(drifted, rewind...)
	}
	rs.r.Phases.Verify = time.Since(phase)
	if len(restore)+len(drifted) == 0 && len(obs.statsTouched) == 0 {
		return rs.baselineAfter(nil), nil
	}
	return rs.restoreAndRewind(ctx, restore, drifted, obs, rs.r.Strategy)
}

// splitBig returns the tables to restore, forced and those of changed that
// are, and the big ones of changed (BigTableRows) to compare with the
// template first: a checksum reads a big table in a few milliseconds where
// copying it back takes tens, and a test that rolled its writes back left
// it as it was (which uncommitted proves cheaper still where it can). Those
// restored by deleting the added rows (appendedRows) and those with a
// FULLTEXT index are restored as they are.
func (rs *resetter) splitBig(forced, changed []*schema.Table) (restore, big []*schema.Table) {
	restore = append([]*schema.Table(nil), forced...)
	for _, tbl := range changed {
		if !rs.appended[tbl.Name] && tbl.Rows >= BigTableRows && !tbl.Fulltext {
			big = append(big, tbl)
		} else {
			restore = append(restore, tbl)
		}
	}
	return restore, big
}

// checkContent compares the tables unsure and big with the template by
// their checksums. It returns those to restore, the unsure ones first: an
// unsure table whose rows or AUTO_INCREMENT (unless the lease keeps it)
// differ, a big one whose rows differ; and the big ones whose rows are the
// template's but whose AUTO_INCREMENT is not (see compare).
func (rs *resetter) checkContent(ctx context.Context, unsure, big []*schema.Table, obs *observation) (differ, rewind []*schema.Table, err error) {
	sums, err := rs.checksums(ctx, slices.Concat(unsure, big))
	if err != nil {
		return nil, nil, err
	}
	for _, tbl := range unsure {
		if sums[rs.t.Database+"."+tbl.Name] != tbl.Checksum || (!rs.t.KeepAutoIncrement && autoIncDiffers(obs.tables[tbl.Name], tbl)) {
			differ = append(differ, tbl)
		}
	}
	bigDiffer, rewind := rs.compare(sums, big, obs)
	return append(differ, bigDiffer...), rewind, nil
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
	if rs.t.Strategy == testdbd.StrategyRollback || rs.t.Baseline == nil || rs.t.Flavor == testdbd.MySQL {
		// MySQL has no MODIFIED_COUNTER to tell inserts from the rest.
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
// table was loaded into InnoDB's cache since, which forgets the time).
// Only tables whose counters were read at the baseline qualify (not one
// the last reset restored), not partitioned ones (the partitions' times
// add up), and only on MariaDB: MySQL's UPDATE_TIME is the time of the
// commit and already its detection signal.
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

// rollback: the client rolled back (or its sessions were just ended, which
// rolls back). Check with CHECKSUM TABLE that nothing was committed to the
// candidate tables, restore the ones that differ, and rewind the
// AUTO_INCREMENT counters that moved.
func (rs *resetter) rollback(ctx context.Context, candidates, forced, drifted []*schema.Table, obs *observation, phase time.Time) (*Baseline, error) {
	vouched, candidates := rs.splitDelta(candidates)
	written, rewound := rs.byDelta(vouched, obs)
	drifted = append(drifted, rewound...)
	if len(candidates)+len(written) == 0 {
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
	committed = append(committed, written...)
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

// brokenDelta, set only by tests, makes appendedRows trust NUM_ROWS alone,
// to show that the property test catches a delta restore that is not exact.
var brokenDelta bool

// brokenUpdateTime, set only by tests, makes uncommitted trust an
// UPDATE_TIME in the baseline's own second or the one before (stampLag), to
// show that the property test catches the one-second resolution ignored.
var brokenUpdateTime bool
