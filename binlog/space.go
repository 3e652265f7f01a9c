package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The binary log takes space on the server's datadir that no database
// holds: every row a test writes is written there once more. Tidy keeps it
// small (the servers also start a new file every few megabytes,
// instance.BinlogFileBytes), and Written tells whose writes the files not
// purged yet hold.

type binlogFile struct {
	name string
	size int64
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
//
// Looking is one SHOW BINARY LOGS, about 25 µs of the server's time, so
// the log is looked at four times a second: a test that writes 50 MB a
// second (one session inserting 60 KB rows on a shared two-core machine)
// leaves about 20 MB in it, not everything it wrote since the last reset.
var (
	TidyEvery       = 250 * time.Millisecond
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

// TidyNow runs Tidy now, however soon after the last one, and after the
// one running if there is one: for a server short of space.
func (l *Log) TidyNow(ctx context.Context, q Querier) error {
	return l.tidy(ctx, q)
}

// Tidy keeps the binary log small: once its files hold TidyBytes or more,
// it reads them to their end (so that every transaction prepared in them
// stays known) and purges all but the one the server writes to, which it
// first replaces by a new one when it alone holds TidyBytes. It runs while
// resets go on; a RollBackXA waits for the reading. The caller must have
// had TidyDue return true.
func (l *Log) Tidy(ctx context.Context, q Querier) error {
	defer func() {
		l.tmu.Lock()
		l.tidying, l.tidied = false, time.Now()
		l.tmu.Unlock()
	}()
	return l.tidy(ctx, q)
}

func (l *Log) tidy(ctx context.Context, q Querier) error {
	l.pmu.Lock()
	defer l.pmu.Unlock()
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
	if len(files) == 1 || files[len(files)-1].size >= TidyBytes {
		if _, err := q.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
			return fmt.Errorf("start a new binary log file: %w", err)
		}
		if files, err = binlogFiles(ctx, q); err != nil || len(files) == 0 {
			return err
		}
	}
	newest := files[len(files)-1].name
	l.mu.Lock()
	defer l.mu.Unlock()
	// Everything before newest is complete; read it all first.
	if err := l.readLocked(ctx, q); err != nil {
		return fmt.Errorf("read the binary log before purging it: %w", err)
	}
	// MariaDB keeps the last files until InnoDB has made their
	// transactions durable (a second at most, with its log flushed once a
	// second) and those where a transaction still prepared began: the next
	// Tidy purges them.
	if _, err := q.ExecContext(ctx, "PURGE BINARY LOGS TO '"+strings.ReplaceAll(newest, "'", "''")+"'"); err != nil {
		return fmt.Errorf("purge the binary log: %w", err)
	}
	if files, err = binlogFiles(ctx, q); err == nil {
		l.keepWrittenLocked(files)
	}
	return nil
}

// Written reads the binary log to its end and returns, by database, the
// bytes of the events in the files the server keeps that wrote to it: its
// rows (row events and the table map events before them) and its
// statements (query events run in it). A lease's account writes to its
// own database only, so a lease database's share is what the lease wrote
// and Tidy has not purged yet. Transactions' brackets (BEGIN, COMMIT, GTID
// events), a few dozen bytes each, are nobody's.
func (l *Log) Written(ctx context.Context, q Querier) (map[string]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.readLocked(ctx, q); err != nil {
		return nil, fmt.Errorf("read the binary log: %w", err)
	}
	files, err := binlogFiles(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list the binary log's files: %w", err)
	}
	l.keepWrittenLocked(files)
	out := map[string]int64{}
	for _, dbs := range l.written {
		for db, n := range dbs {
			out[db] += n
		}
	}
	return out, nil
}

// keepWrittenLocked forgets what files the server no longer keeps held.
func (l *Log) keepWrittenLocked(files []binlogFile) {
	kept := map[int]bool{}
	for _, f := range files {
		kept[fileSeq(f.name)] = true
	}
	for seq := range l.written {
		if !kept[seq] {
			delete(l.written, seq)
		}
	}
}

// account counts an event of file seq, from start to end, for the
// database it wrote to. MariaDB and MySQL show a table map event as
// "table_id: 42 (db.table)" and a row event (Write_rows_v1, Update_rows,
// …) as "table_id: 42 flags: …"; a query event run in a database starts
// with "use `db`". testdbd's databases have no dot in their names.
// MariaDB 11.4 and later show 0 as the end of the events inside a
// transaction: such an event ends where the next one starts.
func (l *Log) account(seq int, start, end int64, kind, info string) {
	if p := l.open; p.db != "" {
		l.open.db = ""
		if p.seq == seq && start > p.start {
			l.add(seq, p.db, start-p.start)
		}
	}
	db := ""
	switch {
	case kind == "Table_map":
		if t, ok := tableOf(info); ok {
			db, _, _ = strings.Cut(t, ".")
			if l.tableDB == nil {
				l.tableDB = map[string]string{}
			}
			l.tableDB[tableID(info)] = db
		}
	case strings.Contains(kind, "_rows"):
		db = l.tableDB[tableID(info)]
	case kind == "Query":
		db, _, _ = statement(info)
	}
	if kind == "Gtid" || kind == "Anonymous_Gtid" || info == "BEGIN" {
		l.tableDB = nil // table ids are the transaction's
	}
	switch {
	case db == "":
	case end > start:
		l.add(seq, db, end-start)
	default:
		l.open = openEvent{seq: seq, start: start, db: db}
	}
}

// openEvent is an event whose end is not known yet (see account).
type openEvent struct {
	seq   int
	start int64
	db    string
}

// add counts n bytes of file seq for database db.
func (l *Log) add(seq int, db string, n int64) {
	if l.written == nil {
		l.written = map[int]map[string]int64{}
	}
	if l.written[seq] == nil {
		l.written[seq] = map[string]int64{}
	}
	l.written[seq][db] += n
}

// tableID reads the id from "table_id: 42 …".
func tableID(info string) string {
	id, _ := strings.CutPrefix(info, "table_id: ")
	id, _, _ = strings.Cut(id, " ")
	return id
}
