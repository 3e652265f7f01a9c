package strategies

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/schema"
)

// endSessions ends the lease's sessions (Target.User), if it has an
// account, and says whether it locked the account: watching the directory
// (Target.Dir), the account stays locked until the new baseline is read (see
// unlock): a session started by a client that did not wait for the reset
// could otherwise change the schema between the restore and that reading,
// unseen.
func (rs *resetter) endSessions(ctx context.Context) (locked bool, err error) {
	if rs.t.User == "" {
		return false, nil
	}
	lock := rs.t.Dir != ""
	n, err := accounts.EndSessions(ctx, rs.conn, rs.t.Flavor, rs.t.User, lock)
	if err != nil {
		return lock, err
	}
	rs.r.SessionsEnded = n
	return lock, nil
}

// unlock unlocks the lease's account that endSessions locked, at the end of
// the reset; a failure to do so becomes the reset's error, *err, unless it
// has one already.
func (rs *resetter) unlock(ctx context.Context, err *error) {
	if uerr := accounts.Unlock(context.WithoutCancel(ctx), rs.conn, rs.t.User); uerr != nil && *err == nil {
		*err = uerr
	}
}

// rollBackXA rolls back the XA transactions left prepared that the binary
// log (Target.Binlog) shows wrote to the database. A test that left an XA
// transaction prepared left its changes, uncommitted, with their row locks,
// for anyone to commit later.
func (rs *resetter) rollBackXA(ctx context.Context) error {
	if rs.t.Binlog == nil || brokenXA {
		return nil
	}
	rolled, _, err := rs.t.Binlog.RollBackXA(ctx, rs.conn, rs.t.Database)
	if err != nil {
		return fmt.Errorf("roll back the XA transactions left prepared in %s: %w", rs.t.Database, err)
	}
	for _, id := range rolled {
		rs.r.XARolledBack = append(rs.r.XARolledBack, id.String())
	}
	return nil
}

// brokenXA, set only by tests, makes resets leave the XA transactions a
// test left prepared alone, to show that the property test catches them.
var brokenXA bool

// ExplainLockWait adds to err, when it is a lock wait timeout, how many
// XA transactions the server holds prepared: a test that left one prepared
// (XA PREPARE without XA COMMIT or XA ROLLBACK) leaves it, with its locks,
// when its session ends. Resets roll back those the binary log shows wrote
// to their database (Target.Binlog); one the log does not show (the server
// runs without it) is left to whoever knows its xid. The xids are not
// named: the error goes to a lease's caller, and another lease's xids are
// not its business.
func ExplainLockWait(ctx context.Context, db *sql.DB, err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1205 {
		return err
	}
	n := 0
	qerr := schema.EachRow(context.WithoutCancel(ctx), db, "XA RECOVER", nil, func(*sql.Rows) error {
		n++
		return nil
	})
	if qerr != nil || n == 0 {
		return err
	}
	return testdbd.Wrapf(err, "the server holds %d prepared XA transaction(s), whose locks are likely in the way: a test "+
		"left an XA transaction prepared (XA PREPARE without XA COMMIT or XA ROLLBACK), which outlives its session; "+
		"finish XA transactions within the test, on the session that prepared them", n)
}
