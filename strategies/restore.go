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
// by TRUNCATE whatever the strategy (see restoreInput.truncates), unless
// the test only added rows to it (see appendedRows).
const BigTableRows = schema.BigTableRows

// restoreAndRewind restores tables (truncate: TRUNCATE + copy; snapshot:
// DELETE + copy) and sets AUTO_INCREMENT where it is not the template's,
// with the restored tables' triggers dropped around the copy so that they
// do not fire (see planRestore), and ends with the new baseline.
func (rs *resetter) restoreAndRewind(ctx context.Context, restore, rewind []*schema.Table, obs *observation, how testdbd.Strategy) (*Baseline, error) {
	phase := time.Now()
	in := restoreInput{schema: rs.t.Schema, database: rs.t.Database, owner: rs.t.Owner, flavor: rs.t.Flavor,
		how: how, keepAutoIncrement: rs.t.KeepAutoIncrement, restore: restore, rewind: rewind, appended: rs.appended, delta: rs.deltaOK,
		states: obs.tables, statsTouched: obs.statsTouched, lowSampling: true}
	p := planRestore(in)
	release := func() {}
	if len(p.lowered) > 0 {
		var ok bool
		if release, ok = rs.t.DDL.lowerSampling(); !ok {
			release, in.lowSampling = func() {}, false
			p = planRestore(in)
		}
	}
	p.report(rs.r)
	rs.r.DeltaFallback = rs.deltaFallback(restore)
	restoreSQL, statsSQL, err := p.batches()
	if err != nil {
		release()
		return nil, err
	}
	err = rs.t.DDL.Exec(ctx, rs.conn, restoreSQL.ddl, restoreSQL.sql)
	if err != nil && len(p.lowered) > 0 {
		restoreSampling(rs.t.DB)
	}
	release()
	if err == nil && statsSQL.sql != "" {
		err = rs.execRetrying(ctx, statsSQL.ddl, statsSQL.sql)
	}
	restated := p.stats
	if err == nil && len(p.settle) > 0 {
		var renamed []*schema.Table
		renamed, err = rs.settleStats(ctx, p.settle)
		restated = slices.Concat(restated, renamed)
	}
	rs.r.Phases.Restore = time.Since(phase)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", tableNames(restore), err)
	}
	// Renaming a table for its statistics resets its counters: treat it as
	// restored.
	base := rs.baselineAfter(slices.Concat(restore, rewind, restated))
	if afterRestore != nil {
		afterRestore()
	}
	if err := rs.recountFulltext(ctx, base, slices.Concat(restore, rewind, restated)); err != nil {
		return nil, err
	}
	if rs.t.Dir == "" {
		return base, nil
	}
	return base, rs.recount(ctx, base, slices.Concat(restore, rewind))
}

// afterRestore, set only by tests, runs between a restore and the reading
// of the restored tables' states, as a session of the lease that did not
// wait for the reset would.
var afterRestore func()

// recountFulltext reads again, after a restore on MySQL with the binary
// log stream followed, the state of the FULLTEXT tables it restored, so
// that the next reset can leave them alone if nothing reaches them (see
// fulltextUntouched). A write committed in between is in the stream after
// what this reset took, so the next reset sees it; one rolled back is not,
// and the lease's sessions may have started again: a table's state is
// taken only where its row count is the template's, the others are left
// unknown (restored by the next reset).
func (rs *resetter) recountFulltext(ctx context.Context, base *Baseline, restored []*schema.Table) error {
	if rs.t.Rows == nil {
		return nil
	}
	ft := slices.DeleteFunc(rs.fulltextTables(), func(tbl *schema.Table) bool { return !slices.Contains(restored, tbl) })
	return rs.reread(ctx, base, ft, true)
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
	return rs.reread(ctx, base, big, false)
}

// reread reads the states of tables again into base; with asTemplate, only
// those whose row count is the template table's.
func (rs *resetter) reread(ctx context.Context, base *Baseline, tables []*schema.Table, asTemplate bool) error {
	if len(tables) == 0 {
		return nil
	}
	dbs := map[string]bool{rs.t.Database: true}
	if asTemplate {
		dbs[rs.t.Schema.Database] = true
	}
	states, _, err := readTableStates(ctx, rs.conn, rs.t.Flavor, dbs)
	if err != nil {
		return fmt.Errorf("read counters after the restore: %w", err)
	}
	for _, tbl := range tables {
		st, ok := states[rs.t.Database][tbl.Name]
		if tpl, same := states[rs.t.Schema.Database][tbl.Name]; asTemplate && (!same || tpl.Rows != st.Rows) {
			continue
		}
		if ok {
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
	forced := rs.alwaysRestored(nil)
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
