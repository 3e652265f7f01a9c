package schema

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Schema is a template's captured definition: everything needed to create a
// worker database that equals it, and to restore any table of one.
type Schema struct {
	Database  string // the template database
	Owner     string // the account captured as OwnerDefiner, or ""
	Charset   string // its default character set
	Collation string // its default collation
	Tables    []*Table
	Views     []Object // in dependency order
	Triggers  []Object // by table, timing, event, action order
	Routines  []Object // procedures and functions
	Events    []Object

	byName map[string]*Table
}

// Table is one base table of a template.
type Table struct {
	Name   string
	Create string // SHOW CREATE TABLE, unqualified, with AUTO_INCREMENT=<next>
	// Columns are the insertable (non-generated) columns, quoted and joined,
	// ready for INSERT ... SELECT.
	Columns string
	// AutoIncrement is the next AUTO_INCREMENT value, 0 when the table has
	// no AUTO_INCREMENT column.
	AutoIncrement int64
	// AutoIncrementColumn names the AUTO_INCREMENT column, if any.
	AutoIncrementColumn string
	// NaturalAutoIncrement is the counter an empty copy of the table has
	// after the template's rows are inserted into it: MAX(column)+1, or 1.
	// When it differs from AutoIncrement the counter must be set explicitly.
	NaturalAutoIncrement int64
	Rows                 int64 // rows in the template
	Checksum             int64 // CHECKSUM TABLE of the template's rows
	// TriggerTargets are the tables that this table's triggers (and the
	// routines they call) may write, transitively: restoring this table can
	// dirty them, so they are restored after it.
	TriggerTargets []string
	// HasTriggers is whether any trigger is defined on this table.
	HasTriggers bool
	// Fulltext is whether the table has a FULLTEXT index.
	Fulltext bool
	// Key is the table's primary key, in key order; empty when it has
	// none. A reset that knows which rows a test changed restores those
	// rows by it (see strategies).
	Key []KeyColumn
	// Cascades are the tables whose foreign keys to this table act on its
	// deletes or updates (CASCADE, SET NULL, SET DEFAULT): a change here
	// may change their rows too, and the server does not log every such
	// change as the rows it changed (MariaDB logs none).
	Cascades []string
}

// KeyColumn is one column of a primary key.
type KeyColumn struct {
	Name     string
	Ordinal  int    // its position among all the table's columns, from 0
	Type     string // DATA_TYPE: int, varchar, binary, …
	Unsigned bool
	// Charset is the column's character set; empty for a binary string or
	// a number.
	Charset string
}

// Object is a view, trigger, routine or event.
type Object struct {
	Kind      string // VIEW, TRIGGER, PROCEDURE, FUNCTION or EVENT
	Name      string
	Table     string // a trigger's table
	Create    string // the CREATE statement, unqualified
	SQLMode   string // the sql_mode it was created with (not views)
	Collation string // the collation_connection it was created with (not views)
}

// TriggersOf returns the triggers defined on tables, in the schema's order.
func (s *Schema) TriggersOf(tables []*Table) []Object {
	var out []Object
	for _, tr := range s.Triggers {
		if slices.ContainsFunc(tables, func(t *Table) bool { return t.Name == tr.Table }) {
			out = append(out, tr)
		}
	}
	return out
}

// Index makes Table find the tables of a Schema that was not captured
// here (one decoded from JSON).
func (s *Schema) Index() {
	s.byName = make(map[string]*Table, len(s.Tables))
	for _, t := range s.Tables {
		s.byName[t.Name] = t
	}
}

// Table returns the table with the given name.
func (s *Schema) Table(name string) (*Table, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Objects returns the views, triggers, routines and events.
func (s *Schema) Objects() []Object {
	var all []Object
	all = append(all, s.Views...)
	all = append(all, s.Triggers...)
	all = append(all, s.Routines...)
	all = append(all, s.Events...)
	return all
}

// OwnerDefiner stands, in a captured object's CREATE statement, for the
// DEFINER clause naming the database's owner (see Capture); a clone writes
// its own owner there.
const OwnerDefiner = "DEFINER=<owner>"

// definerClause is the DEFINER clause SHOW CREATE prints for account
// owner@'%' (owners are testdbd's generated names: no quoting needed).
func definerClause(owner string) string { return "DEFINER=`" + owner + "`@`%`" }

// Capture reads the definition of database schema through db (admin
// privileges). The session's default database is switched to schema on the
// connection it uses, so that views come out unqualified. owner, when not
// empty, is the account that owns the database's views, triggers, routines
// and events (their definer, with privileges on this database only): its
// DEFINER clauses are captured as OwnerDefiner, so that every clone names
// its own owner and a definer that is not the owner shows as a difference.
func Capture(ctx context.Context, db *sql.DB, schema, owner string) (*Schema, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return CaptureConn(ctx, conn, schema, owner)
}

// CaptureConn is Capture on a connection the caller holds (it switches the
// connection's default database to schema).
func CaptureConn(ctx context.Context, conn *sql.Conn, schema, owner string) (*Schema, error) {
	s := &Schema{Database: schema, Owner: owner, byName: map[string]*Table{}}
	if _, err := conn.ExecContext(ctx, "USE "+Quote(schema)); err != nil {
		return nil, fmt.Errorf("capture %s: %w", schema, err)
	}
	// MySQL 8 caches information_schema table statistics (AUTO_INCREMENT
	// among them); MariaDB has no such variable and reads them live.
	_, _ = conn.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0")
	if err := conn.QueryRowContext(ctx, `SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME
		FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, schema).Scan(&s.Charset, &s.Collation); err != nil {
		return nil, fmt.Errorf("capture %s: database defaults: %w", schema, err)
	}
	steps := []struct {
		what string
		fn   func(context.Context, *sql.Conn) error
	}{
		{"tables", s.captureTables},
		{"columns", s.captureColumns},
		{"keys", s.captureKeys},
		{"foreign keys", s.captureCascades},
		{"contents", s.captureContents},
		{"views", s.captureViews},
		{"triggers", s.captureTriggers},
		{"routines", s.captureRoutines},
		{"events", s.captureEvents},
	}
	for _, step := range steps {
		if err := step.fn(ctx, conn); err != nil {
			return nil, fmt.Errorf("capture %s: %s: %w", schema, step.what, err)
		}
	}
	if owner != "" {
		for _, objs := range [][]Object{s.Views, s.Triggers, s.Routines, s.Events} {
			for i := range objs {
				objs[i].Create = strings.ReplaceAll(objs[i].Create, definerClause(owner), OwnerDefiner)
			}
		}
	}
	s.linkTriggers()
	return s, nil
}

func (s *Schema) captureTables(ctx context.Context, conn *sql.Conn) error {
	var names []string
	err := EachRow(ctx, conn, "SHOW FULL TABLES", nil, func(rows *sql.Rows) error {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			return err
		}
		switch kind {
		case "BASE TABLE":
			names = append(names, name)
		case "VIEW", "SYSTEM VIEW":
		default:
			return fmt.Errorf("%s %s: only tables, views, triggers, routines and events can be cloned", strings.ToLower(kind), name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var n, create string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+Quote(name)).Scan(&n, &create); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		t := &Table{Name: name, Create: create, Fulltext: strings.Contains(create, "FULLTEXT KEY")}
		s.Tables = append(s.Tables, t)
		s.byName[name] = t
	}
	return nil
}

func (s *Schema) captureColumns(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT c.TABLE_NAME, c.COLUMN_NAME, c.EXTRA, COALESCE(t.AUTO_INCREMENT, 0)
		FROM information_schema.COLUMNS c
		JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
		WHERE c.TABLE_SCHEMA = ? AND t.TABLE_TYPE = 'BASE TABLE'
		ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION`, s.Database)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols := map[string][]string{}
	for rows.Next() {
		var table, col, extra string
		var ai int64
		if err := rows.Scan(&table, &col, &extra, &ai); err != nil {
			return err
		}
		t, ok := s.byName[table]
		if !ok {
			continue
		}
		x := strings.ToUpper(extra)
		if strings.Contains(x, "AUTO_INCREMENT") {
			if ai == 0 {
				// MySQL shows NULL for a table no row was ever written
				// to; its next value is 1, which MariaDB shows.
				ai = 1
			}
			t.AutoIncrement, t.AutoIncrementColumn = ai, col
		}
		if strings.Contains(x, "VIRTUAL GENERATED") || strings.Contains(x, "STORED GENERATED") ||
			strings.Contains(x, "PERSISTENT GENERATED") {
			continue
		}
		cols[table] = append(cols[table], Quote(col))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range s.Tables {
		t.Columns = strings.Join(cols[t.Name], ", ")
	}
	return nil
}

// captureKeys reads every table's primary key (Table.Key).
func (s *Schema) captureKeys(ctx context.Context, conn *sql.Conn) error {
	return EachRow(ctx, conn, `SELECT k.TABLE_NAME, k.COLUMN_NAME, c.ORDINAL_POSITION, LOWER(c.DATA_TYPE),
			LOWER(c.COLUMN_TYPE) LIKE '%unsigned%', COALESCE(c.CHARACTER_SET_NAME, '')
		FROM information_schema.KEY_COLUMN_USAGE k
		JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = k.TABLE_SCHEMA AND c.TABLE_NAME = k.TABLE_NAME
			AND c.COLUMN_NAME = k.COLUMN_NAME
		WHERE k.TABLE_SCHEMA = ? AND k.CONSTRAINT_NAME = 'PRIMARY'
		ORDER BY k.TABLE_NAME, k.ORDINAL_POSITION`, []any{s.Database}, func(rows *sql.Rows) error {
		var table string
		var col KeyColumn
		if err := rows.Scan(&table, &col.Name, &col.Ordinal, &col.Type, &col.Unsigned, &col.Charset); err != nil {
			return err
		}
		col.Ordinal-- // ORDINAL_POSITION counts from 1
		if t, ok := s.byName[table]; ok {
			t.Key = append(t.Key, col)
		}
		return nil
	})
}

// captureCascades reads which tables' foreign keys act on the changes of
// which (Table.Cascades).
func (s *Schema) captureCascades(ctx context.Context, conn *sql.Conn) error {
	return EachRow(ctx, conn, `SELECT DISTINCT REFERENCED_TABLE_NAME, TABLE_NAME
		FROM information_schema.REFERENTIAL_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = ? AND UNIQUE_CONSTRAINT_SCHEMA = CONSTRAINT_SCHEMA
			AND (DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION') OR UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION'))
		ORDER BY 1, 2`, []any{s.Database}, func(rows *sql.Rows) error {
		var parent, child string
		if err := rows.Scan(&parent, &child); err != nil {
			return err
		}
		if t, ok := s.byName[parent]; ok {
			t.Cascades = append(t.Cascades, child)
		}
		return nil
	})
}

// captureContents counts every table's rows and checksums them.
func (s *Schema) captureContents(ctx context.Context, conn *sql.Conn) error {
	for start := 0; start < len(s.Tables); start += 200 {
		chunk := s.Tables[start:min(start+200, len(s.Tables))]
		parts := make([]string, len(chunk))
		names := make([]string, len(chunk))
		for i, t := range chunk {
			parts[i] = fmt.Sprintf("SELECT %d, COUNT(*) FROM %s", start+i, Quote(t.Name))
			names[i] = Quote(t.Name)
		}
		err := EachRow(ctx, conn, strings.Join(parts, " UNION ALL "), nil, func(rows *sql.Rows) error {
			var i int
			var n int64
			if err := rows.Scan(&i, &n); err != nil {
				return err
			}
			s.Tables[i].Rows = n
			return nil
		})
		if err != nil {
			return err
		}
		sums, err := Checksums(ctx, conn, "CHECKSUM TABLE "+strings.Join(names, ", "))
		if err != nil {
			return err
		}
		for _, t := range chunk {
			t.Checksum = sums[s.Database+"."+t.Name]
		}
	}
	for _, t := range s.Tables {
		if t.AutoIncrementColumn == "" {
			continue
		}
		t.NaturalAutoIncrement = 1
		if t.Rows > 0 {
			var max sql.NullInt64
			q := fmt.Sprintf("SELECT MAX(%s) FROM %s", Quote(t.AutoIncrementColumn), Quote(t.Name))
			if err := conn.QueryRowContext(ctx, q).Scan(&max); err != nil {
				return err
			}
			t.NaturalAutoIncrement = max.Int64 + 1
		}
	}
	return nil
}

// Checksums runs a CHECKSUM TABLE statement and returns the checksums by
// "db.table".
func Checksums(ctx context.Context, conn interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string) (map[string]int64, error) {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var sum sql.NullInt64
		if err := rows.Scan(&name, &sum); err != nil {
			return nil, err
		}
		out[name] = sum.Int64
	}
	return out, rows.Err()
}

func (s *Schema) captureViews(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME`, s.Database)
	if err != nil {
		return err
	}
	names, err := scanStrings(rows)
	if err != nil {
		return err
	}
	views := map[string]Object{}
	for _, name := range names {
		var n, create, cs, coll string
		if err := conn.QueryRowContext(ctx, "SHOW CREATE VIEW "+Quote(name)).Scan(&n, &create, &cs, &coll); err != nil {
			return fmt.Errorf("view %s: %w", name, err)
		}
		views[name] = Object{Kind: "VIEW", Name: name, Create: create}
	}
	// Views on views: create each after the views it mentions.
	done := map[string]bool{}
	var visit func(name string, depth int)
	visit = func(name string, depth int) {
		if done[name] || depth > len(names) {
			return
		}
		for _, ident := range identifiers(views[name].Create) {
			if _, ok := views[ident]; ok && ident != name {
				visit(ident, depth+1)
			}
		}
		if !done[name] {
			done[name] = true
			s.Views = append(s.Views, views[name])
		}
	}
	for _, name := range names {
		visit(name, 0)
	}
	return nil
}

func (s *Schema) captureTriggers(ctx context.Context, conn *sql.Conn) error {
	type trig struct{ name, table string }
	var list []trig
	err := EachRow(ctx, conn, `SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS
		WHERE TRIGGER_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER`, []any{s.Database},
		func(rows *sql.Rows) error {
			var t trig
			if err := rows.Scan(&t.name, &t.table); err != nil {
				return err
			}
			list = append(list, t)
			return nil
		})
	if err != nil {
		return err
	}
	for _, t := range list {
		vals, err := ShowCreate(ctx, conn, "SHOW CREATE TRIGGER "+Quote(t.name))
		if err != nil {
			return fmt.Errorf("trigger %s: %w", t.name, err)
		}
		s.Triggers = append(s.Triggers, Object{Kind: "TRIGGER", Name: t.name, Table: t.table,
			Create: vals["SQL Original Statement"], SQLMode: vals["sql_mode"], Collation: vals["collation_connection"]})
	}
	return nil
}

func (s *Schema) captureRoutines(ctx context.Context, conn *sql.Conn) error {
	var kinds, names []string
	err := EachRow(ctx, conn, `SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES
		WHERE ROUTINE_SCHEMA = ? AND ROUTINE_TYPE IN ('PROCEDURE','FUNCTION') ORDER BY ROUTINE_TYPE, ROUTINE_NAME`, []any{s.Database},
		func(rows *sql.Rows) error {
			var k, n string
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			kinds, names = append(kinds, k), append(names, n)
			return nil
		})
	if err != nil {
		return err
	}
	for i, name := range names {
		vals, err := ShowCreate(ctx, conn, "SHOW CREATE "+kinds[i]+" "+Quote(name))
		if err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToLower(kinds[i]), name, err)
		}
		create := vals["Create Procedure"]
		if kinds[i] == "FUNCTION" {
			create = vals["Create Function"]
		}
		if create == "" {
			return fmt.Errorf("%s %s: no definition visible (the admin user lacks privileges?)", strings.ToLower(kinds[i]), name)
		}
		s.Routines = append(s.Routines, Object{Kind: kinds[i], Name: name, Create: create,
			SQLMode: vals["sql_mode"], Collation: vals["collation_connection"]})
	}
	return nil
}

func (s *Schema) captureEvents(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY EVENT_NAME`, s.Database)
	if err != nil {
		return err
	}
	names, err := scanStrings(rows)
	if err != nil {
		return err
	}
	for _, name := range names {
		vals, err := ShowCreate(ctx, conn, "SHOW CREATE EVENT "+Quote(name))
		if err != nil {
			return fmt.Errorf("event %s: %w", name, err)
		}
		s.Events = append(s.Events, Object{Kind: "EVENT", Name: name, Create: vals["Create Event"],
			SQLMode: vals["sql_mode"], Collation: vals["collation_connection"]})
	}
	return nil
}

// linkTriggers computes, for every table, the tables its triggers may write:
// every table named in a trigger's body or in the body of a routine it
// names, transitively. Over-approximating is safe (more tables restored).
func (s *Schema) linkTriggers() {
	routines := map[string]Object{}
	for _, r := range s.Routines {
		routines[r.Name] = r
	}
	// mentions returns the tables named in body, following routine calls.
	var mentions func(body string, seen map[string]bool) []string
	mentions = func(body string, seen map[string]bool) []string {
		var out []string
		for _, id := range identifiers(body) {
			if _, ok := s.byName[id]; ok {
				out = append(out, id)
			}
			if r, ok := routines[id]; ok && !seen[id] {
				seen[id] = true
				out = append(out, mentions(r.Create, seen)...)
			}
		}
		return out
	}
	direct := map[string]map[string]bool{}
	for _, tr := range s.Triggers {
		if t, ok := s.byName[tr.Table]; ok {
			t.HasTriggers = true
		}
		if direct[tr.Table] == nil {
			direct[tr.Table] = map[string]bool{}
		}
		for _, m := range mentions(tr.Create, map[string]bool{}) {
			if m != tr.Table {
				direct[tr.Table][m] = true
			}
		}
	}
	for _, t := range s.Tables {
		reach := map[string]bool{}
		var walk func(string)
		walk = func(name string) {
			for target := range direct[name] {
				if !reach[target] && target != t.Name {
					reach[target] = true
					walk(target)
				}
			}
		}
		walk(t.Name)
		for target := range reach {
			t.TriggerTargets = append(t.TriggerTargets, target)
		}
		sort.Strings(t.TriggerTargets)
	}
}

// identifiers returns the identifiers in SQL text: backquoted names and bare
// words. It over-approximates (keywords and column names come out too).
func identifiers(sqlText string) []string {
	var out []string
	for i := 0; i < len(sqlText); {
		c := sqlText[i]
		switch {
		case c == '`':
			j := i + 1
			var b strings.Builder
			for j < len(sqlText) {
				if sqlText[j] == '`' {
					if j+1 < len(sqlText) && sqlText[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(sqlText[j])
				j++
			}
			out = append(out, b.String())
			i = j + 1
		case c == '_' || c == '$' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)):
			j := i
			for j < len(sqlText) && (sqlText[j] == '_' || sqlText[j] == '$' || sqlText[j] >= 0x80 ||
				unicode.IsLetter(rune(sqlText[j])) || unicode.IsDigit(rune(sqlText[j]))) {
				j++
			}
			out = append(out, sqlText[i:j])
			i = j
		default:
			i++
		}
	}
	return out
}

// ShowCreate runs a SHOW CREATE statement and returns its single row by
// column name.
func ShowCreate(ctx context.Context, conn *sql.Conn, query string) (map[string]string, error) {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s returned no row", query)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, c := range cols {
		out[c] = vals[i].String
		if bodyColumns[c] {
			out[c] = trimBody(out[c])
		}
	}
	return out, rows.Err()
}

// bodyColumns are the SHOW CREATE columns that hold a routine's, trigger's
// or event's definition.
var bodyColumns = map[string]bool{
	"Create Procedure": true, "Create Function": true, "Create Event": true, "SQL Original Statement": true,
}

// trimBody removes the terminating semicolons (and the whitespace around
// them) from a definition. MySQL keeps the ";" that ended the statement in
// the body of an object whose body is one statement when it was created by
// a statement that was not the last of a multi-statement batch; MariaDB
// does not. The statement means the same either way.
func trimBody(def string) string {
	t := strings.TrimRight(def, "; \t\r\n")
	if !strings.Contains(def[len(t):], ";") {
		return def
	}
	return t
}

func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Quote quotes an identifier with backquotes.
func Quote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

var safeSetting = regexp.MustCompile(`^[A-Za-z0-9_,]*$`)

// settingLiteral quotes a sql_mode or collation value read from the server;
// such values are made of letters, digits, underscores and commas only.
func settingLiteral(v string) (string, error) {
	if !safeSetting.MatchString(v) {
		return "", fmt.Errorf("unexpected characters in session setting %q", v)
	}
	return "'" + v + "'", nil
}

// Queryer runs queries: a pool, a connection or a transaction.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// EachRow runs query with args on q and calls fn for every row, then closes
// the rows. It returns the first error: the query's, fn's or the rows'.
func EachRow(ctx context.Context, q Queryer, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
