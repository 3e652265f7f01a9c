package dbcompare

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/testdbd/testdbd/schema"
)

// Snapshot is what makes a database what it is.
type Snapshot struct {
	Database string
	// Objects maps "TABLE t", "VIEW v", "TRIGGER x", "PROCEDURE p",
	// "FUNCTION f" and "EVENT e" to their definitions, with the database
	// name and AUTO_INCREMENT clause taken out.
	Objects map[string]string
	// Checksums maps table names to CHECKSUM TABLE.
	Checksums map[string]int64
	// Rows maps table names to row counts.
	Rows map[string]int64
	// AutoIncrement maps tables with an AUTO_INCREMENT column to the next value.
	AutoIncrement map[string]int64
	// Stats maps "table" and "table.index" to InnoDB's persistent optimizer
	// statistics of it (what mysql.innodb_table_stats and
	// innodb_index_stats hold). (The figures InnoDB has loaded drift with
	// every row written, as they do on any server: not compared.)
	Stats map[string]string
	// Relevance maps "table.index term" to what a natural-language
	// MATCH … AGAINST of the term over that FULLTEXT index returns: every
	// matching row's first column and relevance, in order. The relevance of
	// a word depends on how many documents the index holds, deleted ones
	// included, so a restore that leaves the index unlike the template's
	// shows here even when the rows are equal.
	Relevance map[string]string
	// Definers maps views, triggers, routines and events to their definer,
	// taken out of Objects: each database has an owner of its own, so two
	// databases compare equal when one's definers map to the other's
	// one-to-one.
	Definers map[string]string
}

var (
	autoIncClause = regexp.MustCompile(` AUTO_INCREMENT=\d+`)
	definerClause = regexp.MustCompile("DEFINER=(`[^`]*`@`[^`]*`)")
)

// Take reads a snapshot of database name through db (admin privileges).
func Take(ctx context.Context, db *sql.DB, name string) (*Snapshot, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "USE "+quote(name)); err != nil {
		return nil, err
	}
	_, _ = conn.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0")
	s := &Snapshot{Database: name, Objects: map[string]string{}, Checksums: map[string]int64{},
		Rows: map[string]int64{}, AutoIncrement: map[string]int64{}, Definers: map[string]string{}, Stats: map[string]string{},
		Relevance: map[string]string{}}
	tables, err := s.takeTables(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := s.takeChecksums(ctx, conn, tables); err != nil {
		return nil, err
	}
	if err := s.takeAutoIncrement(ctx, conn); err != nil {
		return nil, err
	}
	if err := s.takeObjects(ctx, conn); err != nil {
		return nil, err
	}
	if err := s.takeStats(ctx, conn, name); err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	if err := s.takeRelevance(ctx, conn, name); err != nil {
		return nil, fmt.Errorf("relevance: %w", err)
	}
	return s, nil
}

// norm takes the database's name and the AUTO_INCREMENT clause out of a
// definition.
func (s *Snapshot) norm(def string) string {
	def = strings.ReplaceAll(def, quote(s.Database)+".", "")
	return autoIncClause.ReplaceAllString(def, "")
}

// takeTables reads the definitions of the database's tables and views and
// the tables' row counts, and returns the tables' names, sorted.
func (s *Snapshot) takeTables(ctx context.Context, conn *sql.Conn) ([]string, error) {
	kinds := map[string]string{}
	err := schema.EachRow(ctx, conn, "SHOW FULL TABLES", nil, func(rows *sql.Rows) error {
		var n, kind string
		if err := rows.Scan(&n, &kind); err != nil {
			return err
		}
		kinds[n] = kind
		return nil
	})
	if err != nil {
		return nil, err
	}
	var tables []string
	for n, kind := range kinds {
		if kind == "VIEW" {
			v, err := schema.ShowCreate(ctx, conn, "SHOW CREATE VIEW "+quote(n))
			if err != nil {
				return nil, err
			}
			s.Objects["VIEW "+n] = s.definer("VIEW "+n, s.norm(v["Create View"]))
			continue
		}
		tables = append(tables, n)
		v, err := schema.ShowCreate(ctx, conn, "SHOW CREATE TABLE "+quote(n))
		if err != nil {
			return nil, err
		}
		s.Objects["TABLE "+n] = s.norm(v["Create Table"])
		var count int64
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quote(n)).Scan(&count); err != nil {
			return nil, err
		}
		s.Rows[n] = count
	}
	sort.Strings(tables)
	return tables, nil
}

// takeChecksums reads CHECKSUM TABLE of tables.
func (s *Snapshot) takeChecksums(ctx context.Context, conn *sql.Conn, tables []string) error {
	if len(tables) == 0 {
		return nil
	}
	q := make([]string, len(tables))
	for i, t := range tables {
		q[i] = quote(t)
	}
	sums, err := schema.Checksums(ctx, conn, "CHECKSUM TABLE "+strings.Join(q, ", "))
	if err != nil {
		return err
	}
	for n, sum := range sums {
		s.Checksums[strings.TrimPrefix(n, s.Database+".")] = sum
	}
	return nil
}

// takeAutoIncrement reads the next AUTO_INCREMENT value of every table
// with an AUTO_INCREMENT column. MySQL shows NULL for a table no row was
// ever written to, whose next value is 1 (MariaDB shows 1).
func (s *Snapshot) takeAutoIncrement(ctx context.Context, conn *sql.Conn) error {
	return schema.EachRow(ctx, conn, `SELECT t.TABLE_NAME, COALESCE(t.AUTO_INCREMENT, 1) FROM information_schema.TABLES t
		JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
		WHERE t.TABLE_SCHEMA = ? AND t.TABLE_TYPE = 'BASE TABLE' AND c.EXTRA LIKE '%auto_increment%'`, []any{s.Database}, func(rows *sql.Rows) error {
		var n string
		var ai int64
		if err := rows.Scan(&n, &ai); err != nil {
			return err
		}
		s.AutoIncrement[n] = ai
		return nil
	})
}

// programs are the kinds of stored program a snapshot reads: how to list
// them and how to show one's definition.
var programs = []struct{ kind, list, show, col string }{
	{"TRIGGER", "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", "SHOW CREATE TRIGGER ", "SQL Original Statement"},
	{"PROCEDURE", "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? AND ROUTINE_TYPE = 'PROCEDURE'", "SHOW CREATE PROCEDURE ", "Create Procedure"},
	{"FUNCTION", "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? AND ROUTINE_TYPE = 'FUNCTION'", "SHOW CREATE FUNCTION ", "Create Function"},
	{"EVENT", "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", "SHOW CREATE EVENT ", "Create Event"},
}

// takeObjects reads the definitions of the database's triggers, routines
// and events, each with the sql_mode it was created under.
func (s *Snapshot) takeObjects(ctx context.Context, conn *sql.Conn) error {
	for _, o := range programs {
		var names []string
		err := schema.EachRow(ctx, conn, o.list, []any{s.Database}, func(rows *sql.Rows) error {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range names {
			v, err := schema.ShowCreate(ctx, conn, o.show+quote(n))
			if err != nil {
				return err
			}
			s.Objects[o.kind+" "+n] = s.definer(o.kind+" "+n, s.norm(v[o.col])) + " /* sql_mode=" + v["sql_mode"] + " */"
		}
	}
	return nil
}

// RelevanceTerms are the words every FULLTEXT index is searched for.
var RelevanceTerms = []string{"database", "template", "reset", "tests", "server", "word"}

// takeRelevance searches every FULLTEXT index of database name for
// RelevanceTerms.
func (s *Snapshot) takeRelevance(ctx context.Context, conn *sql.Conn, name string) error {
	type index struct{ table, name, cols, first string }
	var idx []index
	err := schema.EachRow(ctx, conn, `SELECT st.TABLE_NAME, st.INDEX_NAME,
			GROUP_CONCAT(CONCAT('`+"`"+`', REPLACE(st.COLUMN_NAME, '`+"`"+`', '`+"``"+`'), '`+"`"+`') ORDER BY st.SEQ_IN_INDEX),
			(SELECT c.COLUMN_NAME FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = st.TABLE_SCHEMA AND c.TABLE_NAME = st.TABLE_NAME AND c.ORDINAL_POSITION = 1)
		FROM information_schema.STATISTICS st WHERE st.TABLE_SCHEMA = ? AND st.INDEX_TYPE = 'FULLTEXT'
		GROUP BY st.TABLE_SCHEMA, st.TABLE_NAME, st.INDEX_NAME`, []any{name}, func(rows *sql.Rows) error {
		var i index
		if err := rows.Scan(&i.table, &i.name, &i.cols, &i.first); err != nil {
			return err
		}
		idx = append(idx, i)
		return nil
	})
	if err != nil {
		return err
	}
	for _, i := range idx {
		for _, term := range RelevanceTerms {
			var hits []string
			match := "MATCH (" + i.cols + ") AGAINST (? IN NATURAL LANGUAGE MODE)"
			err := schema.EachRow(ctx, conn, "SELECT CONCAT("+quote(i.first)+", '=', ROUND("+match+", 6)) FROM "+quote(i.table)+
				" WHERE "+match+" ORDER BY "+match+" DESC, "+quote(i.first), []any{term, term, term}, func(rows *sql.Rows) error {
				var h string
				if err := rows.Scan(&h); err != nil {
					return err
				}
				hits = append(hits, h)
				return nil
			})
			if err != nil {
				return err
			}
			s.Relevance[i.table+"."+i.name+" "+term] = strings.Join(hits, " ")
		}
	}
	return nil
}

// takeStats reads the optimizer statistics of database name.
func (s *Snapshot) takeStats(ctx context.Context, conn *sql.Conn, name string) error {
	queries := []struct{ q, key string }{
		{`SELECT table_name, CONCAT_WS(' ', n_rows, clustered_index_size, sum_of_other_index_sizes)
			FROM mysql.innodb_table_stats WHERE database_name = ?`, ""},
		{`SELECT CONCAT(table_name, '.', index_name), GROUP_CONCAT(CONCAT(stat_name, '=', stat_value) ORDER BY stat_name SEPARATOR ' ')
			FROM mysql.innodb_index_stats WHERE database_name = ? GROUP BY table_name, index_name`, ""},
	}
	for _, q := range queries {
		err := schema.EachRow(ctx, conn, q.q, []any{name}, func(rows *sql.Rows) error {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			s.Stats[q.key+k] = v
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// definer records the definer of object key and returns its definition
// without it.
func (s *Snapshot) definer(key, def string) string {
	if m := definerClause.FindStringSubmatch(def); m != nil {
		s.Definers[key] = m[1]
		def = strings.Replace(def, m[0], "DEFINER=<definer>", 1)
	}
	return def
}

// Diff lists every difference between two snapshots; none means equal.
func Diff(want, got *Snapshot) []string {
	d := diffDefiners(want.Definers, got.Definers)
	d = append(d, diffObjects(want.Objects, got.Objects)...)
	d = append(d, diffTexts("statistics", want.Stats, got.Stats)...)
	d = append(d, diffTexts("relevance of", want.Relevance, got.Relevance)...)
	d = append(d, diffCounts("rows", want.Rows, got.Rows)...)
	d = append(d, diffCounts("checksum", want.Checksums, got.Checksums)...)
	d = append(d, diffCounts("AUTO_INCREMENT", want.AutoIncrement, got.AutoIncrement)...)
	sort.Strings(d)
	return d
}

// diffDefiners lists where the definers of the objects both snapshots have
// do not correspond one-to-one (each database has its own owner).
func diffDefiners(want, got map[string]string) []string {
	var d []string
	fwd, back := map[string]string{}, map[string]string{}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			continue // the object is missing or differs: diffObjects reports it
		}
		if prev, seen := fwd[w]; seen && prev != g {
			d = append(d, fmt.Sprintf("%s has definer %s where the others defined by %s have %s", k, g, w, prev))
		}
		if prev, seen := back[g]; seen && prev != w {
			d = append(d, fmt.Sprintf("%s has definer %s, which also stands for %s", k, g, prev))
		}
		fwd[w], back[g] = g, w
	}
	return d
}

// diffObjects lists the objects missing, differing or extra in got.
func diffObjects(want, got map[string]string) []string {
	var d []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s missing", k))
		case g != w:
			d = append(d, fmt.Sprintf("%s differs:\n  want %s\n  got  %s", k, w, g))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s is extra", k))
		}
	}
	return d
}

// diffCounts lists the numbers (what of each key) missing, differing or
// extra in g.
func diffCounts(what string, w, g map[string]int64) []string {
	var d []string
	for k, wv := range w {
		if gv, ok := g[k]; !ok || gv != wv {
			d = append(d, fmt.Sprintf("%s of %s: want %d, got %d (present=%v)", what, k, wv, gv, ok))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			d = append(d, fmt.Sprintf("%s of %s: extra value %d", what, k, gv))
		}
	}
	return d
}

// diffTexts lists the texts (what each key) missing, differing or extra
// in g.
func diffTexts(what string, w, g map[string]string) []string {
	var d []string
	for k, wv := range w {
		if gv, ok := g[k]; !ok || gv != wv {
			d = append(d, fmt.Sprintf("%s %s: want %q, got %q (present=%v)", what, k, wv, gv, ok))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			d = append(d, fmt.Sprintf("%s %s: extra %q", what, k, gv))
		}
	}
	return d
}

func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
