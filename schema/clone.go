package schema

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
)

// CreateSession is the session state for creating a clone's tables: no
// foreign key checks (tables are created in any order) and strict mode, as
// migrations run under the servers' default sql_mode (MySQL stores a
// functional index over a NOT NULL column differently when the table is
// created without it: CHECKSUM TABLE of the clone would never match the
// template's).
const CreateSession = "SET SESSION FOREIGN_KEY_CHECKS = 0, sql_mode = 'STRICT_TRANS_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'"

// CopySession is the session state for copying rows, shared by clones and
// restores so that both copy rows the same way: no foreign key checks
// (tables are filled in any order), an sql_mode that keeps explicit zero
// AUTO_INCREMENT values as they are (what mysqldump does) and accepts the
// template's rows as they are.
const CopySession = "SET SESSION FOREIGN_KEY_CHECKS = 0, sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'"

// ResetSession puts an administrative session back the way it was opened
// after CreateSession, CopySession and WriteObjects changed it.
const ResetSession = "SET SESSION FOREIGN_KEY_CHECKS = 1, sql_mode = DEFAULT; SET NAMES utf8mb4"

// CloneSQL returns one multi-statement batch that creates database target
// as a copy of the template: tables with their foreign keys and
// AUTO_INCREMENT counters, the template's rows and optimizer statistics
// (StatsSQL), then views (in dependency order), triggers (after the rows,
// so they do not fire), routines and events, each object under the
// sql_mode it was created with.
//
// owner is the target's owner, named as the definer where the template
// names its own (OwnerDefiner).
//
// It also returns how many schema-changing statements the batch holds (see
// strategies.DDLCounter).
func (s *Schema) CloneSQL(target, owner string) (string, int, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE DATABASE %s CHARACTER SET %s COLLATE %s;\n", Quote(target), s.Charset, s.Collation)
	fmt.Fprintf(&b, "USE %s;\n", Quote(target))
	b.WriteString(CreateSession + ";\n")
	for _, t := range s.Tables {
		b.WriteString(t.Create)
		b.WriteString(";\n")
	}
	b.WriteString(CopySession + ";\n")
	for _, t := range s.Tables {
		if t.Rows > 0 {
			b.WriteString(s.CopyRowsSQL(t, target))
			b.WriteString(";\n")
		}
	}
	// The statistics live in tables every database on the server shares:
	// READ COMMITTED takes no gap locks there.
	stats, statsDDL := s.StatsSQL(target, s.Tables)
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n")
	b.WriteString(stats)
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\n")
	var big []*Table
	for _, t := range s.Tables {
		if t.Rows >= BigTableRows {
			big = append(big, t)
		}
	}
	b.WriteString(OpenSQL(target, big))
	for _, v := range s.Views {
		create, err := withOwner(v, owner)
		if err != nil {
			return "", 0, err
		}
		b.WriteString(create)
		b.WriteString(";\n")
	}
	for _, objs := range [][]Object{s.Triggers, s.Routines, s.Events} {
		if err := WriteObjects(&b, objs, owner); err != nil {
			return "", 0, err
		}
	}
	b.WriteString(ResetSession)
	ddl := 1 + len(s.Tables) + statsDDL + len(s.Views) + len(s.Triggers) + len(s.Routines) + len(s.Events)
	return b.String(), ddl, nil
}

// withOwner returns o's CREATE statement with owner as its definer where
// the capture put OwnerDefiner.
func withOwner(o Object, owner string) (string, error) {
	if !strings.Contains(o.Create, OwnerDefiner) {
		return o.Create, nil
	}
	if owner == "" {
		return "", fmt.Errorf("%s %s: the database's owner is needed as its definer", strings.ToLower(o.Kind), o.Name)
	}
	return strings.Replace(o.Create, OwnerDefiner, definerClause(owner), 1), nil
}

// WriteObjects writes the CREATE statements of objs to b, each under the
// sql_mode and collation it was created with and with owner as the
// definer where the capture named the database's owner. The session's
// default database must be the target.
func WriteObjects(b *strings.Builder, objs []Object, owner string) error {
	for _, o := range objs {
		create, err := withOwner(o, owner)
		if err != nil {
			return err
		}
		mode, err := settingLiteral(o.SQLMode)
		if err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToLower(o.Kind), o.Name, err)
		}
		set := "SET SESSION sql_mode = " + mode
		if o.Collation != "" {
			coll, err := settingLiteral(o.Collation)
			if err != nil {
				return fmt.Errorf("%s %s: %w", strings.ToLower(o.Kind), o.Name, err)
			}
			set += ", collation_connection = " + coll
		}
		b.WriteString(set)
		b.WriteString(";\n")
		b.WriteString(create)
		b.WriteString(";\n")
	}
	return nil
}

// CopyRowsSQL returns the statement that copies table t's template rows into
// database target.
func (s *Schema) CopyRowsSQL(t *Table, target string) string {
	return fmt.Sprintf("INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s",
		Quote(target), Quote(t.Name), t.Columns, t.Columns, Quote(s.Database), Quote(t.Name))
}

// BigTableRows is the template row count from which a table counts as big:
// a reset restores it by TRUNCATE and a copy, or by deleting the rows a
// test added (see strategies).
const BigTableRows = 1000

// OpenSQL returns statements that open tables of database target (nothing
// when there are none). Opening a table makes InnoDB load its statistics,
// and with them its running row count (NUM_ROWS), which a reset's delta
// restore reads.
func OpenSQL(target string, tables []*Table) string {
	var b strings.Builder
	for _, t := range tables {
		fmt.Fprintf(&b, "SELECT 1 FROM %s.%s LIMIT 0;\n", Quote(target), Quote(t.Name))
	}
	return b.String()
}

// AppendedKey returns the column of t's primary key when that key is its
// AUTO_INCREMENT column alone, with the first value above the template's
// rows (NaturalAutoIncrement): rows whose key is at least that value are
// rows added since the template. ok is false for other tables.
func (t *Table) AppendedKey() (column string, from int64, ok bool) {
	if t.AutoIncrementColumn == "" || !strings.Contains(t.Create, "PRIMARY KEY ("+Quote(t.AutoIncrementColumn)+")") {
		return "", 0, false
	}
	return t.AutoIncrementColumn, t.NaturalAutoIncrement, true
}

// Execer runs a batch holding a known number of schema-changing statements
// (strategies.DDLCounter does, counting them).
type Execer interface {
	Exec(ctx context.Context, db interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}, ddl int, query string) error
}

// Clone creates database target, owned by owner (see CloneSQL), from the
// template in one round trip through run. On failure it drops the
// half-made database.
func (s *Schema) Clone(ctx context.Context, db *sql.DB, run Execer, target, owner string) error {
	q, ddl, err := s.CloneSQL(target, owner)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := run.Exec(ctx, conn, ddl, q); err != nil {
		// The session may have stopped mid-batch with its settings changed.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = Drop(context.WithoutCancel(ctx), db, run, target)
		return fmt.Errorf("clone %s into %s: %w", s.Database, target, err)
	}
	return nil
}

// Drop drops a database if it exists, through run.
func Drop(ctx context.Context, db *sql.DB, run Execer, name string) error {
	if err := run.Exec(ctx, db, 1, "DROP DATABASE IF EXISTS "+Quote(name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
