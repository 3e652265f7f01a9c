package client

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DriverName is the database/sql driver this package registers, for the
// data source names TestTxDSN returns.
const DriverName = "testdbd"

func init() { sql.Register(DriverName, txDriver{}) }

// TestTxDSN leases a database for the test, as TestTx does, and returns a
// data source name for the "testdbd" database/sql driver (DriverName).
// Code under test that opens its own pool from a driver name and a DSN in
// its configuration needs no change:
//
//	db, err := sql.Open("testdbd", client.TestTxDSN(t, opts))
//
// Every connection opened with the DSN, by any number of sql.Open calls,
// is the same one MySQL connection inside one transaction, begun when
// TestTxDSN returns and rolled back at the end of the test; a transaction
// the code begins is a savepoint inside it. After the rollback the lease
// is reset with StrategyRollback, which rewinds AUTO_INCREMENT counters and
// restores anything that was committed anyway (DDL's implicit commit, an
// explicit COMMIT) from the template, saying so in the test log; then it
// is released.
//
// Statements on the connection run one at a time, and query results are
// read whole before they are returned, so that concurrent users of a pool
// cannot interleave on it. After the test the DSN opens nothing.
func TestTxDSN(tb testing.TB, opts TestOptions) string {
	tb.Helper()
	opts.Strategy = StrategyRollback
	opts.ReleaseFailed = true // the rollback removes the evidence anyway
	opts.Client = opts.mustClient(tb)
	l := TestLease(tb, opts)
	cfg, err := leaseConfig(l, opts.driverConfig(tb, l))
	if err != nil {
		tb.Fatalf("testdbd: %v", err)
	}
	s, err := openTxSession(cfg)
	if err != nil {
		tb.Fatalf("testdbd: connect to lease %s: %v", l.ID, err)
	}
	dsn := "testdbd-tx:" + l.ID
	txSessions.Store(dsn, s)
	tb.Cleanup(func() {
		txSessions.Delete(dsn)
		s.end()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := opts.Client.ResetLease(ctx, l.ID, StrategyRollback)
		if err != nil {
			tb.Errorf("testdbd: reset lease %s: %v", l.ID, err)
			return
		}
		if rep.FallbackReason != "" {
			tb.Logf("testdbd: the rollback reset did more than roll back: %s (tables %s)",
				rep.FallbackReason, strings.Join(rep.TablesReset, ", "))
		}
	})
	return dsn
}

// txSessions maps the DSNs TestTxDSN returned to their sessions.
var txSessions sync.Map // string → *txSession

// txSession is one MySQL connection inside one transaction, shared by
// every connection the driver opens for its DSN.
type txSession struct {
	mu         sync.Mutex // one statement at a time
	conn       driver.Conn
	ended      bool
	savepoints int
}

func openTxSession(cfg *mysql.Config) (*txSession, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s := &txSession{conn: conn}
	if err := s.exec(ctx, "START TRANSACTION"); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return s, nil
}

// end rolls the transaction back and closes the connection.
func (s *txSession) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = s.conn.(driver.ExecerContext).ExecContext(ctx, "ROLLBACK", nil)
	_ = s.conn.Close()
}

// exec runs a statement without arguments; the caller holds mu or owns s.
func (s *txSession) exec(ctx context.Context, query string) error {
	_, err := s.conn.(driver.ExecerContext).ExecContext(ctx, query, nil)
	return err
}

// errEnded is returned for connections whose test has ended.
var errEnded = fmt.Errorf("testdbd driver: the test this connection belongs to has ended, and its transaction was rolled back: %w", driver.ErrBadConn)

type txDriver struct{}

// Open returns a connection of the session TestTxDSN registered for name.
func (txDriver) Open(name string) (driver.Conn, error) {
	v, ok := txSessions.Load(name)
	if !ok {
		return nil, fmt.Errorf("testdbd driver: no test transaction %q: the driver opens the DSNs client.TestTxDSN returns, until the end of their test", name)
	}
	return &txConn{s: v.(*txSession)}, nil
}

// txConn is one database/sql connection of a session: a view of the
// session's one MySQL connection.
type txConn struct {
	s *txSession
}

var (
	_ driver.Conn               = (*txConn)(nil)
	_ driver.ConnBeginTx        = (*txConn)(nil)
	_ driver.ConnPrepareContext = (*txConn)(nil)
	_ driver.ExecerContext      = (*txConn)(nil)
	_ driver.QueryerContext     = (*txConn)(nil)
	_ driver.Pinger             = (*txConn)(nil)
	_ driver.NamedValueChecker  = (*txConn)(nil)
	_ driver.SessionResetter    = (*txConn)(nil)
	_ driver.Validator          = (*txConn)(nil)
)

// lock takes the session for one operation; it fails once the test ended.
func (c *txConn) lock() error {
	c.s.mu.Lock()
	if c.s.ended {
		c.s.mu.Unlock()
		return errEnded
	}
	return nil
}

func (c *txConn) unlock() { c.s.mu.Unlock() }

// Close closes this view; the session's connection stays open until the
// test ends.
func (c *txConn) Close() error { return nil }

func (c *txConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *txConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.lock(); err != nil {
		return nil, err
	}
	defer c.unlock()
	st, err := c.s.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &txStmt{s: c.s, st: st}, nil
}

func (c *txConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx starts a savepoint inside the session's transaction.
func (c *txConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if opts.Isolation != driver.IsolationLevel(sql.LevelDefault) {
		return nil, errors.New("testdbd driver: a transaction inside the test's transaction cannot choose its isolation level")
	}
	if err := c.lock(); err != nil {
		return nil, err
	}
	defer c.unlock()
	c.s.savepoints++
	name := fmt.Sprintf("tdb_sp%d", c.s.savepoints)
	if err := c.s.exec(ctx, "SAVEPOINT "+name); err != nil {
		return nil, err
	}
	return &txSavepoint{c: c, name: name}, nil
}

func (c *txConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.lock(); err != nil {
		return nil, err
	}
	defer c.unlock()
	return c.s.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *txConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.lock(); err != nil {
		return nil, err
	}
	defer c.unlock()
	rows, err := c.s.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return bufferRows(rows)
}

func (c *txConn) Ping(ctx context.Context) error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.unlock()
	return c.s.conn.(driver.Pinger).Ping(ctx)
}

func (c *txConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.s.conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// ResetSession keeps the session as it is: it is the test's transaction.
func (c *txConn) ResetSession(context.Context) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.ended {
		return driver.ErrBadConn
	}
	return nil
}

func (c *txConn) IsValid() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return !c.s.ended
}

// txSavepoint is a transaction the code under test began.
type txSavepoint struct {
	c    *txConn
	name string
}

func (t *txSavepoint) Commit() error   { return t.finish("RELEASE SAVEPOINT " + t.name) }
func (t *txSavepoint) Rollback() error { return t.finish("ROLLBACK TO SAVEPOINT " + t.name) }

func (t *txSavepoint) finish(stmt string) error {
	if err := t.c.lock(); err != nil {
		return err
	}
	defer t.c.unlock()
	return t.c.s.exec(context.Background(), stmt)
}

// txStmt is a prepared statement on the session's connection.
type txStmt struct {
	s  *txSession
	st driver.Stmt
}

var (
	_ driver.StmtExecContext  = (*txStmt)(nil)
	_ driver.StmtQueryContext = (*txStmt)(nil)
)

func (t *txStmt) lock() error {
	t.s.mu.Lock()
	if t.s.ended {
		t.s.mu.Unlock()
		return errEnded
	}
	return nil
}

func (t *txStmt) Close() error {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.ended {
		return nil // closed with the connection
	}
	return t.st.Close()
}

func (t *txStmt) NumInput() int { return t.st.NumInput() }

func (t *txStmt) Exec(args []driver.Value) (driver.Result, error) {
	return t.ExecContext(context.Background(), namedValues(args))
}

func (t *txStmt) Query(args []driver.Value) (driver.Rows, error) {
	return t.QueryContext(context.Background(), namedValues(args))
}

func (t *txStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := t.lock(); err != nil {
		return nil, err
	}
	defer t.s.mu.Unlock()
	return t.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (t *txStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := t.lock(); err != nil {
		return nil, err
	}
	defer t.s.mu.Unlock()
	rows, err := t.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	return bufferRows(rows)
}

func namedValues(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// resultSet is one result set of a query, read whole.
type resultSet struct {
	columns []string
	types   []columnType
	rows    [][]driver.Value
}

// columnType is what the driver said about a column.
type columnType struct {
	databaseType         string
	scanType             reflect.Type
	nullable, nullableOK bool
	length               int64
	lengthOK             bool
	precision, scale     int64
	decimalOK            bool
}

// bufferRows reads every result set of rows and closes it, so that the
// connection is free for the next statement.
func bufferRows(rows driver.Rows) (driver.Rows, error) {
	defer func() { _ = rows.Close() }()
	var out bufferedRows
	for {
		set := resultSet{columns: rows.Columns()}
		set.types = make([]columnType, len(set.columns))
		for i := range set.columns {
			set.types[i] = describeColumn(rows, i)
		}
		for {
			dest := make([]driver.Value, len(set.columns))
			err := rows.Next(dest)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			for i, v := range dest {
				if b, ok := v.([]byte); ok { // the driver reuses its buffer
					dest[i] = append([]byte(nil), b...)
				}
			}
			set.rows = append(set.rows, dest)
		}
		out.sets = append(out.sets, set)
		next, ok := rows.(driver.RowsNextResultSet)
		if !ok || !next.HasNextResultSet() {
			break
		}
		if err := next.NextResultSet(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
	}
	return &out, nil
}

func describeColumn(rows driver.Rows, i int) columnType {
	var ct columnType
	if r, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		ct.databaseType = r.ColumnTypeDatabaseTypeName(i)
	}
	if r, ok := rows.(driver.RowsColumnTypeScanType); ok {
		ct.scanType = r.ColumnTypeScanType(i)
	}
	if r, ok := rows.(driver.RowsColumnTypeNullable); ok {
		ct.nullable, ct.nullableOK = r.ColumnTypeNullable(i)
	}
	if r, ok := rows.(driver.RowsColumnTypeLength); ok {
		ct.length, ct.lengthOK = r.ColumnTypeLength(i)
	}
	if r, ok := rows.(driver.RowsColumnTypePrecisionScale); ok {
		ct.precision, ct.scale, ct.decimalOK = r.ColumnTypePrecisionScale(i)
	}
	return ct
}

// bufferedRows returns result sets read whole.
type bufferedRows struct {
	sets []resultSet
	set  int // the current result set
	row  int // the next row of it
}

var (
	_ driver.RowsNextResultSet              = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*bufferedRows)(nil)
	_ driver.RowsColumnTypeLength           = (*bufferedRows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*bufferedRows)(nil)
)

func (r *bufferedRows) Columns() []string { return r.sets[r.set].columns }
func (r *bufferedRows) Close() error      { return nil }

func (r *bufferedRows) Next(dest []driver.Value) error {
	set := &r.sets[r.set]
	if r.row >= len(set.rows) {
		return io.EOF
	}
	copy(dest, set.rows[r.row])
	r.row++
	return nil
}

func (r *bufferedRows) HasNextResultSet() bool { return r.set+1 < len(r.sets) }

func (r *bufferedRows) NextResultSet() error {
	if !r.HasNextResultSet() {
		return io.EOF
	}
	r.set, r.row = r.set+1, 0
	return nil
}

func (r *bufferedRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.sets[r.set].types[i].databaseType
}

func (r *bufferedRows) ColumnTypeScanType(i int) reflect.Type {
	if t := r.sets[r.set].types[i].scanType; t != nil {
		return t
	}
	return reflect.TypeOf(new(any)).Elem()
}

func (r *bufferedRows) ColumnTypeNullable(i int) (bool, bool) {
	t := r.sets[r.set].types[i]
	return t.nullable, t.nullableOK
}

func (r *bufferedRows) ColumnTypeLength(i int) (int64, bool) {
	t := r.sets[r.set].types[i]
	return t.length, t.lengthOK
}

func (r *bufferedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	t := r.sets[r.set].types[i]
	return t.precision, t.scale, t.decimalOK
}
