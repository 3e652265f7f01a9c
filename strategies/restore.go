package strategies

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/schema"
)

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
