package schema

import (
	"fmt"
	"strings"

	"github.com/testdbd/testdbd/internal/filename"
)

// Optimizer statistics. A template is analyzed once after its build; every
// clone gets the template's persistent statistics (InnoDB's
// mysql.innodb_table_stats and mysql.innodb_index_stats rows), so that the
// same query gets the same plan on the template and on every lease, and a
// reset puts them back where a test changed them (ANALYZE TABLE, and
// TRUNCATE, which empties them). The copied rows carry StatsSentinel as
// their last_update: any later ANALYZE or TRUNCATE writes the current time
// there, which is how a reset finds the tables whose statistics moved.

// StatsSentinel is the last_update of statistics copied from a template.
const StatsSentinel = "1970-01-02 00:00:00"

// statsTemp is the name tables are renamed to and back, which makes InnoDB
// load their copied statistics (it reads them when it opens a table anew).
const statsTemp = "#testdbd-stats"

// StatsSQL returns the statements that give tables of database target the
// template's statistics: the rows copied with StatsSentinel, and each table
// that holds rows renamed away and back so that InnoDB loads them. It also
// returns how many schema-changing statements that is (one RENAME, or
// none). The renames reset InnoDB's modification counters of those tables.
func (s *Schema) StatsSQL(target string, tables []*Table) (string, int) {
	if len(tables) == 0 {
		return "", 0
	}
	in := statsTables(tables)
	tgt, src := literal(target), literal(s.Database)
	var b strings.Builder
	fmt.Fprintf(&b, "DELETE FROM mysql.innodb_table_stats WHERE database_name = %s AND %s;\n", tgt, in)
	fmt.Fprintf(&b, "DELETE FROM mysql.innodb_index_stats WHERE database_name = %s AND %s;\n", tgt, in)
	fmt.Fprintf(&b, "INSERT INTO mysql.innodb_table_stats (database_name, table_name, last_update, n_rows, clustered_index_size, sum_of_other_index_sizes) "+
		"SELECT %s, table_name, '%s', n_rows, clustered_index_size, sum_of_other_index_sizes FROM mysql.innodb_table_stats WHERE database_name = %s AND %s;\n",
		tgt, StatsSentinel, src, in)
	fmt.Fprintf(&b, "INSERT INTO mysql.innodb_index_stats (database_name, table_name, index_name, last_update, stat_name, stat_value, sample_size, stat_description) "+
		"SELECT %s, table_name, index_name, '%s', stat_name, stat_value, sample_size, stat_description FROM mysql.innodb_index_stats WHERE database_name = %s AND %s;\n",
		tgt, StatsSentinel, src, in)
	var renames []string
	for _, t := range tables {
		if t.Rows > 0 { // an empty table's statistics are those of a new table
			q, tmp := Quote(target)+"."+Quote(t.Name), Quote(target)+"."+Quote(statsTemp)
			renames = append(renames, q+" TO "+tmp, tmp+" TO "+q)
		}
	}
	if len(renames) == 0 {
		return b.String(), 0
	}
	b.WriteString("RENAME TABLE " + strings.Join(renames, ", ") + ";\n")
	return b.String(), 1
}

// statsTables is the condition on table_name that selects the statistics
// rows of tables: the servers keep them under the filename-encoded name
// ("my@002dtable"), one row per partition for a partitioned table
// ("t#P#p0" on MariaDB, "t#p#p0" on MySQL).
func statsTables(tables []*Table) string {
	names := make([]string, 0, len(tables))
	var parts []string
	for _, t := range tables {
		enc := filename.Encode(t.Name)
		names = append(names, literal(enc))
		if strings.Contains(t.Create, "PARTITION BY") {
			esc := likeEscaper.Replace(enc)
			parts = append(parts, "table_name LIKE "+literal(esc+"#P#%"), "table_name LIKE "+literal(esc+"#p#%"))
		}
	}
	return "(" + strings.Join(append([]string{"table_name IN (" + strings.Join(names, ",") + ")"}, parts...), " OR ") + ")"
}

// literal quotes s as an SQL string literal.
func literal(s string) string {
	return "'" + literalEscaper.Replace(s) + "'"
}

// statsDifferSQL returns a query of the statistics rows' table names (as the
// servers store them: filename-encoded, per partition) among tables of
// database target whose statistics are not the template's: a table or
// index figure that differs, or a row the template lacks.
func (s *Schema) statsDifferSQL(target string, tables []*Table) string {
	tgt, src := literal(target), literal(s.Database)
	return "SELECT table_name FROM (" +
		"SELECT w.table_name FROM mysql.innodb_table_stats w LEFT JOIN mysql.innodb_table_stats t " +
		"ON t.database_name = " + src + " AND t.table_name = w.table_name WHERE w.database_name = " + tgt +
		" AND (t.table_name IS NULL OR NOT (w.n_rows <=> t.n_rows AND w.clustered_index_size <=> t.clustered_index_size" +
		" AND w.sum_of_other_index_sizes <=> t.sum_of_other_index_sizes))" +
		" UNION SELECT w.table_name FROM mysql.innodb_index_stats w LEFT JOIN mysql.innodb_index_stats t" +
		" ON t.database_name = " + src + " AND t.table_name = w.table_name AND t.index_name = w.index_name AND t.stat_name = w.stat_name" +
		" WHERE w.database_name = " + tgt + " AND (t.table_name IS NULL OR NOT (w.stat_value <=> t.stat_value AND w.sample_size <=> t.sample_size))" +
		") x WHERE " + statsTables(tables)
}

// StatsSettleSQL returns one batch for tables of database target whose
// statistics the server has just recomputed: the statistics rows of those
// whose figures came out as the template's get StatsSentinel back (marked
// as copied), and the batch's one result is a row holding the names of the
// others (filename-encoded, partitions folded into their table,
// comma-separated; filename encoding leaves no comma in a name), NULL when
// there is none. The names are kept in a user variable of the session
// between the statements, cleared at the end.
func (s *Schema) StatsSettleSQL(target string, tables []*Table) string {
	in, tgt := statsTables(tables), literal(target)
	const v = "@testdbd_stats_differ"
	base := "SUBSTRING_INDEX(SUBSTRING_INDEX(table_name, '#P#', 1), '#p#', 1)"
	var b strings.Builder
	b.WriteString("SET SESSION group_concat_max_len = 67108864;\n")
	fmt.Fprintf(&b, "SET %s = (SELECT GROUP_CONCAT(DISTINCT %s) FROM (%s) d);\n", v, base, s.statsDifferSQL(target, tables))
	for _, t := range []string{"innodb_table_stats", "innodb_index_stats"} {
		fmt.Fprintf(&b, "UPDATE mysql.%s SET last_update = '%s' WHERE database_name = %s AND %s AND NOT FIND_IN_SET(%s, COALESCE(%s, ''));\n",
			t, StatsSentinel, tgt, in, base, v)
	}
	fmt.Fprintf(&b, "SELECT %s;\nSET %s = NULL", v, v)
	return b.String()
}

// The escapes of a LIKE pattern's wildcards and of a string literal, built
// once (a Replacer is costly to build and safe to share).
var (
	likeEscaper    = strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`)
	literalEscaper = strings.NewReplacer(`\`, `\\`, "'", "''")
)
