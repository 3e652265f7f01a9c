package templates

import (
	"bufio"
	"compress/gzip"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

// An image is a built template made portable: its captured definition and
// its rows, as testdbd writes them (gzip of one JSON header line, then SQL
// INSERT statements, one per line). The template cache keeps images, and a
// template that was not built from migrations the daemon can run again (an
// external build, a cached one) gets its replicas on other servers from
// one.

// ImageFormat is the version of the image layout; an image of another
// format is not read.
const ImageFormat = 1

// ImageHeader is an image's first line.
type ImageHeader struct {
	Format     int
	Testdbd    string // testdbd's version that wrote it
	Engine     string // the engine it was built on, e.g. "mariadb 10.11.19"
	Hash       string
	Name       string
	Source     string // how the template was made: SourceMigrations or SourceExternal
	Version    int64
	Migrations []string
	Schema     *schema.Schema
	// TableStats and IndexStats are the template's optimizer statistics as
	// its server keeps them (the rows of mysql.innodb_table_stats and
	// innodb_index_stats, database name left out), which a load puts back
	// instead of analyzing the tables again: clones copy them from there.
	TableStats []StatsRow
	IndexStats []StatsRow
	Written    time.Time
}

// StatsRow is one row of mysql.innodb_table_stats or innodb_index_stats,
// its columns as text (NULL as nil), database_name left out.
type StatsRow []*string

// Compatible says why an image cannot be used on engine, or "".
func (h *ImageHeader) Compatible(engine testdbd.Engine, hash string) string {
	switch {
	case h.Format != ImageFormat:
		return fmt.Sprintf("image format %d, this testdbd reads %d", h.Format, ImageFormat)
	case h.Testdbd != testdbd.Version:
		return fmt.Sprintf("written by testdbd %s, this is %s", h.Testdbd, testdbd.Version)
	case h.Engine != engine.String():
		return fmt.Sprintf("built on %s, the server is %s", h.Engine, engine)
	case h.Hash != hash:
		return "its hash is " + Short(h.Hash)
	case h.Schema == nil:
		return "it has no definition"
	}
	return ""
}

// insertBytes is about how much SQL one INSERT statement of an image holds.
const insertBytes = 1 << 20

// WriteImage writes the image of the template database hdr.Schema
// describes, read through db, to w. Rows are read in primary-key order
// where there is one.
func WriteImage(ctx context.Context, db *sql.DB, hdr ImageHeader, w io.Writer) error {
	hdr.Format, hdr.Testdbd, hdr.Written = ImageFormat, testdbd.Version, time.Now().UTC()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// TIMESTAMP values are read and written in UTC, whatever the server's
	// time zone.
	if _, err := conn.ExecContext(ctx, "SET SESSION time_zone = '+00:00'"); err != nil {
		return err
	}
	if hdr.TableStats, err = readStats(ctx, conn, "innodb_table_stats", hdr.Schema.Database); err != nil {
		return err
	}
	if hdr.IndexStats, err = readStats(ctx, conn, "innodb_index_stats", hdr.Schema.Database); err != nil {
		return err
	}
	head, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriterSize(zw, 1<<16)
	_, _ = bw.Write(append(head, '\n')) // a failed write shows at Flush
	for _, t := range hdr.Schema.Tables {
		if t.Rows == 0 {
			continue
		}
		if err := writeRows(ctx, conn, hdr.Schema.Database, t, bw); err != nil {
			return fmt.Errorf("image of %s.%s: %w", hdr.Schema.Database, t.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// statsColumns are the columns of the statistics tables after
// database_name, as both engines have them.
var statsColumns = map[string]string{
	"innodb_table_stats": "table_name, last_update, n_rows, clustered_index_size, sum_of_other_index_sizes",
	"innodb_index_stats": "table_name, index_name, last_update, stat_name, stat_value, sample_size, stat_description",
}

// readStats reads database's rows of a statistics table.
func readStats(ctx context.Context, conn *sql.Conn, table, database string) ([]StatsRow, error) {
	cols := strings.Split(statsColumns[table], ", ")
	n := len(cols)
	exprs := make([]string, n)
	for i, c := range cols {
		exprs[i] = "CAST(" + c + " AS CHAR)" // times as the server writes them, whatever the driver's settings
	}
	var out []StatsRow
	err := schema.EachRow(ctx, conn, "SELECT "+strings.Join(exprs, ", ")+" FROM mysql."+table+" WHERE database_name = ?", []any{database}, func(rows *sql.Rows) error {
		vals := make([]sql.NullString, n)
		ptrs := make([]any, n)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := make(StatsRow, n)
		for i, v := range vals {
			if v.Valid {
				s := v.String
				row[i] = &s
			}
		}
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return out, nil
}

// statsInsert returns the statement that puts rows back under database,
// or "" when there are none.
func statsInsert(table, database string, rows []StatsRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "REPLACE INTO mysql.%s (database_name, %s) VALUES ", table, statsColumns[table])
	for i, row := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(" + sqlString(database))
		for _, v := range row {
			b.WriteByte(',')
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(sqlString(*v))
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// sqlString is s as a string literal that means the same whatever the
// session's sql_mode (hex, in utf8mb4).
func sqlString(s string) string {
	return "_utf8mb4 X'" + hex.EncodeToString([]byte(s)) + "'"
}

// column is one insertable column and how its values are read and written.
type column struct {
	name string
	kind int
}

// Value encodings.
const (
	asNumber = iota // written as read: integers, decimals, doubles, YEAR
	asHex           // bytes: X'…'
	asText          // text in utf8mb4: _utf8mb4 X'…'
)

// columns returns table's insertable columns (not generated) in order.
func columns(ctx context.Context, conn *sql.Conn, database, table string) ([]column, error) {
	var cols []column
	err := schema.EachRow(ctx, conn, `SELECT COLUMN_NAME, DATA_TYPE, EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, []any{database, table}, func(rows *sql.Rows) error {
		var name, typ, extra string
		if err := rows.Scan(&name, &typ, &extra); err != nil {
			return err
		}
		x := strings.ToUpper(extra)
		if strings.Contains(x, "VIRTUAL GENERATED") || strings.Contains(x, "STORED GENERATED") || strings.Contains(x, "PERSISTENT GENERATED") {
			return nil
		}
		c := column{name: name, kind: asText}
		switch strings.ToLower(typ) {
		case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "double", "real", "year", "float", "bit":
			c.kind = asNumber
		case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point", "linestring", "polygon",
			"multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection", "vector":
			c.kind = asHex
		}
		cols = append(cols, c)
		return nil
	})
	return cols, err
}

// selectExpr is how column c is read for an image.
func selectExpr(c column, typ string) string {
	q := schema.Quote(c.name)
	switch c.kind {
	case asHex:
		return "HEX(" + q + ")"
	case asText:
		return "HEX(CONVERT(" + q + " USING utf8mb4))"
	}
	switch typ {
	case "float":
		// FLOAT's text form may round; as a DOUBLE it is exact, and the
		// DOUBLE goes back to the same FLOAT.
		return "CAST(" + q + " AS DOUBLE)"
	case "bit":
		return "CAST(" + q + " AS UNSIGNED)"
	}
	return q
}

// writeRows writes one table's rows as INSERT statements.
func writeRows(ctx context.Context, conn *sql.Conn, database string, t *schema.Table, w *bufio.Writer) error {
	cols, query, prefix, err := rowStatements(ctx, conn, database, t.Name)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var stmt strings.Builder
	flush := func() {
		if stmt.Len() > 0 {
			_, _ = w.WriteString(stmt.String()) // a failed write shows at Flush
			_, _ = w.WriteString(";\n")
			stmt.Reset()
		}
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if stmt.Len() == 0 {
			stmt.WriteString(prefix)
		} else {
			stmt.WriteByte(',')
		}
		appendRow(&stmt, cols, vals)
		if stmt.Len() >= insertBytes {
			flush()
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	flush()
	return nil
}

// rowStatements returns table's insertable columns, the query that reads
// its rows for an image (in primary-key order where there is one), and the
// start of the INSERT statements that write them back.
func rowStatements(ctx context.Context, conn *sql.Conn, database, table string) (cols []column, query, insert string, err error) {
	cols, types, err := columnsWithTypes(ctx, conn, database, table)
	if err != nil {
		return nil, "", "", err
	}
	exprs := make([]string, len(cols))
	names := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = selectExpr(c, types[i])
		names[i] = schema.Quote(c.name)
	}
	order := ""
	if pk, err := primaryKey(ctx, conn, database, table); err != nil {
		return nil, "", "", err
	} else if len(pk) > 0 {
		order = " ORDER BY " + strings.Join(pk, ", ")
	}
	query = "SELECT " + strings.Join(exprs, ", ") + " FROM " + schema.Quote(database) + "." + schema.Quote(table) + order
	insert = "INSERT INTO " + schema.Quote(table) + " (" + strings.Join(names, ", ") + ") VALUES "
	return cols, query, insert, nil
}

// appendRow appends one row, as selectExpr read it, to an INSERT statement:
// (v1,v2,...).
func appendRow(stmt *strings.Builder, cols []column, vals []sql.RawBytes) {
	stmt.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			stmt.WriteByte(',')
		}
		switch {
		case v == nil:
			stmt.WriteString("NULL")
		case cols[i].kind == asNumber:
			stmt.Write(v)
		case cols[i].kind == asHex:
			stmt.WriteString("X'")
			stmt.Write(v)
			stmt.WriteByte('\'')
		default:
			stmt.WriteString("_utf8mb4 X'")
			stmt.Write(v)
			stmt.WriteByte('\'')
		}
	}
	stmt.WriteByte(')')
}

// columnsWithTypes is columns with each column's DATA_TYPE, lower case.
func columnsWithTypes(ctx context.Context, conn *sql.Conn, database, table string) ([]column, []string, error) {
	cols, err := columns(ctx, conn, database, table)
	if err != nil {
		return nil, nil, err
	}
	types := make([]string, len(cols))
	err = schema.EachRow(ctx, conn, `SELECT COLUMN_NAME, LOWER(DATA_TYPE) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, []any{database, table}, func(rows *sql.Rows) error {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return err
		}
		for i, c := range cols {
			if c.name == name {
				types[i] = typ
			}
		}
		return nil
	})
	return cols, types, err
}

// primaryKey returns table's primary key columns, quoted, in key order.
func primaryKey(ctx context.Context, conn *sql.Conn, database, table string) ([]string, error) {
	var pk []string
	err := schema.EachRow(ctx, conn, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, []any{database, table}, func(rows *sql.Rows) error {
		var c string
		if err := rows.Scan(&c); err != nil {
			return err
		}
		pk = append(pk, schema.Quote(c))
		return nil
	})
	return pk, err
}

// ReadImageHeader reads an image's header; the returned reader yields its
// SQL. Close the closer when done.
func ReadImageHeader(r io.Reader) (*ImageHeader, *bufio.Reader, io.Closer, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("not a template image: %w", err)
	}
	br := bufio.NewReaderSize(zr, 1<<16)
	line, err := br.ReadBytes('\n')
	if err != nil {
		_ = zr.Close()
		return nil, nil, nil, fmt.Errorf("template image header: %w", err)
	}
	var hdr ImageHeader
	if err := json.Unmarshal(line, &hdr); err != nil {
		_ = zr.Close()
		return nil, nil, nil, fmt.Errorf("template image header: %w", err)
	}
	if hdr.Schema != nil {
		hdr.Schema.Index()
	}
	return &hdr, br, zr, nil
}

// LoadImage creates database on inst from an image (its header already
// read, sql the rest): the tables, the rows, then views, triggers, routines
// and events owned by a new locked owner account, like a build's. The
// loaded tables' checksums must equal the image's, or the load fails and
// nothing of it remains. The template's optimizer statistics are put back
// from the image (not analyzed again), and the result is captured like a
// build's.
func LoadImage(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, database string, hdr *ImageHeader, rows *bufio.Reader, opts BuildOptions) (_ *Built, err error) {
	start := time.Now()
	s := hdr.Schema
	opts.progress(PhaseRestoring, 0, 0, "")
	owner, err := accounts.CreateOwner(ctx, inst.DB, "tdbt_", database)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			opts.discard(ctx, inst, ddl, database, owner.User)
		}
	}()
	conn, err := inst.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer func() {
		if err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if err := createTables(ctx, conn, ddl, database, s); err != nil {
		return nil, err
	}
	if err := loadRows(ctx, conn, rows); err != nil {
		return nil, err
	}
	if err := createObjects(ctx, conn, ddl, s, owner.User); err != nil {
		return nil, err
	}
	if err := verifyLoaded(ctx, conn, database, s); err != nil {
		return nil, err
	}
	if err := loadStats(ctx, conn, database, hdr); err != nil {
		return nil, err
	}
	opts.progress(PhaseCapturing, 0, 0, "")
	captured, err := schema.Capture(ctx, inst.DB, database, owner.User)
	if err != nil {
		return nil, err
	}
	if changes := schema.Diff(s, captured); len(changes) > 0 {
		return nil, fmt.Errorf("the loaded template differs from its image: %s", strings.Join(changes, "; "))
	}
	return &Built{Database: database, Owner: owner.User, Schema: captured, Capture: time.Since(start)}, nil
}

// createTables creates database with s's character set and its tables,
// and leaves conn's session set for loading rows (schema.CopySession, and
// times in UTC).
func createTables(ctx context.Context, conn *sql.Conn, ddl *strategies.DDLCounter, database string, s *schema.Schema) error {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE DATABASE %s CHARACTER SET %s COLLATE %s;\nUSE %s;\n%s;\n",
		schema.Quote(database), s.Charset, s.Collation, schema.Quote(database), schema.CreateSession)
	for _, t := range s.Tables {
		b.WriteString(t.Create)
		b.WriteString(";\n")
	}
	b.WriteString(schema.CopySession + ";\nSET SESSION time_zone = '+00:00'")
	if err := ddl.Exec(ctx, conn, 1+len(s.Tables), b.String()); err != nil {
		return fmt.Errorf("create the tables: %w", err)
	}
	return nil
}

// loadRows runs an image's INSERT statements, a line each, sent a few MB
// at a time.
func loadRows(ctx context.Context, conn *sql.Conn, rows *bufio.Reader) error {
	var batch strings.Builder
	send := func() error {
		if batch.Len() == 0 {
			return nil
		}
		_, err := conn.ExecContext(ctx, batch.String())
		batch.Reset()
		return err
	}
	for {
		line, rerr := rows.ReadString('\n')
		if len(line) > 0 {
			batch.WriteString(line)
			if batch.Len() >= 4*insertBytes {
				if err := send(); err != nil {
					return fmt.Errorf("load rows: %w", err)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read the image: %w", rerr)
		}
	}
	if err := send(); err != nil {
		return fmt.Errorf("load rows: %w", err)
	}
	return nil
}

// createObjects creates s's views, triggers, routines and events with
// owner as their definer, and puts conn's session back as it was.
func createObjects(ctx context.Context, conn *sql.Conn, ddl *strategies.DDLCounter, s *schema.Schema, owner string) error {
	var b strings.Builder
	for _, v := range s.Views {
		create := strings.Replace(v.Create, schema.OwnerDefiner, "DEFINER=`"+owner+"`@`%`", 1)
		b.WriteString(create)
		b.WriteString(";\n")
	}
	for _, objs := range [][]schema.Object{s.Triggers, s.Routines, s.Events} {
		if err := schema.WriteObjects(&b, objs, owner); err != nil {
			return err
		}
	}
	b.WriteString(schema.ResetSession + "; SET SESSION time_zone = DEFAULT")
	if err := ddl.Exec(ctx, conn, len(s.Views)+len(s.Triggers)+len(s.Routines)+len(s.Events), b.String()); err != nil {
		return fmt.Errorf("create views, triggers, routines and events: %w", err)
	}
	return nil
}

// loadStats puts back the optimizer statistics the template had, from its
// image's header (not analyzed again: clones copy these rows, and a table
// loaded anew holds no deleted FULLTEXT words that a rebuild would drop).
// READ COMMITTED takes no gap locks in the tables every database shares.
func loadStats(ctx context.Context, conn *sql.Conn, database string, hdr *ImageHeader) error {
	stats := "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
	for _, st := range []struct {
		table string
		rows  []StatsRow
	}{{"innodb_table_stats", hdr.TableStats}, {"innodb_index_stats", hdr.IndexStats}} {
		if q := statsInsert(st.table, database, st.rows); q != "" {
			stats += ";\n" + q
		}
	}
	stats += ";\nSET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
	if _, err := conn.ExecContext(ctx, stats); err != nil {
		return fmt.Errorf("load the template's optimizer statistics: %w", err)
	}
	return nil
}

// verifyLoaded compares every loaded table's checksum and row count with
// the image's.
func verifyLoaded(ctx context.Context, conn *sql.Conn, database string, s *schema.Schema) error {
	for start := 0; start < len(s.Tables); start += 200 {
		chunk := s.Tables[start:min(start+200, len(s.Tables))]
		names := make([]string, len(chunk))
		for i, t := range chunk {
			names[i] = schema.Quote(database) + "." + schema.Quote(t.Name)
		}
		sums, err := schema.Checksums(ctx, conn, "CHECKSUM TABLE "+strings.Join(names, ", "))
		if err != nil {
			return err
		}
		for _, t := range chunk {
			if got := sums[database+"."+t.Name]; got != t.Checksum {
				return fmt.Errorf("table %s loaded with checksum %d, the image's is %d", t.Name, got, t.Checksum)
			}
		}
	}
	return nil
}
