package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/testdbd/testdbd/internal/filename"
	"github.com/testdbd/testdbd/schema"
)

// settleStats follows an ALTER TABLE … AUTO_INCREMENT of tables that hold
// rows, which made InnoDB recompute their statistics: where the figures
// came out as the template's, the rows get their copied mark back
// (schema.StatsSentinel) and nothing else is needed, in one round trip
// that also names the others; where they differ, the template's go back
// (schema.StatsSQL, which renames the table: its triggers are dropped and
// re-created around it). It returns the tables renamed.
func (rs *resetter) settleStats(ctx context.Context, tables []*schema.Table) ([]*schema.Table, error) {
	s, db := rs.t.Schema, schema.Quote(rs.t.Database)
	var names sql.NullString
	settle := "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n" + s.StatsSettleSQL(rs.t.Database, tables) +
		";\nSET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
	err := retrying(ctx, func() error { return queryOne(ctx, rs.conn, settle, &names) })
	if err != nil {
		return nil, fmt.Errorf("compare statistics: %w", err)
	}
	differs := map[string]bool{}
	for _, name := range strings.Split(names.String, ",") {
		if decoded, err := filename.Decode(name); err == nil {
			name = decoded
		}
		differs[name] = true
	}
	var differ []*schema.Table
	for _, tbl := range tables {
		if differs[tbl.Name] {
			differ = append(differ, tbl)
		}
	}
	if len(differ) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n")
	triggers := s.TriggersOf(differ)
	for _, tr := range triggers {
		fmt.Fprintf(&b, "DROP TRIGGER %s.%s;\n", db, schema.Quote(tr.Name))
	}
	stats, statsDDL := s.StatsSQL(rs.t.Database, differ)
	b.WriteString(stats)
	ddl := statsDDL + 2*len(triggers)
	if len(triggers) > 0 {
		fmt.Fprintf(&b, "USE %s;\n", db)
		if err := schema.WriteObjects(&b, triggers, rs.t.Owner); err != nil {
			return nil, err
		}
	}
	b.WriteString("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\n")
	b.WriteString(schema.ResetSession)
	return differ, rs.execRetrying(ctx, ddl, b.String())
}

// execRetrying runs a batch that writes the statistics tables every
// database on the server shares, where concurrent resets can deadlock:
// up to 5 times while the server resolves it by failing the batch.
func (rs *resetter) execRetrying(ctx context.Context, ddl int, q string) error {
	return retrying(ctx, func() error { return rs.t.DDL.Exec(ctx, rs.conn, ddl, q) })
}

// retrying runs fn, which writes the statistics tables every database on
// the server shares, where concurrent resets can deadlock: up to 5 times
// while the server resolves it by failing fn.
func retrying(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt == 4 || !Retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(1+attempt) * time.Millisecond)
	}
}

// queryOne runs q, a batch of which one statement returns one row of
// len(dest) columns, on conn, and scans that row into dest.
func queryOne(ctx context.Context, conn *sql.Conn, q string, dest ...any) error {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	found := false
	for {
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			found = true
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !found {
		return errors.New("the batch returned no row")
	}
	return nil
}

// Retryable reports a deadlock or lock wait the server resolved by failing
// the statement: trying again is the documented remedy.
func Retryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1205, 1213: // lock wait timeout, deadlock
			return true
		case 1025: // error on rename, e.g. "Lock deadlock; Retry transaction"
			return strings.Contains(me.Message, "deadlock") || strings.Contains(me.Message, "Deadlock")
		}
	}
	return false
}
