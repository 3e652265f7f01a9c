// Package xa ends the prepared XA transactions that wrote to a worker
// database.
//
// A test that runs XA PREPARE and never XA COMMIT or XA ROLLBACK leaves
// its transaction behind when its session ends: the server keeps it, with
// the locks on the rows it changed, until someone ends it by its xid, and
// any account that knows the xid may commit it, into a database that has
// been reset and handed to another lease since. A reset must therefore roll
// back the prepared transactions that wrote to its database, and only
// those: another lease's prepared transaction is that lease's business.
//
// The servers do not say which database a prepared transaction wrote to:
// XA RECOVER lists xids only, and InnoDB's list of transactions has no xid.
// The binary log does: at XA PREPARE the server writes the transaction's
// row changes there, each preceded by the table it goes to, between the
// xid's XA START and XA PREPARE events. testdbd's servers keep a binary
// log for this (see instance.BinlogName), which Log reads as far as
// needed: only when XA RECOVER lists a transaction it does not know yet,
// and before the files are purged (Tidy).
//
// A lease's account has privileges on its own database only, so a prepared
// transaction that wrote to a lease's database is that lease's.
package xa

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ID is an XA transaction's xid.
type ID struct {
	Format       int64
	Gtrid, Bqual string // raw bytes
}

// SQL returns the xid as XA statements take it.
func (x ID) SQL() string {
	return fmt.Sprintf("X'%x',X'%x',%d", x.Gtrid, x.Bqual, x.Format)
}

// String returns the xid as a client most likely wrote it: 'gtrid' when
// that is all there is and it is plain text, the SQL form otherwise.
func (x ID) String() string {
	if x.Format == 1 && x.Bqual == "" && plain(x.Gtrid) {
		return "'" + x.Gtrid + "'"
	}
	return x.SQL()
}

func plain(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' || c > '~' || c == '\'' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// Querier is a pool or a connection of an administrative account.
type Querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// Prepared lists the XA transactions the server holds prepared (XA
// RECOVER).
func Prepared(ctx context.Context, q Querier) ([]ID, error) {
	var ids []ID
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if ids, err = recoverOnce(ctx, q); !isRMError(err) {
			break
		}
		// MySQL answers XAER_RMERR while a session that held one
		// detaches it; asked again a moment later, it lists them.
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
	return ids, err
}

func recoverOnce(ctx context.Context, q Querier) ([]ID, error) {
	rows, err := q.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []ID
	for rows.Next() {
		var format, gl, bl int64
		var data []byte
		if err := rows.Scan(&format, &gl, &bl, &data); err != nil {
			return nil, err
		}
		if gl < 0 || bl < 0 || gl+bl > int64(len(data)) {
			return nil, fmt.Errorf("XA RECOVER: a row with lengths %d+%d for %d bytes of data", gl, bl, len(data))
		}
		ids = append(ids, ID{Format: format, Gtrid: string(data[:gl]), Bqual: string(data[gl : gl+bl])})
	}
	return ids, rows.Err()
}

// isRMError reports ER_XAER_RMERR (1401).
func isRMError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1401
}

// isUnknownXID reports ER_XAER_NOTA (1397): no such prepared transaction
// (it ended meanwhile).
func isUnknownXID(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1397
}

// Log is what one server's binary log says about the XA transactions
// prepared on it: for each xid, the tables its last XA PREPARE wrote to.
// One Log per server, shared by its resets.
type Log struct {
	mu sync.Mutex
	// Where reading stopped: the next event to read is at pos in file
	// (pos 0: the file's first event).
	file string
	pos  int64
	// cur is the XA transaction whose events are being read (between its
	// XA START and XA PREPARE), nil between transactions.
	cur   *prepared
	wrote map[ID]*prepared
	// missing are prepared transactions the log does not show (see
	// RollBackIn), until XA RECOVER stops listing them.
	missing map[ID]bool
	read    int64 // events read so far

	// tmu guards Tidy's schedule, apart from mu: a reset asking TidyDue
	// must not wait for a Tidy's reading.
	tmu     sync.Mutex
	tidied  time.Time // when Tidy last ran
	tidying bool
}

// prepared is one XA transaction as the binary log shows it.
type prepared struct {
	id     ID
	tables map[string]bool // "database.table", as the log names them
	seen   time.Time       // when its XA PREPARE was read
}

// wroteTo reports whether p changed a table of database.
func (p *prepared) wroteTo(database string) bool {
	for t := range p.tables {
		if strings.HasPrefix(t, database+".") {
			return true
		}
	}
	return false
}

// Events returns the number of binary log events read so far.
func (l *Log) Events() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read
}

// RollBackIn rolls back the prepared XA transactions that wrote to
// database and returns their xids, and the xids of prepared transactions
// the binary log does not show at all (the log was off, or purged by
// someone else): those may have written anywhere, and are left alone.
// The lease's sessions must have ended first: a session that still holds
// its prepared transaction (MariaDB keeps it with the session until the
// session ends) cannot be rolled back from another.
//
// When the server holds no prepared transaction, which is nearly always,
// this is one XA RECOVER.
func (l *Log) RollBackIn(ctx context.Context, q Querier, database string) (rolledBack, unknown []ID, err error) {
	ids, err := Prepared(ctx, q)
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	listed := map[ID]bool{}
	for _, id := range ids {
		listed[id] = true
	}
	for id := range l.missing {
		if !listed[id] {
			delete(l.missing, id) // ended; prepared again, it is written again
		}
	}
	for _, id := range ids {
		if l.wrote[id] == nil && !l.missing[id] {
			if err := l.readLocked(ctx, q); err != nil {
				return nil, nil, fmt.Errorf("read the binary log for the prepared XA transactions: %w", err)
			}
			break
		}
	}
	for _, id := range ids {
		p := l.wrote[id]
		switch {
		case p == nil:
			// Read to the end and not there: it never will be (its
			// XA PREPARE was written before XA RECOVER listed it).
			if l.missing == nil {
				l.missing = map[ID]bool{}
			}
			l.missing[id] = true
			unknown = append(unknown, id)
			continue
		case !p.wroteTo(database):
			continue
		}
		if _, err := q.ExecContext(ctx, "XA ROLLBACK "+id.SQL()); err != nil {
			if isUnknownXID(err) {
				continue // it ended meanwhile, or a session still holds it
			}
			return rolledBack, unknown, fmt.Errorf("XA ROLLBACK %s: %w", id, err)
		}
		delete(l.wrote, id)
		rolledBack = append(rolledBack, id)
	}
	return rolledBack, unknown, nil
}

// batch is how many events one SHOW BINLOG EVENTS reads.
const batch = 5000

// readLocked reads the binary log from where it stopped to its end.
func (l *Log) readLocked(ctx context.Context, q Querier) error {
	files, err := binlogFiles(ctx, q)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return nil
	}
	i := indexOf(files, l.file)
	if i < 0 {
		// Never read, or purged meanwhile: from the oldest file there is.
		i, l.file, l.pos, l.cur = 0, files[0].name, 0, nil
	}
	for ; i < len(files); i++ {
		if files[i].name != l.file {
			l.file, l.pos, l.cur = files[i].name, 0, nil
		}
		for {
			n, err := l.readBatchLocked(ctx, q)
			if err != nil {
				return err
			}
			if n < batch {
				break
			}
		}
	}
	if l.wrote != nil {
		// Forget the transactions that have long ended: they are not
		// prepared any more, and no new XA PREPARE is written under an
		// old position. (A transaction whose XA PREPARE was read but that
		// XA RECOVER did not list yet is kept: it may be about to be.)
		now := time.Now()
		live, _ := recoverOnce(ctx, q)
		keep := map[ID]bool{}
		for _, id := range live {
			keep[id] = true
		}
		for id, p := range l.wrote {
			if !keep[id] && now.Sub(p.seen) > 10*time.Minute {
				delete(l.wrote, id)
			}
		}
	}
	return nil
}

// readBatchLocked reads up to batch events of l.file from l.pos and
// returns how many it read.
func (l *Log) readBatchLocked(ctx context.Context, q Querier) (int, error) {
	query := "SHOW BINLOG EVENTS IN '" + strings.ReplaceAll(l.file, "'", "''") + "'"
	if l.pos > 0 {
		query += " FROM " + strconv.FormatInt(l.pos, 10)
	}
	query += " LIMIT " + strconv.Itoa(batch)
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	if len(cols) < 6 {
		return 0, fmt.Errorf("SHOW BINLOG EVENTS: %d columns", len(cols))
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		n++
		// Log_name, Pos, Event_type, Server_id, End_log_pos, Info
		end, err := strconv.ParseInt(string(vals[4]), 10, 64)
		if err != nil {
			return n, fmt.Errorf("SHOW BINLOG EVENTS: End_log_pos %q", vals[4])
		}
		l.event(string(vals[2]), string(vals[5]))
		l.pos = end
		l.read++
	}
	return n, rows.Err()
}

// event takes one event of the log into account. MariaDB starts an XA
// transaction's events with a GTID event whose text is "XA START
// X'…',X'…',n GTID …", MySQL with a GTID event and then a query event
// "XA START X'…',X'…',n"; on both a table map event ("table_id: 42
// (db.table)") precedes each table's row changes, and the transaction's
// part ends with an XA_prepare event "XA PREPARE X'…',X'…',n". Every other
// transaction starts with a GTID event or a BEGIN.
func (l *Log) event(kind, info string) {
	switch {
	case (kind == "Gtid" || kind == "Query") && strings.HasPrefix(info, "XA START "):
		if id, ok := parseID(strings.TrimPrefix(info, "XA START ")); ok {
			l.cur = &prepared{id: id, tables: map[string]bool{}}
		} else {
			l.cur = nil
		}
	case kind == "Table_map":
		if l.cur != nil {
			if t, ok := tableOf(info); ok {
				l.cur.tables[t] = true
			}
		}
	case kind == "XA_prepare":
		if l.cur != nil {
			if id, ok := parseID(strings.TrimPrefix(info, "XA PREPARE ")); ok && id == l.cur.id {
				if l.wrote == nil {
					l.wrote = map[ID]*prepared{}
				}
				l.cur.seen = time.Now()
				l.wrote[id] = l.cur
			}
		}
		l.cur = nil
	case kind == "Gtid" || kind == "Anonymous_Gtid" || info == "BEGIN":
		l.cur = nil
	}
}

// parseID reads X'hex',X'hex',n from the start of s.
func parseID(s string) (ID, bool) {
	var id ID
	var ok bool
	if id.Gtrid, s, ok = hexLiteral(s); !ok || !strings.HasPrefix(s, ",") {
		return ID{}, false
	}
	if id.Bqual, s, ok = hexLiteral(s[1:]); !ok || !strings.HasPrefix(s, ",") {
		return ID{}, false
	}
	s = s[1:]
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || end == 0 && s[end] == '-') {
		end++
	}
	f, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil {
		return ID{}, false
	}
	id.Format = f
	return id, true
}

// hexLiteral reads X'…' from the start of s and returns its bytes and the
// rest of s.
func hexLiteral(s string) (string, string, bool) {
	if !strings.HasPrefix(s, "X'") {
		return "", s, false
	}
	end := strings.IndexByte(s[2:], '\'')
	if end < 0 {
		return "", s, false
	}
	b, err := hex.DecodeString(s[2 : 2+end])
	if err != nil {
		return "", s, false
	}
	return string(b), s[2+end+1:], true
}

// tableOf reads "db.table" from a table map event's text,
// "table_id: 42 (db.table)".
func tableOf(info string) (string, bool) {
	open := strings.IndexByte(info, '(')
	if !strings.HasPrefix(info, "table_id: ") || open < 0 || !strings.HasSuffix(info, ")") {
		return "", false
	}
	return info[open+1 : len(info)-1], true
}

type binlogFile struct {
	name string
	size int64
}

func indexOf(files []binlogFile, name string) int {
	for i, f := range files {
		if f.name == name {
			return i
		}
	}
	return -1
}

// binlogFiles lists the server's binary log files, oldest first; none when
// the server runs without a binary log.
func binlogFiles(ctx context.Context, q Querier) ([]binlogFile, error) {
	rows, err := q.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1381 { // ER_NO_BINARY_LOGGING
			return nil, nil
		}
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var files []binlogFile
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		size, _ := strconv.ParseInt(string(vals[1]), 10, 64)
		files = append(files, binlogFile{name: string(vals[0]), size: size})
	}
	return files, rows.Err()
}

// TidyEvery is how often Tidy looks at the binary log's size, and
// TidyBytes the size from which it purges it (variables for tests).
var (
	TidyEvery       = 10 * time.Second
	TidyBytes int64 = 8 << 20
)

// TidyDue reports whether Tidy should run now, and if so marks it running:
// the caller must then call Tidy, which clears the mark.
func (l *Log) TidyDue() bool {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	if l.tidying || time.Since(l.tidied) < TidyEvery {
		return false
	}
	l.tidying = true
	return true
}

// Tidy keeps the binary log small: once its files hold TidyBytes or more,
// it starts a new file, reads the older ones to their end (so that every
// transaction prepared in them stays known) and purges them. It runs while
// resets go on; a RollBackIn waits for the reading.
func (l *Log) Tidy(ctx context.Context, q Querier) error {
	defer func() {
		l.tmu.Lock()
		l.tidying, l.tidied = false, time.Now()
		l.tmu.Unlock()
	}()
	files, err := binlogFiles(ctx, q)
	if err != nil || len(files) == 0 {
		return err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	if total < TidyBytes {
		return nil
	}
	if _, err := q.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		return fmt.Errorf("start a new binary log file: %w", err)
	}
	if files, err = binlogFiles(ctx, q); err != nil || len(files) == 0 {
		return err
	}
	newest := files[len(files)-1].name
	l.mu.Lock()
	defer l.mu.Unlock()
	// Everything before newest is complete now; read it all first.
	if err := l.readLocked(ctx, q); err != nil {
		return fmt.Errorf("read the binary log before purging it: %w", err)
	}
	if _, err := q.ExecContext(ctx, "PURGE BINARY LOGS TO '"+strings.ReplaceAll(newest, "'", "''")+"'"); err != nil {
		return fmt.Errorf("purge the binary log: %w", err)
	}
	return nil
}
