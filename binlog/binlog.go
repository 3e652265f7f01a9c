// Package binlog reads what a server's binary log says about what tests
// did on it: which database each prepared XA transaction wrote to, so that
// a reset can roll back those its test left behind, and which databases'
// schemas changed, so that one lease's DDL does not make another's reset
// check everything. testdbd's servers keep a binary log for these two
// readings only (see instance.BinlogName); the daemon's own sessions stay
// out of it, so what it holds is what tests and migrations did.
//
// A test that runs XA PREPARE and never XA COMMIT or XA ROLLBACK leaves
// its transaction behind when its session ends: the server keeps it, with
// the locks on the rows it changed, until someone ends it by its xid, and
// any account that knows the xid may commit it, into a database that has
// been reset and handed to another lease since (MariaDB lists every xid to
// every account; MySQL to those with XA_RECOVER_ADMIN). While the session
// that prepared it is connected no other session can end it (on MySQL with
// xa_detach_on_prepare off, as testdbd runs it). A reset must therefore
// roll back the prepared transactions that wrote to its database, and only
// those: another lease's prepared transaction is that lease's business.
// RollBackEnded rolls back, on the whole server, those whose session has
// ended, without waiting for a reset; and a template's build, which may not
// prepare any, finds those its migrations prepared (Watch, PreparedIn).
// The servers do not say which database a prepared transaction wrote to:
// XA RECOVER lists xids only, and InnoDB's list of transactions has no xid.
// The binary log does: at XA PREPARE the server writes the transaction's
// row changes there, each preceded by the table it goes to, between the
// xid's XA START and XA PREPARE events.
//
// A lease's account has privileges on its own database only, so what the
// log shows in a lease's database is that lease's doing.
//
// One Log per server reads the log as far as needed (never the same event
// twice) and Tidy purges it as it grows. As it reads, it counts the bytes
// of each database's events in each file (Written): when a server runs
// short of space, the log's share is blamed on the databases whose writes
// it holds, never on a lease that only idles.
package binlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// XID is an XA transaction's xid.
type XID struct {
	Format       int64
	Gtrid, Bqual string // raw bytes
}

// SQL returns the xid as XA statements take it.
func (x XID) SQL() string {
	return fmt.Sprintf("X'%x',X'%x',%d", x.Gtrid, x.Bqual, x.Format)
}

// String returns the xid as a client most likely wrote it: 'gtrid' when
// that is all there is and it is plain text, the SQL form otherwise.
func (x XID) String() string {
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
func Prepared(ctx context.Context, q Querier) ([]XID, error) {
	var ids []XID
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

func recoverOnce(ctx context.Context, q Querier) ([]XID, error) {
	rows, err := q.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []XID
	for rows.Next() {
		var format, gl, bl int64
		var data []byte
		if err := rows.Scan(&format, &gl, &bl, &data); err != nil {
			return nil, err
		}
		if gl < 0 || bl < 0 || gl+bl > int64(len(data)) {
			return nil, fmt.Errorf("XA RECOVER: a row with lengths %d+%d for %d bytes of data", gl, bl, len(data))
		}
		ids = append(ids, XID{Format: format, Gtrid: string(data[:gl]), Bqual: string(data[gl : gl+bl])})
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
	// (pos 0: the file's first event), unless taken: the event at pos was
	// read already.
	file  string
	pos   int64
	taken bool
	// cur is the XA transaction whose events are being read (between its
	// XA START and XA PREPARE), nil between transactions.
	cur   *prepared
	wrote map[XID]*prepared
	// missing are prepared transactions the log does not show (see
	// RollBackXA), until XA RECOVER stops listing them.
	missing map[XID]bool
	// ddl is, by database, the last schema-changing statement read, and
	// anyDDL the last one run in no database (see SchemaChangedSince).
	ddl    map[string]change
	anyDDL change
	// watched are the databases whose prepared XA transactions are
	// recorded, each xid once, from Watch until Unwatch (see PreparedIn).
	watched map[string][]XID
	// gap is where reading went on after files it had not read were
	// purged by someone else: what came before is unknown.
	gap    Pos
	pruned time.Time // when pruneLocked last looked
	// written is, by file (its sequence number) and database, the bytes
	// of the events read in that file that wrote to the database (see
	// Written); tableDB the database of each table id of the transaction
	// being read, from its table map events.
	written map[int]map[string]int64
	tableDB map[string]string
	open    openEvent

	// tmu guards Tidy's schedule, apart from mu: a reset asking TidyDue
	// must not wait for a Tidy's reading.
	tmu     sync.Mutex
	tidied  time.Time // when Tidy last ran
	tidying bool
	// pmu makes one purge run at a time (Tidy, TidyNow).
	pmu sync.Mutex
	// ended waits, before an XA ROLLBACK, for the sessions that are
	// ending to let go of their transactions (see endings).
	ended endings
}

// prepared is one XA transaction as the binary log shows it.
type prepared struct {
	id     XID
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

// RollBackXA rolls back the prepared XA transactions that wrote to
// database and returns their xids, and the xids of prepared transactions
// the binary log does not show at all: those changed no row (the log has
// nothing of them) or were prepared while the log was off or before it
// was purged by someone else; they are left alone.
// The lease's sessions must have ended first: a session that still holds
// its prepared transaction (MariaDB keeps it with the session until the
// session ends, and so does MySQL with xa_detach_on_prepare off) cannot be
// rolled back from another.
//
// When the server holds no prepared transaction, which is nearly always,
// this is one XA RECOVER.
func (l *Log) RollBackXA(ctx context.Context, q Querier, database string) (rolledBack, unknown []XID, err error) {
	rolled, unknown, err := l.rollBack(ctx, q, func(p *prepared) bool { return p.wroteTo(database) })
	for _, p := range rolled {
		rolledBack = append(rolledBack, p.id)
	}
	return rolledBack, unknown, err
}

// Ended is a prepared XA transaction RollBackEnded rolled back, and the
// databases it wrote to.
type Ended struct {
	ID        XID
	Databases []string
}

// RollBackEnded rolls back every prepared XA transaction that the binary
// log shows wrote to a database and whose session has ended (the server
// refuses to end one that a session still holds from another session), and
// returns them. Once its session has ended, any account on the server that
// knows a transaction's xid may commit it; on MariaDB every account can
// list them. Like RollBackXA it is one XA RECOVER when the server holds
// no prepared transaction.
func (l *Log) RollBackEnded(ctx context.Context, q Querier) ([]Ended, error) {
	rolled, _, err := l.rollBack(ctx, q, func(*prepared) bool { return true })
	var out []Ended
	for _, p := range rolled {
		e := Ended{ID: p.id}
		for t := range p.tables {
			if db, _, ok := strings.Cut(t, "."); ok && !slices.Contains(e.Databases, db) {
				e.Databases = append(e.Databases, db)
			}
		}
		slices.Sort(e.Databases)
		out = append(out, e)
	}
	return out, err
}

// rollBack rolls back the prepared XA transactions of the log that match
// and returns them, and the xids of those the log does not show (see
// RollBackXA). One a session still holds is left alone.
func (l *Log) rollBack(ctx context.Context, q Querier, match func(*prepared) bool) (rolledBack []*prepared, unknown []XID, err error) {
	start := time.Now()
	ids, err := Prepared(ctx, q)
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	todo, unknown, err := l.matching(ctx, q, ids, match)
	if err != nil || len(todo) == 0 {
		return nil, unknown, err
	}
	seen := todo[0].seen
	for _, p := range todo[1:] {
		if p.seen.After(seen) {
			seen = p.seen
		}
	}
	if err := l.ended.wait(ctx, q, start, seen); err != nil {
		return nil, unknown, err
	}
	defer func() {
		l.mu.Lock()
		for _, p := range rolledBack {
			delete(l.wrote, p.id)
		}
		l.mu.Unlock()
	}()
	for _, p := range todo {
		if _, err := q.ExecContext(ctx, "XA ROLLBACK "+p.id.SQL()); err != nil {
			if isUnknownXID(err) {
				continue // it ended meanwhile, or a session still holds it
			}
			return rolledBack, unknown, fmt.Errorf("XA ROLLBACK %s: %w", p.id, err)
		}
		rolledBack = append(rolledBack, p)
	}
	return rolledBack, unknown, nil
}

// matching returns the prepared transactions of ids (XA RECOVER's list)
// that the log shows and that match, reading the log as far as needed,
// and the xids of those it does not show (see RollBackXA).
func (l *Log) matching(ctx context.Context, q Querier, ids []XID, match func(*prepared) bool) (todo []*prepared, unknown []XID, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	listed := map[XID]bool{}
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
				l.missing = map[XID]bool{}
			}
			l.missing[id] = true
			unknown = append(unknown, id)
		case match(p):
			todo = append(todo, p)
		}
	}
	return todo, unknown, nil
}

// Watch starts recording the XA transactions prepared in database (a
// template being built): PreparedIn lists them, whether they are still
// prepared or not, until Unwatch. Events of database the log holds but has
// not read yet count too.
func (l *Log) Watch(database string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watched == nil {
		l.watched = map[string][]XID{}
	}
	if _, ok := l.watched[database]; !ok {
		l.watched[database] = nil
	}
}

// Unwatch stops recording database's XA transactions and forgets them.
func (l *Log) Unwatch(database string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.watched, database)
}

// PreparedIn reads the binary log to its end and returns the xids of the
// XA transactions prepared (XA PREPARE) that wrote to database since Watch,
// ended since or not. A prepared transaction that changed no row is not in
// the log, and not among them.
func (l *Log) PreparedIn(ctx context.Context, q Querier, database string) ([]XID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readLocked(ctx, q); err != nil {
		return nil, fmt.Errorf("read the binary log for the XA transactions prepared in %s: %w", database, err)
	}
	return append([]XID(nil), l.watched[database]...), nil
}

// recordWatchedLocked records p's xid for each watched database it wrote to.
func (l *Log) recordWatchedLocked(p *prepared) {
	for database, ids := range l.watched {
		if p.wroteTo(database) && !slices.Contains(ids, p.id) {
			l.watched[database] = append(ids, p.id)
		}
	}
}

// batch is how many events one SHOW BINLOG EVENTS reads.
const batch = 5000

// readLocked reads the binary log from where it stopped to its end,
// following the log from file to file by its rotate events.
func (l *Log) readLocked(ctx context.Context, q Querier) error {
	if l.file == "" {
		if err := l.restartLocked(ctx, q); err != nil || l.file == "" {
			return err
		}
	}
	torn := 0
	for {
		n, next, err := l.readBatchLocked(ctx, q)
		switch {
		case isTornRead(err) && torn < len(tornRetries):
			// The last event was being written as it was read: what came
			// before it was read; read from there again once it is whole.
			if err := sleepCtx(ctx, tornRetries[torn]); err != nil {
				return err
			}
			torn++
			continue
		case isLogMissing(err):
			// Purged by someone else: go on from the oldest file left,
			// and remember that what came before it is unknown.
			if err := l.restartLocked(ctx, q); err != nil || l.file == "" {
				return err
			}
			l.gap = l.endLocked()
			continue
		case err != nil:
			return err
		case next != "":
			l.file, l.pos, l.cur = next, 0, nil
			continue
		}
		if n < batch {
			break
		}
	}
	l.pruneLocked(ctx, q)
	return nil
}

// restartLocked goes to the oldest file of the log (l.file stays empty
// when the server keeps none).
func (l *Log) restartLocked(ctx context.Context, q Querier) error {
	files, err := binlogFiles(ctx, q)
	if err != nil {
		return err
	}
	l.file, l.pos, l.cur = "", 0, nil
	if len(files) > 0 {
		l.file = files[0].name
	}
	return nil
}

// pruneLocked forgets, once a minute at most, the transactions that have
// long ended: they are not prepared any more, and no new XA PREPARE is
// written under an old position. (A transaction whose XA PREPARE was read
// but that XA RECOVER did not list yet is kept: it may be about to be.)
func (l *Log) pruneLocked(ctx context.Context, q Querier) {
	now := time.Now()
	if len(l.wrote) == 0 || now.Sub(l.pruned) < time.Minute {
		return
	}
	l.pruned = now
	live, err := recoverOnce(ctx, q)
	if err != nil {
		return
	}
	keep := map[XID]bool{}
	for _, id := range live {
		keep[id] = true
	}
	for id, p := range l.wrote {
		if !keep[id] && now.Sub(p.seen) > 10*time.Minute {
			delete(l.wrote, id)
		}
	}
}

// isLogMissing reports ER_ERROR_WHEN_EXECUTING_COMMAND (1220) for a log
// file that is not there ("Could not find target log").
func isLogMissing(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1220 && strings.Contains(me.Message, "find target log")
}

// isTornRead reports whether err says SHOW BINLOG EVENTS met an event cut
// short: one that the server was writing as it was read (a large one,
// mostly), or, if it stays cut, one a full disk cut for good.
func isTornRead(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1220 && strings.Contains(me.Message, "truncated in the middle of event")
}

// tornRetries are the pauses before a read that met an event cut short is
// tried again: about half a second in all before the error is returned.
var tornRetries = []time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond,
	16 * time.Millisecond, 32 * time.Millisecond, 64 * time.Millisecond, 128 * time.Millisecond, 256 * time.Millisecond}

// sleepCtx pauses for d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readBatchLocked reads up to batch events of l.file from l.pos and
// returns how many it read, and the next file's name when it read the
// file's last event (a rotate event).
func (l *Log) readBatchLocked(ctx context.Context, q Querier) (int, string, error) {
	query := "SHOW BINLOG EVENTS IN '" + strings.ReplaceAll(l.file, "'", "''") + "'"
	if l.pos > 0 {
		query += " FROM " + strconv.FormatInt(l.pos, 10)
	}
	query += " LIMIT " + strconv.Itoa(batch)
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, "", err
	}
	if len(cols) < 6 {
		return 0, "", fmt.Errorf("SHOW BINLOG EVENTS: %d columns", len(cols))
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	seq := fileSeq(l.file)
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, "", err
		}
		n++
		// Log_name, Pos, Event_type, Server_id, End_log_pos, Info
		start, err1 := strconv.ParseInt(string(vals[1]), 10, 64)
		end, err2 := strconv.ParseInt(string(vals[4]), 10, 64)
		if err1 != nil || err2 != nil {
			return n, "", fmt.Errorf("SHOW BINLOG EVENTS: positions %q, %q", vals[1], vals[4])
		}
		kind, info := string(vals[2]), string(vals[5])
		if kind == "Rotate" {
			// "testdbd-bin.000002;pos=4": the last event of a file.
			if next, _, _ := strings.Cut(info, ";"); next != l.file {
				return n, next, rows.Err()
			}
			continue
		}
		if l.taken && start == l.pos {
			l.taken = false
			continue // read at the end of the last batch
		}
		l.event(Pos{File: seq, Offset: start}, kind, info)
		l.account(seq, start, end, kind, info)
		// MariaDB 11.4 and later show End_log_pos 0 for the events inside
		// a transaction: the next read starts at this one, and skips it.
		l.pos, l.taken = end, false
		if end <= start {
			l.pos, l.taken = start, true
		}
	}
	return n, "", rows.Err()
}

// Pos is a place in the binary log: a file's sequence number (the digits
// its name ends with) and an offset in it.
type Pos struct {
	File   int
	Offset int64
}

// Before reports whether p comes before q.
func (p Pos) Before(q Pos) bool {
	return p.File < q.File || p.File == q.File && p.Offset < q.Offset
}

func fileSeq(name string) int {
	_, digits, _ := strings.Cut(name, ".")
	for strings.Contains(digits, ".") {
		_, digits, _ = strings.Cut(digits, ".")
	}
	n, _ := strconv.Atoi(digits)
	return n
}

// endLocked is where the next event will be.
func (l *Log) endLocked() Pos { return Pos{File: fileSeq(l.file), Offset: l.pos} }

// SchemaChangedSince reads the binary log to its end and returns a
// schema-changing statement of database that the log holds from since on
// (the last one), or one that ran in no database (a session without a
// default database: it may have changed any), or "" when there is none;
// and where the log ends now, the since of the next call.
//
// Every statement that changes a schema is in the log (as a statement:
// the row format logs only row changes as rows), with the database the
// session had chosen, except those on temporary tables; the daemon's own
// sessions stay out of the log. A lease's account can choose its own
// database only, so what the log shows in a lease's database is what that
// lease did. Any statement that is neither a transaction's bracket (BEGIN,
// COMMIT, ROLLBACK, savepoints, XA) counts as schema-changing: ANALYZE,
// OPTIMIZE and REPAIR TABLE too.
func (l *Log) SchemaChangedSince(ctx context.Context, q Querier, database string, since Pos) (string, Pos, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readLocked(ctx, q); err != nil {
		return "", Pos{}, fmt.Errorf("read the binary log: %w", err)
	}
	end := l.endLocked()
	if since.Before(l.gap) {
		return "the binary log was purged (not by testdbd) past where the last reset read it, so schema changes since may be unknown", end, nil
	}
	if c, ok := l.ddl[database]; ok && !c.at.Before(since) {
		return c.stmt, end, nil
	}
	if c := l.anyDDL; c.stmt != "" && !c.at.Before(since) {
		return c.stmt + " (in no database: it may have changed any)", end, nil
	}
	return "", end, nil
}

// End reads the binary log to its end and returns where it ends: the
// since of the first SchemaChangedSince of a database made now.
func (l *Log) End(ctx context.Context, q Querier) (Pos, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readLocked(ctx, q); err != nil {
		return Pos{}, fmt.Errorf("read the binary log: %w", err)
	}
	return l.endLocked(), nil
}

// change is a schema-changing statement in the log.
type change struct {
	at   Pos
	stmt string
}

// statement splits a query event's text, "use `db`; STATEMENT" or
// "STATEMENT" when the session had no database, and reports whether the
// statement may change a schema.
func statement(info string) (db, stmt string, schema bool) {
	stmt = info
	if rest, ok := strings.CutPrefix(info, "use `"); ok {
		var name strings.Builder
		for i := 0; i < len(rest); i++ {
			if rest[i] == '`' {
				if i+1 < len(rest) && rest[i+1] == '`' {
					name.WriteByte('`')
					i++
					continue
				}
				db, stmt = name.String(), strings.TrimPrefix(rest[i+1:], ";")
				break
			}
			name.WriteByte(rest[i])
		}
	}
	stmt = strings.TrimSpace(stmt)
	word, _, _ := strings.Cut(stmt, " ")
	switch strings.ToUpper(strings.TrimRight(word, ";")) {
	case "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA":
		return db, stmt, false
	}
	return db, stmt, true
}

// event takes one event of the log into account. MariaDB starts an XA
// transaction's events with a GTID event whose text is "XA START
// X'…',X'…',n GTID …", MySQL with a GTID event and then a query event
// "XA START X'…',X'…',n"; on both a table map event ("table_id: 42
// (db.table)") precedes each table's row changes, and the transaction's
// part ends with an XA_prepare event "XA PREPARE X'…',X'…',n". Every other
// transaction starts with a GTID event or a BEGIN.
func (l *Log) event(at Pos, kind, info string) {
	if kind == "Query" {
		if db, stmt, ok := statement(info); ok {
			c := change{at: at, stmt: shorten(stmt)}
			if db == "" {
				l.anyDDL = c
			} else {
				if l.ddl == nil {
					l.ddl = map[string]change{}
				}
				l.ddl[db] = c
			}
		}
	}
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
					l.wrote = map[XID]*prepared{}
				}
				l.cur.seen = time.Now()
				l.wrote[id] = l.cur
				l.recordWatchedLocked(l.cur)
			}
		}
		l.cur = nil
	case kind == "Gtid" || kind == "Anonymous_Gtid" || info == "BEGIN":
		l.cur = nil
	}
}

// parseID reads X'hex',X'hex',n from the start of s.
func parseID(s string) (XID, bool) {
	var id XID
	var ok bool
	if id.Gtrid, s, ok = hexLiteral(s); !ok || !strings.HasPrefix(s, ",") {
		return XID{}, false
	}
	if id.Bqual, s, ok = hexLiteral(s[1:]); !ok || !strings.HasPrefix(s, ",") {
		return XID{}, false
	}
	s = s[1:]
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || end == 0 && s[end] == '-') {
		end++
	}
	f, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil {
		return XID{}, false
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

// shorten cuts a statement for an error or a report.
func shorten(stmt string) string {
	const max = 160
	if len(stmt) <= max {
		return stmt
	}
	cut := max
	for cut > 0 && stmt[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return stmt[:cut] + "…"
}
