package strategies

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/schema"
)

// planTemplate is the template of the planning tests, "tpl", whose worker
// database is "w" owned by "owner1".
func planTemplate() *schema.Schema {
	ai := func(name string, rows, next, natural int64) *schema.Table {
		return &schema.Table{Name: name, Columns: "`id`,`v`", Rows: rows, AutoIncrement: next, AutoIncrementColumn: "id",
			NaturalAutoIncrement: natural,
			Create:               "CREATE TABLE `" + name + "` (`id` int NOT NULL AUTO_INCREMENT, `v` int, PRIMARY KEY (`id`))"}
	}
	audited := ai("audited", 1, 2, 2)
	audited.HasTriggers = true
	child := ai("child", 2, 3, 3)
	child.Create = "CREATE TABLE `child` (`id` int NOT NULL AUTO_INCREMENT, `v` int, PRIMARY KEY (`id`), " +
		"CONSTRAINT `fk` FOREIGN KEY (`v`) REFERENCES `parent` (`id`) ON DELETE CASCADE)"
	s := &schema.Schema{Database: "tpl", Tables: []*schema.Table{
		ai("empty", 0, 1, 1),  // empty in the template
		ai("seeded", 3, 4, 4), // rows 1-3
		ai("gap", 2, 10, 3),   // rows 1-2, the counter left at 10
		ai("big", 5000, 5001, 5001),
		{Name: "plain", Columns: "`k`,`v`", Rows: 2, Create: "CREATE TABLE `plain` (`k` int NOT NULL, `v` int, PRIMARY KEY (`k`))"},
		{Name: "docs", Columns: "`id`,`body`", Rows: 2, Fulltext: true,
			Create: "CREATE TABLE `docs` (`id` int NOT NULL, `body` text, PRIMARY KEY (`id`), FULLTEXT KEY `ft` (`body`))"},
		audited,
		ai("parent", 2, 3, 3),
		child,
	}, Triggers: []schema.Object{{Kind: "TRIGGER", Name: "audited_ai", Table: "audited",
		Create:  "CREATE DEFINER=<owner> TRIGGER `audited_ai` AFTER INSERT ON `audited` FOR EACH ROW SET @n = NEW.`id`",
		SQLMode: "STRICT_TRANS_TABLES", Collation: "utf8mb4_general_ci"}}}
	for _, t := range s.Tables {
		col := "id"
		if t.Name == "plain" {
			col = "k"
		}
		t.Key = []schema.KeyColumn{{Name: col, Type: "int"}}
	}
	s.Index()
	return s
}

// The statements the planning tests expect, spelled out.
const (
	planCopySession  = "SET SESSION FOREIGN_KEY_CHECKS = 0, sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION';\n"
	planResetSession = "SET SESSION FOREIGN_KEY_CHECKS = 1, sql_mode = DEFAULT; SET NAMES utf8mb4"
	planTrigger      = "USE `w`;\nSET SESSION sql_mode = 'STRICT_TRANS_TABLES', collation_connection = 'utf8mb4_general_ci';\n" +
		"CREATE DEFINER=`owner1`@`%` TRIGGER `audited_ai` AFTER INSERT ON `audited` FOR EACH ROW SET @n = NEW.`id`;\n"
	planDropTrigger = "DROP TRIGGER `w`.`audited_ai`;\n"
)

// planCopy is the copy of a table's template rows into w.
func planCopy(table, columns string) string {
	return fmt.Sprintf("INSERT INTO `w`.`%s` (%s) SELECT %s FROM `tpl`.`%s`;\n", table, columns, columns, table)
}

// planStats is the statistics batch that gives tables of w the template's
// statistics, renaming those in renamed (those holding rows), followed by
// after.
func planStats(tables, renamed []string, after string) string {
	in := "(table_name IN ('" + strings.Join(tables, "','") + "'))"
	var b strings.Builder
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n")
	fmt.Fprintf(&b, "DELETE FROM mysql.innodb_table_stats WHERE database_name = 'w' AND %s;\n", in)
	fmt.Fprintf(&b, "DELETE FROM mysql.innodb_index_stats WHERE database_name = 'w' AND %s;\n", in)
	fmt.Fprintf(&b, "INSERT INTO mysql.innodb_table_stats (database_name, table_name, last_update, n_rows, clustered_index_size, sum_of_other_index_sizes) "+
		"SELECT 'w', table_name, '1970-01-02 00:00:00', n_rows, clustered_index_size, sum_of_other_index_sizes FROM mysql.innodb_table_stats "+
		"WHERE database_name = 'tpl' AND %s;\n", in)
	fmt.Fprintf(&b, "INSERT INTO mysql.innodb_index_stats (database_name, table_name, index_name, last_update, stat_name, stat_value, sample_size, stat_description) "+
		"SELECT 'w', table_name, index_name, '1970-01-02 00:00:00', stat_name, stat_value, sample_size, stat_description FROM mysql.innodb_index_stats "+
		"WHERE database_name = 'tpl' AND %s;\n", in)
	var renames []string
	for _, t := range renamed {
		renames = append(renames, "`w`.`"+t+"` TO `w`.`#testdbd-stats`", "`w`.`#testdbd-stats` TO `w`.`"+t+"`")
	}
	if len(renames) > 0 {
		b.WriteString("RENAME TABLE " + strings.Join(renames, ", ") + ";\n")
	}
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\n")
	return b.String() + after + planResetSession
}

// planSummary names the tables of a restorePlan by what is done to them.
type planSummary struct {
	Truncate, Delete, Delta, Copy, AutoInc, Rewind, Stats, Settle, Triggers []string
}

func summarize(p restorePlan) planSummary {
	var s planSummary
	names := func(ts []*schema.Table) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	for _, r := range p.tables {
		switch r.empty {
		case emptyByTruncate:
			s.Truncate = append(s.Truncate, r.table.Name)
		case emptyByDelete:
			s.Delete = append(s.Delete, r.table.Name)
		case emptyAppended, emptyKeys:
			s.Delta = append(s.Delta, r.table.Name)
		}
		if r.copy {
			s.Copy = append(s.Copy, r.table.Name)
		}
		if r.autoInc {
			s.AutoInc = append(s.AutoInc, r.table.Name)
		}
	}
	s.Rewind, s.Stats, s.Settle = names(p.rewind), names(p.stats), names(p.settle)
	for _, tr := range p.triggers {
		s.Triggers = append(s.Triggers, tr.Name)
	}
	return s
}

// tbls is a list of table names.
func tbls(names ...string) []string { return names }

// TestPlanRestore: what a restore does to each table, and the exact SQL it
// sends, for each strategy, flavor and kind of table.
func TestPlanRestore(t *testing.T) {
	type counters map[string]int64 // AUTO_INCREMENT as detection read it, by table
	cases := []struct {
		name          string
		how           testdbd.Strategy
		flavor        testdbd.Flavor
		keep          bool
		low           bool // restoreInput.lowSampling
		restore       []string
		rewind        []string
		appended      []string
		keys          map[string][]string // the keys the binary log shows changed, by table
		read          counters
		touched       []string
		want          planSummary
		sql           string // the restore batch
		ddl           int
		stats         string // the statistics batch
		statsDDL      int
		reset, deltas []string // the report's TablesReset and TablesDelta
	}{{
		name: "by key: the rows the log shows changed are deleted and copied back, the counter rewound", how: testdbd.StrategySnapshot,
		flavor: testdbd.MySQL, restore: tbls("big", "plain"), read: counters{"big": 5003},
		keys: map[string][]string{"big": {"7", "5001", "5002"}, "plain": {"2"}},
		want: planSummary{Delta: tbls("big", "plain"), Copy: tbls("big", "plain"), AutoInc: tbls("big")},
		sql: planCopySession + "DELETE FROM `w`.`big` WHERE `id` IN (7, 5001, 5002);\n" +
			"INSERT INTO `w`.`big` (`id`,`v`) SELECT `id`,`v` FROM `tpl`.`big` WHERE `id` IN (7, 5001, 5002);\n" +
			"ALTER TABLE `w`.`big` AUTO_INCREMENT = 5001;\n" +
			"DELETE FROM `w`.`plain` WHERE `k` IN (2);\n" +
			"INSERT INTO `w`.`plain` (`k`,`v`) SELECT `k`,`v` FROM `tpl`.`plain` WHERE `k` IN (2);\n" + planResetSession,
		ddl: 1, reset: tbls("big", "plain"), deltas: tbls("big", "plain"),
	}, {
		name: "by key, no key logged (a rolled-back insert): only the counter", how: testdbd.StrategySnapshot,
		flavor: testdbd.MySQL, restore: tbls("seeded"), read: counters{"seeded": 5}, keys: map[string][]string{"seeded": nil},
		want: planSummary{Delta: tbls("seeded"), AutoInc: tbls("seeded")},
		sql:  planCopySession + "ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" + planResetSession,
		ddl:  1, reset: tbls("seeded"), deltas: tbls("seeded"),
	}, {
		name: "snapshot, seeded table, counter where it was", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		restore: tbls("seeded"), read: counters{"seeded": 4},
		want:  planSummary{Delete: tbls("seeded"), Copy: tbls("seeded")},
		sql:   planCopySession + "DELETE FROM `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") + planResetSession,
		reset: tbls("seeded"),
	}, {
		name: "snapshot, seeded table, counter moved: rewound, MariaDB settles its statistics", how: testdbd.StrategySnapshot,
		flavor: testdbd.MariaDB, restore: tbls("seeded"), read: counters{"seeded": 9},
		want: planSummary{Delete: tbls("seeded"), Copy: tbls("seeded"), AutoInc: tbls("seeded"), Settle: tbls("seeded")},
		sql: planCopySession + "DELETE FROM `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") +
			"ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" + planResetSession,
		ddl: 1, reset: tbls("seeded"),
	}, {
		name: "snapshot, seeded table, counter moved: MySQL keeps the statistics", how: testdbd.StrategySnapshot,
		flavor: testdbd.MySQL, restore: tbls("seeded"), read: counters{"seeded": 9},
		want: planSummary{Delete: tbls("seeded"), Copy: tbls("seeded"), AutoInc: tbls("seeded")},
		sql: planCopySession + "DELETE FROM `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") +
			"ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" + planResetSession,
		ddl: 1, reset: tbls("seeded"),
	}, {
		name: "snapshot, table empty in the template: emptied, nothing copied, counter rewound", how: testdbd.StrategySnapshot,
		flavor: testdbd.MariaDB, restore: tbls("empty"), read: counters{"empty": 7},
		want: planSummary{Delete: tbls("empty"), AutoInc: tbls("empty"), Settle: tbls("empty")},
		sql:  planCopySession + "DELETE FROM `w`.`empty`;\nALTER TABLE `w`.`empty` AUTO_INCREMENT = 1;\n" + planResetSession,
		ddl:  1, reset: tbls("empty"),
	}, {
		name: "a counter never used (MySQL shows none) is the template's 1", how: testdbd.StrategySnapshot,
		flavor: testdbd.MySQL, restore: tbls("empty"), read: counters{"empty": 0},
		want:  planSummary{Delete: tbls("empty")},
		sql:   planCopySession + "DELETE FROM `w`.`empty`;\n" + planResetSession,
		reset: tbls("empty"),
	}, {
		name: "rollback restores as snapshot does", how: testdbd.StrategyRollback, flavor: testdbd.MariaDB,
		restore: tbls("seeded", "plain"), read: counters{"seeded": 4},
		want: planSummary{Delete: tbls("seeded", "plain"), Copy: tbls("seeded", "plain")},
		sql: planCopySession + "DELETE FROM `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") +
			"DELETE FROM `w`.`plain`;\n" + planCopy("plain", "`k`,`v`") + planResetSession,
		reset: tbls("seeded", "plain"),
	}, {
		name: "truncate: TRUNCATE and copy, the copy sets the counter, the statistics go back", how: testdbd.StrategyTruncate,
		flavor: testdbd.MariaDB, restore: tbls("seeded"), read: counters{"seeded": 9},
		want: planSummary{Truncate: tbls("seeded"), Copy: tbls("seeded"), Stats: tbls("seeded")},
		sql:  planCopySession + "TRUNCATE TABLE `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") + planResetSession,
		ddl:  1, stats: planStats(tbls("seeded"), tbls("seeded"), ""), statsDDL: 1, reset: tbls("seeded"),
	}, {
		name: "truncate: a counter the template keeps above its rows is set", how: testdbd.StrategyTruncate,
		flavor: testdbd.MariaDB, restore: tbls("gap"), read: counters{"gap": 10},
		want: planSummary{Truncate: tbls("gap"), Copy: tbls("gap"), AutoInc: tbls("gap"), Stats: tbls("gap")},
		sql: planCopySession + "TRUNCATE TABLE `w`.`gap`;\n" + planCopy("gap", "`id`,`v`") +
			"ALTER TABLE `w`.`gap` AUTO_INCREMENT = 10;\n" + planResetSession,
		ddl: 2, stats: planStats(tbls("gap"), tbls("gap"), ""), statsDDL: 1, reset: tbls("gap"),
	}, {
		name: "truncate, table empty in the template: no copy, no rename for its statistics", how: testdbd.StrategyTruncate,
		flavor: testdbd.MariaDB, restore: tbls("empty"), read: counters{"empty": 7},
		want: planSummary{Truncate: tbls("empty"), Stats: tbls("empty")},
		sql:  planCopySession + "TRUNCATE TABLE `w`.`empty`;\n" + planResetSession,
		ddl:  1, stats: planStats(tbls("empty"), nil, ""), reset: tbls("empty"),
	}, {
		name: "snapshot truncates a big table", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		restore: tbls("big"), read: counters{"big": 5100},
		want: planSummary{Truncate: tbls("big"), Copy: tbls("big"), Stats: tbls("big")},
		sql:  planCopySession + "TRUNCATE TABLE `w`.`big`;\n" + planCopy("big", "`id`,`v`") + planResetSession,
		ddl:  1, stats: planStats(tbls("big"), tbls("big"), ""), statsDDL: 1, reset: tbls("big"),
	}, {
		name: "a big table only appended to loses the added rows (delta)", how: testdbd.StrategyTruncate, flavor: testdbd.MariaDB,
		restore: tbls("big"), appended: tbls("big"), read: counters{"big": 5011},
		want: planSummary{Delta: tbls("big"), AutoInc: tbls("big"), Settle: tbls("big")},
		sql: planCopySession + "DELETE FROM `w`.`big` WHERE `id` >= 5001;\nALTER TABLE `w`.`big` AUTO_INCREMENT = 5001;\n" +
			planResetSession,
		ddl: 1, reset: tbls("big"), deltas: tbls("big"),
	}, {
		name: "at lowered sampling, a big table's counter is set after the others' and its statistics go back", how: testdbd.StrategySnapshot,
		flavor: testdbd.MariaDB, low: true, restore: tbls("big", "seeded"), read: counters{"big": 5003, "seeded": 5},
		keys: map[string][]string{"big": {"7", "5001", "5002"}, "seeded": {"4"}},
		want: planSummary{Delta: tbls("big", "seeded"), Copy: tbls("big", "seeded"), AutoInc: tbls("big", "seeded"),
			Stats: tbls("big"), Settle: tbls("seeded")},
		sql: planCopySession + "DELETE FROM `w`.`big` WHERE `id` IN (7, 5001, 5002);\n" +
			"INSERT INTO `w`.`big` (`id`,`v`) SELECT `id`,`v` FROM `tpl`.`big` WHERE `id` IN (7, 5001, 5002);\n" +
			"DELETE FROM `w`.`seeded` WHERE `id` IN (4);\n" +
			"INSERT INTO `w`.`seeded` (`id`,`v`) SELECT `id`,`v` FROM `tpl`.`seeded` WHERE `id` IN (4);\n" +
			"ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" +
			"SET GLOBAL innodb_stats_persistent_sample_pages = 1;\nALTER TABLE `w`.`big` AUTO_INCREMENT = 5001;\n" +
			"SET GLOBAL innodb_stats_persistent_sample_pages = DEFAULT;\n" + planResetSession,
		ddl: 2, stats: planStats(tbls("big"), tbls("big"), ""), statsDDL: 1,
		reset: tbls("big", "seeded"), deltas: tbls("big", "seeded"),
	}, {
		name: "at lowered sampling, a big table rewound: the same", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB, low: true,
		rewind: tbls("big"), read: counters{"big": 5003},
		want: planSummary{Rewind: tbls("big"), Stats: tbls("big")},
		sql: planCopySession + "SET GLOBAL innodb_stats_persistent_sample_pages = 1;\nALTER TABLE `w`.`big` AUTO_INCREMENT = 5001;\n" +
			"SET GLOBAL innodb_stats_persistent_sample_pages = DEFAULT;\n" + planResetSession,
		ddl: 1, stats: planStats(tbls("big"), tbls("big"), ""), statsDDL: 1, reset: tbls("big"),
	}, {
		name: "MySQL keeps the statistics: nothing lowered", how: testdbd.StrategySnapshot, flavor: testdbd.MySQL, low: true,
		rewind: tbls("big"), read: counters{"big": 5003},
		want: planSummary{Rewind: tbls("big")},
		sql:  planCopySession + "ALTER TABLE `w`.`big` AUTO_INCREMENT = 5001;\n" + planResetSession,
		ddl:  1, reset: tbls("big"),
	}, {
		name: "snapshot truncates a FULLTEXT table", how: testdbd.StrategySnapshot, flavor: testdbd.MySQL,
		restore: tbls("docs"),
		want:    planSummary{Truncate: tbls("docs"), Copy: tbls("docs"), Stats: tbls("docs")},
		sql:     planCopySession + "TRUNCATE TABLE `w`.`docs`;\n" + planCopy("docs", "`id`,`body`") + planResetSession,
		ddl:     1, stats: planStats(tbls("docs"), tbls("docs"), ""), statsDDL: 1, reset: tbls("docs"),
	}, {
		name: "keeping AUTO_INCREMENT sets no counter", how: testdbd.StrategyTruncate, flavor: testdbd.MariaDB, keep: true,
		restore: tbls("seeded", "gap"), read: counters{"seeded": 9, "gap": 12},
		want: planSummary{Truncate: tbls("seeded", "gap"), Copy: tbls("seeded", "gap"), Stats: tbls("seeded", "gap")},
		sql: planCopySession + "TRUNCATE TABLE `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") +
			"TRUNCATE TABLE `w`.`gap`;\n" + planCopy("gap", "`id`,`v`") + planResetSession,
		ddl: 2, stats: planStats(tbls("seeded", "gap"), tbls("seeded", "gap"), ""), statsDDL: 1, reset: tbls("seeded", "gap"),
	}, {
		name: "counters alone set back: MariaDB settles the statistics", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		rewind: tbls("seeded", "gap"), read: counters{"seeded": 9, "gap": 12},
		want: planSummary{Rewind: tbls("seeded", "gap"), Settle: tbls("seeded", "gap")},
		sql: planCopySession + "ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\nALTER TABLE `w`.`gap` AUTO_INCREMENT = 10;\n" +
			planResetSession,
		ddl: 2, reset: tbls("seeded", "gap"),
	}, {
		name: "counters alone set back: MySQL", how: testdbd.StrategySnapshot, flavor: testdbd.MySQL,
		rewind: tbls("seeded"), read: counters{"seeded": 9},
		want: planSummary{Rewind: tbls("seeded")},
		sql:  planCopySession + "ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" + planResetSession,
		ddl:  1, reset: tbls("seeded"),
	}, {
		name: "statistics a test moved go back, nothing restored", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		touched: tbls("plain", "empty"),
		want:    planSummary{Stats: tbls("empty", "plain")},
		sql:     planCopySession + planResetSession,
		stats:   planStats(tbls("empty", "plain"), tbls("plain"), ""), statsDDL: 1,
	}, {
		name: "statistics that go back anyway need no settling", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		restore: tbls("seeded"), touched: tbls("seeded"), read: counters{"seeded": 9},
		want: planSummary{Delete: tbls("seeded"), Copy: tbls("seeded"), AutoInc: tbls("seeded"), Stats: tbls("seeded")},
		sql: planCopySession + "DELETE FROM `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") +
			"ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" + planResetSession,
		ddl: 1, stats: planStats(tbls("seeded"), tbls("seeded"), ""), statsDDL: 1, reset: tbls("seeded"),
	}, {
		name: "a restored table's triggers are dropped around the copy", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		restore: tbls("audited"), read: counters{"audited": 2},
		want: planSummary{Delete: tbls("audited"), Copy: tbls("audited"), Triggers: tbls("audited_ai")},
		sql: planCopySession + planDropTrigger + "DELETE FROM `w`.`audited`;\n" + planCopy("audited", "`id`,`v`") +
			planTrigger + planResetSession,
		ddl: 2, reset: tbls("audited"),
	}, {
		name: "triggers come back after the statistics' renames", how: testdbd.StrategyTruncate, flavor: testdbd.MariaDB,
		restore: tbls("audited"), read: counters{"audited": 2},
		want: planSummary{Truncate: tbls("audited"), Copy: tbls("audited"), Stats: tbls("audited"), Triggers: tbls("audited_ai")},
		sql: planCopySession + planDropTrigger + "TRUNCATE TABLE `w`.`audited`;\n" + planCopy("audited", "`id`,`v`") +
			planResetSession,
		ddl: 2, stats: planStats(tbls("audited"), tbls("audited"), planTrigger), statsDDL: 2, reset: tbls("audited"),
	}, {
		name: "a table whose statistics moved has its triggers dropped around the renames", how: testdbd.StrategySnapshot,
		flavor: testdbd.MariaDB, touched: tbls("audited"),
		want: planSummary{Stats: tbls("audited"), Triggers: tbls("audited_ai")},
		sql:  planCopySession + planDropTrigger + planResetSession,
		ddl:  1, stats: planStats(tbls("audited"), tbls("audited"), planTrigger), statsDDL: 2,
	}, {
		name: "tables bound by a foreign key restored in the order given, checks off", how: testdbd.StrategySnapshot,
		flavor: testdbd.MySQL, restore: tbls("child", "parent"), read: counters{"child": 3, "parent": 5},
		want: planSummary{Delete: tbls("child", "parent"), Copy: tbls("child", "parent"), AutoInc: tbls("parent")},
		sql: planCopySession + "DELETE FROM `w`.`child`;\n" + planCopy("child", "`id`,`v`") +
			"DELETE FROM `w`.`parent`;\n" + planCopy("parent", "`id`,`v`") + "ALTER TABLE `w`.`parent` AUTO_INCREMENT = 3;\n" +
			planResetSession,
		ddl: 1, reset: tbls("child", "parent"),
	}, {
		name: "full check: every counter taken as moved", how: testdbd.StrategySnapshot, flavor: testdbd.MariaDB,
		restore: tbls("seeded", "plain", "empty"), read: counters{"seeded": -1, "plain": -1, "empty": -1},
		want: planSummary{Delete: tbls("seeded", "plain", "empty"), Copy: tbls("seeded", "plain"), AutoInc: tbls("seeded", "empty"),
			Settle: tbls("seeded", "empty")},
		sql: planCopySession + "DELETE FROM `w`.`seeded`;\n" + planCopy("seeded", "`id`,`v`") +
			"ALTER TABLE `w`.`seeded` AUTO_INCREMENT = 4;\n" + "DELETE FROM `w`.`plain`;\n" + planCopy("plain", "`k`,`v`") +
			"DELETE FROM `w`.`empty`;\nALTER TABLE `w`.`empty` AUTO_INCREMENT = 1;\n" + planResetSession,
		ddl: 2, reset: tbls("seeded", "plain", "empty"),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tpl := planTemplate()
			tables := func(names []string) []*schema.Table {
				var out []*schema.Table
				for _, n := range names {
					tbl, ok := tpl.Table(n)
					if !ok {
						t.Fatalf("no table %s", n)
					}
					out = append(out, tbl)
				}
				return out
			}
			set := func(names []string) map[string]bool {
				m := map[string]bool{}
				for _, n := range names {
					m[n] = true
				}
				return m
			}
			states := map[string]TableState{}
			for name, next := range c.read {
				states[name] = TableState{AutoInc: next}
			}
			p := planRestore(restoreInput{schema: tpl, database: "w", owner: "owner1", flavor: c.flavor, how: c.how,
				keepAutoIncrement: c.keep, restore: tables(c.restore), rewind: tables(c.rewind), appended: set(c.appended),
				states: states, statsTouched: set(c.touched), delta: c.keys, lowSampling: c.low})
			if got := summarize(p); !reflect.DeepEqual(got, c.want) {
				t.Errorf("plan:\n got %+v\nwant %+v", got, c.want)
			}
			restore, stats, err := p.batches()
			if err != nil {
				t.Fatal(err)
			}
			if restore.sql != c.sql {
				t.Errorf("restore batch:\n got %q\nwant %q", restore.sql, c.sql)
			}
			if stats.sql != c.stats {
				t.Errorf("statistics batch:\n got %q\nwant %q", stats.sql, c.stats)
			}
			if restore.ddl != c.ddl || stats.ddl != c.statsDDL {
				t.Errorf("schema-changing statements: got %d and %d, want %d and %d", restore.ddl, stats.ddl, c.ddl, c.statsDDL)
			}
			// Foreign key checks are off for the whole restore (tables
			// are emptied and filled in any order) and on again at the
			// end of every batch.
			if !strings.HasPrefix(restore.sql, planCopySession) || !strings.HasSuffix(restore.sql, planResetSession) ||
				(stats.sql != "" && !strings.HasSuffix(stats.sql, planResetSession)) {
				t.Errorf("a batch does not turn foreign key checks off first and on again last")
			}
			var r testdbd.ResetReport
			p.report(&r)
			if !reflect.DeepEqual(r.TablesReset, c.reset) || !reflect.DeepEqual(r.TablesDelta, c.deltas) {
				t.Errorf("report: reset %v, delta %v; want %v, %v", r.TablesReset, r.TablesDelta, c.reset, c.deltas)
			}
		})
	}
}

// TestPlanTriggersNeedTheOwner: a trigger the template defines with its
// owner as definer cannot be created again without the worker's owner.
func TestPlanTriggersNeedTheOwner(t *testing.T) {
	tpl := planTemplate()
	audited, _ := tpl.Table("audited")
	p := planRestore(restoreInput{schema: tpl, database: "w", flavor: testdbd.MariaDB, how: testdbd.StrategySnapshot,
		restore: []*schema.Table{audited}, states: map[string]TableState{"audited": {AutoInc: 2}}})
	if _, _, err := p.batches(); err == nil || !strings.Contains(err.Error(), "owner") {
		t.Errorf("batches without an owner: %v", err)
	}
}

// TestDeltaKeys: which tables the binary log vouches for, and why not the
// others: its own reasons, a table without a key, a FULLTEXT index, and
// the tables a foreign key's action may have changed, transitively, from
// a table rows were deleted from or updated in (not one rows were only
// inserted into).
func TestDeltaKeys(t *testing.T) {
	tpl := planTemplate()
	for _, name := range []string{"plain", "audited"} {
		tbl, _ := tpl.Table(name)
		tbl.Key = nil
	}
	parent, _ := tpl.Table("parent")
	child, _ := tpl.Table("child")
	parent.Cascades, child.Cascades = []string{"child"}, []string{"gap"}
	c := binlog.Changes{Tables: map[string]binlog.TableChanges{
		"seeded": {Keys: []string{"1"}},
		"big":    {Why: "more than 2000 of its rows changed"},
		"parent": {Keys: []string{"2"}, Removed: true},
	}}
	keys, why := deltaKeys(tpl, c)
	if !reflect.DeepEqual(keys["seeded"], []string{"1"}) {
		t.Errorf("seeded: %v", keys["seeded"])
	}
	if _, ok := keys["empty"]; !ok {
		t.Errorf("a table without logged rows is not vouched for: %v", why["empty"])
	}
	for table, want := range map[string]string{"big": "more than 2000", "plain": "no primary key", "docs": "FULLTEXT",
		"child": "change to parent", "gap": "change to child"} {
		if _, ok := keys[table]; ok || !strings.Contains(why[table], want) {
			t.Errorf("%s: vouched %v, why %q; want %q", table, ok, why[table], want)
		}
	}
	if _, ok := keys["parent"]; !ok {
		t.Errorf("parent: %q", why["parent"])
	}
	// Inserts alone act on no foreign key.
	c.Tables["parent"] = binlog.TableChanges{Keys: []string{"3"}}
	if keys, why := deltaKeys(tpl, c); keys["child"] == nil && why["child"] != "" {
		t.Errorf("child after inserts into parent: %q", why["child"])
	}
	// The log cannot tell: nothing is vouched for.
	if keys, why := deltaKeys(tpl, binlog.Changes{Why: "the stream restarted"}); len(keys) != 0 || why["seeded"] != "the stream restarted" {
		t.Errorf("unsure log: %v, %v", keys, why)
	}
}

// TestKeyWhere: a key of one column is selected by an IN list; one of
// several by a conjunction per key, which DELETE reads by the index.
func TestKeyWhere(t *testing.T) {
	one := &schema.Table{Key: []schema.KeyColumn{{Name: "id"}}}
	if got := keyWhere(one, []string{"1", "2"}); got != "`id` IN (1, 2)" {
		t.Errorf("one column: %s", got)
	}
	two := &schema.Table{Key: []schema.KeyColumn{{Name: "account"}, {Name: "seq"}}}
	want := "(`account` = _utf8mb4 X'61' AND `seq` = 5) OR (`account` = X'' AND `seq` = 7)"
	if got := keyWhere(two, []string{"(_utf8mb4 X'61',5)", "(X'',7)"}); got != want {
		t.Errorf("two columns:\n got %s\nwant %s", got, want)
	}
}
