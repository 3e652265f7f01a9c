package binlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/testdbd/testdbd/schema"
)

// Rows follows a server's binary log as a replica does and records, for
// each tracked worker database, the primary keys of the rows its events
// changed, so that a reset can put back those rows only (the delta
// restore): delete them by key and copy the template's rows of the same
// keys. That is exact whatever else a test did, as long as every change
// to the database since the last reset is in the log as the rows it
// changed; whatever makes that unsure is recorded instead (Changes.Why,
// TableChanges.Why) and the reset restores as it does without the log:
//
//   - a statement other than a transaction's bracket (DDL, TRUNCATE,
//     ANALYZE…): it changes rows without logging them;
//   - a table without a primary key, or one of a type the keys are not
//     written back for, or an image without its key;
//   - more than MaxKeys rows of one table;
//   - a break in the stream (a reconnection, a server restart): what came
//     in between is unknown, for every database;
//   - changes made by foreign keys' actions, which the servers do not all
//     log (the caller closes over Table.Cascades).
//
// A key recorded that the test did not change costs a row copied back,
// nothing more: the set may hold more than was changed, never less.
//
// The daemon's own sessions do not write to the log (sql_log_bin=0), so a
// restore does not show in it; a lease's sessions are ended before Take.
type Rows struct {
	cfg RowsConfig

	mu sync.Mutex
	// at is where the stream has read to; moved is closed and replaced
	// whenever at moves.
	at    Pos
	file  string
	moved chan struct{}
	// epoch counts the stream's starts: a database tracked in an earlier
	// one may have missed events.
	epoch int
	// why says why the stream is not running ("" while it is).
	why string
	dbs map[string]*dbRows

	cancel context.CancelFunc
	done   chan struct{}
}

// RowsConfig is how to reach a server's binary log.
type RowsConfig struct {
	// Addr is host:port, or a Unix socket's path.
	Addr, User, Password string
	Flavor               string // mysql or mariadb
	// DB is an administrative pool of the server, for reading where the
	// log ends (SHOW BINARY LOGS).
	DB Querier
	// MaxKeys is how many rows of one table are restored by key (0:
	// DefaultMaxKeys); past that the table is restored whole.
	MaxKeys int
	Logger  *slog.Logger
	// Done, when closed, stops the stream (the server is gone).
	Done <-chan struct{}
}

// DefaultMaxKeys is RowsConfig.MaxKeys's default. Restoring a row by key
// costs about what copying twenty rows does, so past a few thousand a
// whole copy of all but the biggest tables is as cheap.
const DefaultMaxKeys = 2000

// dbRows is what the log showed for one database since its last Take.
type dbRows struct {
	epoch  int
	tables map[string]*schema.Table // the template's, by name
	why    string
	rows   map[string]*tableRows
	keys   int // in all of rows, bounded by MaxKeys*dbKeysFactor
}

// dbKeysFactor bounds the keys kept for one database, MaxKeys times this
// in all its tables: the memory a stream takes is at most that per
// database it follows (a few megabytes).
const dbKeysFactor = 10

// tableRows is what the log showed for one table.
type tableRows struct {
	keys    map[string]bool // SQL literals of the key, "(a,b)" for several columns
	removed bool            // rows were deleted or updated (foreign keys may act)
	why     string
}

// Changes are the rows the log shows changed in a database since its last
// Take.
type Changes struct {
	// Why, when not empty, says why the log cannot tell: restore as
	// without it.
	Why    string
	Tables map[string]TableChanges
}

// TableChanges are the rows of one table the log shows changed.
type TableChanges struct {
	Keys    []string // the key of each row, an SQL literal or row constructor
	Removed bool     // rows were deleted or updated
	Why     string   // not empty: restore the table whole, for this reason
}

// StartRows starts following the log. It returns at once; the stream
// connects in the background, and until it has, every database's Changes
// say so.
func StartRows(cfg RowsConfig) *Rows {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	if cfg.Done != nil {
		go func() {
			select {
			case <-cfg.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	r := &Rows{cfg: cfg, moved: make(chan struct{}), why: "the binary log stream has not started yet",
		dbs: map[string]*dbRows{}, cancel: cancel, done: make(chan struct{})}
	go r.follow(ctx)
	return r
}

// Close stops the stream and waits for it.
func (r *Rows) Close() {
	r.cancel()
	<-r.done
}

// Track starts recording database, a copy of a template whose tables are
// tables, from now on. Call it before anything but the daemon writes to
// it.
func (r *Rows) Track(database string, tables []*schema.Table) {
	byName := make(map[string]*schema.Table, len(tables))
	for _, t := range tables {
		byName[t.Name] = t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dbs[database] = &dbRows{epoch: r.epoch, tables: byName, rows: map[string]*tableRows{}}
}

// Untrack stops recording database.
func (r *Rows) Untrack(database string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.dbs, database)
}

// Take waits until the stream has read the log to where it ends now, then
// returns what it shows changed in database since Track or the last Take,
// and starts recording anew. No session but the daemon's may write to the
// database from the moment end is read until the reset that takes the
// changes has restored them.
func (r *Rows) Take(ctx context.Context, database string, wait time.Duration) Changes {
	end, _, err := logEnd(ctx, r.cfg.DB)
	if err != nil {
		r.restart(database)
		return Changes{Why: "the binary log's end could not be read: " + err.Error()}
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		if r.why != "" || !r.at.Before(end) {
			break
		}
		moved := r.moved
		r.mu.Unlock()
		select {
		case <-moved:
		case <-deadline.C:
			r.mu.Lock()
			at := r.at
			r.mu.Unlock()
			r.restart(database)
			return Changes{Why: fmt.Sprintf("the binary log stream was still behind the log's end after %v (at %d:%d, the end at %d:%d)",
				wait, at.File, at.Offset, end.File, end.Offset)}
		case <-ctx.Done():
			r.restart(database)
			return Changes{Why: ctx.Err().Error()}
		}
	}
	defer r.mu.Unlock()
	d := r.dbs[database]
	if d == nil {
		return Changes{Why: "the binary log stream does not follow this database"}
	}
	r.dbs[database] = &dbRows{epoch: r.epoch, tables: d.tables, rows: map[string]*tableRows{}}
	switch {
	case r.why != "":
		return Changes{Why: r.why}
	case d.epoch != r.epoch:
		return Changes{Why: "the binary log stream started or restarted since the last reset, so changes in between may be unknown"}
	case d.why != "":
		return Changes{Why: d.why}
	}
	c := Changes{Tables: make(map[string]TableChanges, len(d.rows))}
	for name, t := range d.rows {
		tc := TableChanges{Removed: t.removed, Why: t.why}
		if t.why == "" {
			tc.Keys = make([]string, 0, len(t.keys))
			for k := range t.keys {
				tc.Keys = append(tc.Keys, k)
			}
		}
		c.Tables[name] = tc
	}
	return c
}

// Forget starts recording database anew without reading where the log
// ends: for a reset that does not use what it recorded. Events of the
// test not read yet land in the next round, which may then hold more keys
// than it needs, never fewer.
func (r *Rows) Forget(database string) { r.restart(database) }

// restart starts recording database anew after a Take that could not
// tell; the next Take can tell only if the stream is running since.
func (r *Rows) restart(database string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.dbs[database]; d != nil {
		r.dbs[database] = &dbRows{epoch: r.epoch, tables: d.tables, rows: map[string]*tableRows{}}
	}
}

// follow runs the stream until ctx ends, starting again (from the log's
// end, so in a new epoch) after a failure.
func (r *Rows) follow(ctx context.Context) {
	defer close(r.done)
	defer func() {
		r.mu.Lock()
		r.why = "the binary log stream was stopped"
		r.notifyLocked()
		r.mu.Unlock()
	}()
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := r.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.why = "the binary log stream stopped: " + err.Error()
		close(r.moved)
		r.moved = make(chan struct{})
		r.mu.Unlock()
		r.cfg.Logger.Warn("binary log stream stopped; delta restores wait for it", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// stream follows the log from its end until an error or ctx's end.
func (r *Rows) stream(ctx context.Context) error {
	end, file, err := logEnd(ctx, r.cfg.DB)
	if err != nil {
		return err
	}
	if file == "" {
		return errors.New("the server keeps no binary log")
	}
	cfg := replication.BinlogSyncerConfig{
		ServerID: 1<<30 + rand.Uint32N(1<<30), Flavor: r.cfg.Flavor,
		Host: r.cfg.Addr, User: r.cfg.User, Password: r.cfg.Password,
		DisableRetrySync: true, HeartbeatPeriod: time.Second, ReadTimeout: 10 * time.Second,
		// Its own chatter (registering, closing) is not the daemon's
		// business; follow logs the stream's failures.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if host, port, err := net.SplitHostPort(r.cfg.Addr); err == nil && !strings.Contains(r.cfg.Addr, "/") {
		p, _ := strconv.ParseUint(port, 10, 16)
		cfg.Host, cfg.Port = host, uint16(p)
	}
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	s, err := syncer.StartSync(mysql.Position{Name: file, Pos: uint32(end.Offset)})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	r.mu.Lock()
	r.epoch++
	r.why = ""
	r.file, r.at = file, end
	r.mu.Unlock()
	for {
		ev, err := s.GetEvent(ctx)
		if err != nil {
			return err
		}
		r.event(ev)
	}
}

// event takes one event into account.
func (r *Rows) event(ev *replication.BinlogEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		r.file = string(e.NextLogName)
		r.at = Pos{File: fileSeq(r.file), Offset: int64(e.Position)}
		r.notifyLocked()
		return
	case *replication.RowsEvent:
		r.rowsLocked(ev.Header.EventType, e)
	case *replication.QueryEvent:
		r.queryLocked(string(e.Schema), string(e.Query))
	case *replication.TransactionPayloadEvent:
		for _, inner := range e.Events {
			switch ie := inner.Event.(type) {
			case *replication.RowsEvent:
				r.rowsLocked(inner.Header.EventType, ie)
			case *replication.QueryEvent:
				r.queryLocked(string(ie.Schema), string(ie.Query))
			}
		}
	}
	if ev.Header.LogPos > 0 {
		r.at = Pos{File: fileSeq(r.file), Offset: int64(ev.Header.LogPos)}
		r.notifyLocked()
	}
}

func (r *Rows) notifyLocked() {
	close(r.moved)
	r.moved = make(chan struct{})
}

// queryLocked takes a statement into account: one that may change rows
// without logging them makes the databases it may have touched unsure —
// the session's database, and those whose names it holds (a statement may
// name a table of a database other than its session's).
func (r *Rows) queryLocked(db, query string) {
	_, stmt, changes := statement(query)
	if !changes {
		return
	}
	why := "the binary log holds a statement that changed rows without logging them: " + shorten(stmt)
	for name, d := range r.dbs {
		if d.why == "" && (name == db || strings.Contains(query, name)) {
			d.why = why
		}
	}
}

// rowsLocked records the keys of the rows of one rows event.
func (r *Rows) rowsLocked(kind replication.EventType, e *replication.RowsEvent) {
	if e.Table == nil {
		return
	}
	d := r.dbs[string(e.Table.Schema)]
	if d == nil || d.why != "" {
		return
	}
	name := string(e.Table.Table)
	t := d.rows[name]
	if t == nil {
		t = &tableRows{keys: map[string]bool{}}
		d.rows[name] = t
	}
	switch kind {
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.PARTIAL_UPDATE_ROWS_EVENT, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		t.removed = true
	}
	if t.why != "" {
		return
	}
	tbl := d.tables[name]
	if tbl == nil {
		t.why = "it is not one of the template's tables"
		return
	}
	update := kind == replication.UPDATE_ROWS_EVENTv0 || kind == replication.UPDATE_ROWS_EVENTv1 ||
		kind == replication.UPDATE_ROWS_EVENTv2 || kind == replication.PARTIAL_UPDATE_ROWS_EVENT ||
		kind == replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1
	for i, row := range e.Rows {
		var skipped []int
		if i < len(e.SkippedColumns) {
			skipped = e.SkippedColumns[i]
		}
		if update && i%2 == 1 {
			// An update's after image holds the columns it changed only
			// (binlog_row_image=MINIMAL): the key is the before image's
			// where it is not there.
			row, skipped = afterImage(tbl.Key, e.Rows[i-1], row, skipped)
		}
		key, why := KeyLiteral(tbl.Key, row, skipped)
		if why != "" {
			t.why, t.keys = why, nil
			return
		}
		if !t.keys[key] {
			t.keys[key] = true
			d.keys++
		}
		if len(t.keys) > r.cfg.MaxKeys {
			d.keys -= len(t.keys)
			t.why, t.keys = fmt.Sprintf("more than %d of its rows changed", r.cfg.MaxKeys), nil
			return
		}
		if d.keys > r.cfg.MaxKeys*dbKeysFactor {
			d.why, d.rows, d.keys = fmt.Sprintf("more than %d rows of its tables changed", r.cfg.MaxKeys*dbKeysFactor), map[string]*tableRows{}, 0
			return
		}
	}
}

// afterImage returns an update's after image with the key columns it
// lacks taken from its before image.
func afterImage(key []schema.KeyColumn, before, after []any, skipped []int) ([]any, []int) {
	row := slices.Clone(after)
	for _, col := range key {
		if col.Ordinal < len(row) && col.Ordinal < len(before) && slices.Contains(skipped, col.Ordinal) {
			row[col.Ordinal] = before[col.Ordinal]
			skipped = slices.DeleteFunc(slices.Clone(skipped), func(s int) bool { return s == col.Ordinal })
		}
	}
	return row, skipped
}

// KeyLiteral renders the key of a row image as SQL: a literal, or a row
// constructor for a key of several columns; or says why it cannot.
func KeyLiteral(key []schema.KeyColumn, row []any, skipped []int) (string, string) {
	if len(key) == 0 {
		return "", "it has no primary key"
	}
	parts := make([]string, len(key))
	for i, col := range key {
		if col.Ordinal >= len(row) || row[col.Ordinal] == nil {
			return "", "a row image in the binary log lacks its key column " + col.Name
		}
		if slices.Contains(skipped, col.Ordinal) {
			return "", "a row image in the binary log lacks its key column " + col.Name
		}
		lit, ok := literal(col, row[col.Ordinal])
		if !ok {
			return "", fmt.Sprintf("its key column %s is of type %s, which is restored whole", col.Name, col.Type)
		}
		parts[i] = lit
	}
	if len(parts) == 1 {
		return parts[0], ""
	}
	return "(" + strings.Join(parts, ",") + ")", ""
}

// intBits are the widths of the integer types a key may have.
var intBits = map[string]uint{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}

// literal renders one key value of col as SQL. Integers come signed
// when the log does not say a column is unsigned (MariaDB without
// binlog_row_metadata=FULL), and are taken back modulo their width.
// Strings are written in hex with their column's character set, so that
// the comparison is the column's own and its index serves.
func literal(col schema.KeyColumn, v any) (string, bool) {
	if bits, ok := intBits[col.Type]; ok {
		return intLiteral(v, bits, col.Unsigned)
	}
	s, ok := v.(string)
	if !ok {
		if b, isBytes := v.([]byte); isBytes {
			s, ok = string(b), true
		}
	}
	switch {
	case !ok:
		return "", false
	case (col.Type == "char" || col.Type == "varchar") && col.Charset != "":
		if s == "" {
			return "_" + col.Charset + "''", true
		}
		return fmt.Sprintf("_%s X'%x'", col.Charset, s), true
	case col.Type == "varbinary":
		if s == "" {
			return "X''", true
		}
		return fmt.Sprintf("X'%x'", s), true
	}
	// BINARY loses its trailing zero bytes in the log; dates, decimals and
	// the rest are not written back from their logged form.
	return "", false
}

// intLiteral renders an integer of a column bits wide, taking a negative
// value of an unsigned column back modulo 2^bits.
func intLiteral(v any, bits uint, unsigned bool) (string, bool) {
	var i int64
	switch x := v.(type) {
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), true
	default:
		return "", false
	}
	if unsigned && i < 0 {
		u := uint64(i)
		if bits < 64 {
			u &= 1<<bits - 1
		}
		return strconv.FormatUint(u, 10), true
	}
	return strconv.FormatInt(i, 10), true
}

// logEnd reads where the binary log ends: the last file of SHOW BINARY
// LOGS and its size; file is "" when the server keeps no log.
func logEnd(ctx context.Context, q Querier) (end Pos, file string, err error) {
	files, err := binlogFiles(ctx, q)
	if err != nil || len(files) == 0 {
		return Pos{}, "", err
	}
	last := files[len(files)-1]
	return Pos{File: fileSeq(last.name), Offset: last.size}, last.name, nil
}
