package strategies

import (
	"fmt"
	"slices"
	"strings"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/schema"
)

// restoreInput is what a restore is planned from (see planRestore): the
// template, the tables to restore and to rewind, and what detection read,
// as plain data.
type restoreInput struct {
	schema   *schema.Schema
	database string // the worker database
	owner    string // its owner, the definer of the triggers created again (Target.Owner)
	flavor   testdbd.Flavor
	// how is the strategy the tables are restored by: truncate empties
	// every one by TRUNCATE, the others (snapshot; rollback restores as
	// snapshot does) the small ones by DELETE.
	how               testdbd.Strategy
	keepAutoIncrement bool            // Target.KeepAutoIncrement
	restore           []*schema.Table // tables whose rows go back to the template's
	rewind            []*schema.Table // tables whose rows are the template's, but whose AUTO_INCREMENT is not
	// appended are the tables of restore the test only added rows to (see
	// appendedRows): their added rows are deleted, nothing is copied.
	appended map[string]bool
	// delta are the keys of the rows to put back, by table, in the tables
	// of restore the binary log vouches for (see deltaKeys): those rows
	// are deleted and the template's rows of the same keys copied back.
	delta map[string][]string
	// states are the tables' states as detection read them (their
	// AUTO_INCREMENT is compared with the template's).
	states map[string]TableState
	// statsTouched are the tables whose optimizer statistics are no longer
	// the template's (observation.statsTouched).
	statsTouched map[string]bool
	// lowSampling lets the restore lower the server's statistics sampling
	// around the big tables' ALTERs (DDLCounter.lowerSampling); only
	// MariaDB's recompute statistics (see settled), so only there.
	lowSampling bool
}

// emptying is how a restored table is emptied before the template's rows
// are copied back into it.
type emptying int

const (
	emptyByDelete   emptying = iota // DELETE FROM the table
	emptyByTruncate                 // TRUNCATE TABLE
	// emptyAppended deletes the rows the test added, those above the
	// template's key (schema.Table.AppendedKey): the delta restore, after
	// which nothing is copied.
	emptyAppended
	// emptyKeys deletes the rows of the keys the binary log shows changed
	// (tableRestore.keys), and copies back the template's rows of those
	// keys: the delta restore by the log.
	emptyKeys
)

// tableRestore is how one table is restored.
type tableRestore struct {
	table *schema.Table
	empty emptying
	copy  bool // the template's rows are copied back
	keys  []string
	// autoInc: ALTER TABLE … AUTO_INCREMENT sets the template's counter
	// afterwards.
	autoInc bool
}

// restorePlan is what a restore does, decided from plain data by
// planRestore; batches renders it as SQL.
type restorePlan struct {
	schema   *schema.Schema
	database string
	owner    string
	tables   []tableRestore  // the tables restored, in the order given
	rewind   []*schema.Table // the tables whose AUTO_INCREMENT alone is set back
	// triggers are dropped before the copies, so that they do not fire,
	// and created again at the end.
	triggers []schema.Object
	// stats are the tables whose statistics go back to the template's
	// (schema.StatsSQL), in the template's order.
	stats []*schema.Table
	// settle are the tables whose statistics the server recomputes when
	// their AUTO_INCREMENT is set, checked afterwards (settleStats).
	settle []*schema.Table
	// lowered are the big tables whose AUTO_INCREMENT is set at the lowest
	// statistics sampling, after the other tables' (see lowSampling):
	// their recomputed statistics are thrown away, and they are in stats.
	lowered map[string]bool
}

// planRestore decides how in.restore and in.rewind are brought back to the
// template: how each table is emptied, whether the template's rows are
// copied back, which AUTO_INCREMENT counters are set, which tables'
// statistics go back or are checked afterwards, and which triggers are
// dropped around it all.
func planRestore(in restoreInput) restorePlan {
	p := restorePlan{schema: in.schema, database: in.database, owner: in.owner, rewind: in.rewind}
	for _, tbl := range in.restore {
		p.tables = append(p.tables, in.tableRestore(tbl))
	}
	restats := in.restats()
	p.lowered = in.lowered(in.settled(restats))
	for name := range p.lowered {
		restats[name] = true
	}
	for _, tbl := range in.schema.Tables {
		if restats[tbl.Name] {
			p.stats = append(p.stats, tbl)
		}
	}
	p.settle = in.settled(restats)
	p.triggers = in.schema.TriggersOf(in.triggered(restats))
	return p
}

// lowered returns the big tables (BigTableRows) among settled whose
// AUTO_INCREMENT the restore sets at the lowest statistics sampling, when
// it may lower it. The statistics MariaDB then recomputes for them cost
// little and are worth nothing, so theirs go back to the template's
// without a comparison; at the server's sampling, a big table's would as
// a rule differ from the template's anyway (they are sampled from its
// pages, which a restore lays out anew). Smaller tables keep the server's
// sampling, which reads every page of a table of few pages, so that their
// recomputed statistics come out as the template's.
func (in *restoreInput) lowered(settled []*schema.Table) map[string]bool {
	if !in.lowSampling {
		return nil
	}
	out := map[string]bool{}
	for _, tbl := range settled {
		if tbl.Rows >= BigTableRows {
			out[tbl.Name] = true
		}
	}
	return out
}

// tableRestore is how tbl, one of in.restore, is restored.
func (in *restoreInput) tableRestore(tbl *schema.Table) tableRestore {
	r := tableRestore{table: tbl, empty: emptyByDelete, autoInc: in.rewinds(tbl)}
	keys, byKeys := in.delta[tbl.Name]
	switch {
	case in.appended[tbl.Name]:
		r.empty = emptyAppended
	case byKeys:
		r.empty, r.keys = emptyKeys, keys
	case in.truncates(tbl):
		r.empty = emptyByTruncate
	}
	r.copy = tbl.Rows > 0 && r.empty != emptyAppended && (r.empty != emptyKeys || len(keys) > 0)
	return r
}

// truncates reports whether tbl, restored, is emptied by TRUNCATE: by the
// truncate strategy, and otherwise the tables with a FULLTEXT index and
// the big ones, unless only rows were added to them. TRUNCATE gives a
// FULLTEXT index back its template state (a DELETE leaves the deleted
// rows' words in it, which changes relevance).
//
// A DELETE would leave a big table's old rows delete-marked in every index
// until InnoDB purges them, and the optimizer's row estimates count those,
// so the same query would be planned unlike on the template for a while
// after the reset.
func (in *restoreInput) truncates(tbl *schema.Table) bool {
	_, byKeys := in.delta[tbl.Name]
	return !in.appended[tbl.Name] && !byKeys && (in.how == testdbd.StrategyTruncate || tbl.Fulltext || tbl.Rows >= BigTableRows)
}

// rewinds reports whether tbl's AUTO_INCREMENT is set to the template's
// after its rows are restored: unless the lease keeps the counters, where
// the table has one and, emptied by TRUNCATE, the copy leaves it elsewhere
// (NaturalAutoIncrement), or otherwise detection read another.
func (in *restoreInput) rewinds(tbl *schema.Table) bool {
	if in.keepAutoIncrement {
		return false
	}
	if in.truncates(tbl) {
		return tbl.AutoIncrement != 0 && tbl.AutoIncrement != tbl.NaturalAutoIncrement
	}
	return tbl.AutoIncrement != 0 && autoIncDiffers(in.states[tbl.Name], tbl)
}

// restats returns the names of the tables whose statistics go back to the
// template's: those a test analyzed or truncated, and those this restore
// truncates (TRUNCATE empties them).
func (in *restoreInput) restats() map[string]bool {
	restats := map[string]bool{}
	for name := range in.statsTouched {
		restats[name] = true
	}
	for _, tbl := range in.restore {
		if in.truncates(tbl) {
			restats[tbl.Name] = true
		}
	}
	return restats
}

// settled returns the tables whose statistics settleStats checks after the
// restore. On MariaDB, ALTER TABLE … AUTO_INCREMENT makes InnoDB recompute
// the table's statistics from its pages, which in a copy of a table may be
// laid out unlike the template's. An empty table's come out as the
// template's as a rule, but stamped with the time of the recomputation:
// settleStats marks them as copied again, or the next reset would find
// them moved and copy them back. MySQL changes the counter alone and keeps
// the statistics (TestStatisticsStayCopied shows both). Tables whose
// statistics go back anyway (restats) need no check.
func (in *restoreInput) settled(restats map[string]bool) []*schema.Table {
	var out []*schema.Table
	for _, tbl := range slices.Concat(in.restore, in.rewind) {
		if in.flavor != testdbd.MySQL && !restats[tbl.Name] && (in.rewinds(tbl) || slices.Contains(in.rewind, tbl)) {
			out = append(out, tbl)
		}
	}
	return out
}

// triggered returns the tables whose triggers are dropped around the
// restore: around the copy, so that they do not fire, and around the
// renames that load statistics, which would rewrite them.
func (in *restoreInput) triggered(restats map[string]bool) []*schema.Table {
	var out []*schema.Table
	for _, tbl := range in.schema.Tables {
		if tbl.HasTriggers && (restats[tbl.Name] || slices.Contains(in.restore, tbl)) {
			out = append(out, tbl)
		}
	}
	return out
}

// batch is SQL statements sent together, and how many of them change the
// schema (see DDLCounter.Exec).
type batch struct {
	sql string
	ddl int
}

// batches renders the plan: restore empties, copies and rewinds the tables
// with the triggers dropped around it, with foreign key checks off
// (schema.CopySession); stats, when statistics go back, puts them back in
// a batch of its own (empty otherwise). The statistics live in tables
// every database on the server shares, where concurrent resets can
// deadlock: that batch is retried, and runs in READ COMMITTED (no gap
// locks). The triggers come back at the end of the last batch, after the
// statistics' renames (which would rewrite them). Both batches leave the
// session as it was (schema.ResetSession).
func (p *restorePlan) batches() (restore, stats batch, err error) {
	db := schema.Quote(p.database)
	var b strings.Builder
	b.WriteString(schema.CopySession + ";\n")
	for _, tr := range p.triggers {
		fmt.Fprintf(&b, "DROP TRIGGER %s.%s;\n", db, schema.Quote(tr.Name))
	}
	restore.ddl = len(p.triggers)
	for _, r := range p.tables {
		restore.ddl += p.writeTable(&b, r)
	}
	var lowered []*schema.Table
	for _, tbl := range p.rewind {
		if p.lowered[tbl.Name] {
			lowered = append(lowered, tbl)
			continue
		}
		fmt.Fprintf(&b, "ALTER TABLE %s.%s AUTO_INCREMENT = %d;\n", db, schema.Quote(tbl.Name), tbl.AutoIncrement)
	}
	restore.ddl += len(p.rewind)
	for _, r := range p.tables {
		if r.autoInc && p.lowered[r.table.Name] {
			lowered = append(lowered, r.table)
		}
	}
	if len(lowered) > 0 {
		b.WriteString(lowSampling + ";\n")
		for _, tbl := range lowered {
			fmt.Fprintf(&b, "ALTER TABLE %s.%s AUTO_INCREMENT = %d;\n", db, schema.Quote(tbl.Name), tbl.AutoIncrement)
		}
		b.WriteString(defaultSampling + ";\n")
	}
	var tail strings.Builder
	last, lastDDL := &b, &restore.ddl
	if len(p.stats) > 0 {
		b.WriteString(schema.ResetSession)
		last, lastDDL = &tail, &stats.ddl
		q, ddl := p.schema.StatsSQL(p.database, p.stats)
		tail.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n")
		tail.WriteString(q)
		tail.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\n")
		stats.ddl += ddl
	}
	if len(p.triggers) > 0 {
		fmt.Fprintf(last, "USE %s;\n", db)
		if err := schema.WriteObjects(last, p.triggers, p.owner); err != nil {
			return batch{}, batch{}, err
		}
		*lastDDL += len(p.triggers)
	}
	last.WriteString(schema.ResetSession)
	restore.sql, stats.sql = b.String(), tail.String()
	return restore, stats, nil
}

// writeTable writes the statements that restore one table to b and returns
// how many of them change the schema.
func (p *restorePlan) writeTable(b *strings.Builder, r tableRestore) int {
	ddl := 0
	name := schema.Quote(p.database) + "." + schema.Quote(r.table.Name)
	switch r.empty {
	case emptyAppended:
		col, from, _ := r.table.AppendedKey()
		fmt.Fprintf(b, "DELETE FROM %s WHERE %s >= %d;\n", name, schema.Quote(col), from)
	case emptyByTruncate:
		fmt.Fprintf(b, "TRUNCATE TABLE %s;\n", name)
		ddl++
	case emptyKeys:
		if len(r.keys) > 0 {
			fmt.Fprintf(b, "DELETE FROM %s WHERE %s;\n", name, keyWhere(r.table, r.keys))
		}
	default:
		fmt.Fprintf(b, "DELETE FROM %s;\n", name)
	}
	if r.copy {
		b.WriteString(p.schema.CopyRowsSQL(r.table, p.database))
		if r.empty == emptyKeys {
			b.WriteString(" WHERE " + keyWhere(r.table, r.keys))
		}
		b.WriteString(";\n")
	}
	if r.autoInc {
		if !p.lowered[r.table.Name] { // those come after the others (see batches)
			fmt.Fprintf(b, "ALTER TABLE %s AUTO_INCREMENT = %d;\n", name, r.table.AutoIncrement)
		}
		ddl++
	}
	return ddl
}

// report adds the plan's tables to r: every table restored or rewound to
// TablesReset, and those restored by deleting the rows a test added to
// TablesDelta.
func (p *restorePlan) report(r *testdbd.ResetReport) {
	for _, t := range p.tables {
		if t.empty == emptyAppended || t.empty == emptyKeys {
			r.TablesDelta = append(r.TablesDelta, t.table.Name)
		}
		r.TablesReset = append(r.TablesReset, t.table.Name)
	}
	for _, tbl := range p.rewind {
		r.TablesReset = append(r.TablesReset, tbl.Name)
	}
}
