package strategies

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/schema"
)

// brokenXA, set only by tests, makes resets leave the XA transactions a
// test left prepared alone, to show that the property test catches them.
var brokenXA bool

// ExplainLockWait adds to err, when it is a lock wait timeout, the XA
// transactions the server holds prepared: a test that left one prepared
// (XA PREPARE without XA COMMIT or XA ROLLBACK) leaves it, with its locks,
// when its session ends. Resets roll back those the binary log shows wrote
// to their database (Target.Binlog); one the log does not show (the server
// runs without it) is left to whoever knows its xid.
func ExplainLockWait(ctx context.Context, db *sql.DB, err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1205 {
		return err
	}
	var xids []string
	qerr := schema.EachRow(context.WithoutCancel(ctx), db, "XA RECOVER", nil, func(rows *sql.Rows) error {
		var format, gtridLen, bqualLen int64
		var data string
		if err := rows.Scan(&format, &gtridLen, &bqualLen, &data); err != nil {
			return err
		}
		xids = append(xids, "'"+data+"'")
		return nil
	})
	if qerr != nil {
		return err
	}
	if len(xids) == 0 {
		return err
	}
	return testdbd.Wrapf(err, "the server holds prepared XA transactions (%s), whose locks are likely in the way: a test "+
		"left an XA transaction prepared (XA PREPARE without XA COMMIT or XA ROLLBACK), which outlives its session; end it "+
		"with XA ROLLBACK <xid> and finish XA transactions within the test", strings.Join(xids, ", "))
}
