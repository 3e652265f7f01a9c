package strategies

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/filename"
	"github.com/testdbd/testdbd/schema"
)

// scan is one detection query shared by the resets on one server that asked
// for it before it started: InnoDB's counters of all their databases' tables
// (information_schema walks every table on the server whatever the filter,
// so one walk for many databases costs about what one walk for one does),
// and the server's DDL counters.
type scan struct {
	dbs       map[string]bool // databases whose table counters are read
	perDB     map[string]bool // those whose routines' digest is read (Target.Dir)
	status    bool            // whether the server's DDL counters are read
	done      chan struct{}
	tables    map[string]map[string]TableState // by database, then table
	routines  map[string]string                // by database
	stats     map[string]map[string]bool       // tables whose statistics moved, by database
	second    int64                            // the server's clock when tables was read
	serverDDL int64
	own       mark
	err       error
}

// observeShared returns what a detection query read for database; the query
// starts after the call (so it sees everything done before), possibly
// together with other databases' resets. Both halves run on statusDB, a pool
// the caller's connections never wait on. With perDB the database's
// routines and events are digested, otherwise with status the server's DDL
// counters are read.
func (c *DDLCounter) observeShared(ctx context.Context, statusDB *sql.DB, flavor testdbd.Flavor, database string, perDB, status bool) (*observation, error) {
	c.smu.Lock()
	if c.next == nil {
		c.next = &scan{dbs: map[string]bool{}, perDB: map[string]bool{}, done: make(chan struct{})}
	}
	s := c.next
	s.dbs[database] = true
	if perDB {
		s.perDB[database] = true
	} else if status {
		s.status = true
	}
	if !c.scanning {
		c.scanning = true
		go c.runScans(statusDB, flavor)
	}
	c.smu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	tables := s.tables[database]
	if tables == nil {
		tables = map[string]TableState{}
	}
	return &observation{tables: tables, second: s.second, serverDDL: s.serverDDL, own: s.own, routines: s.routines[database],
		statsTouched: s.stats[database]}, nil
}

// runScans runs the pending scans one after another until none is pending.
func (c *DDLCounter) runScans(db *sql.DB, flavor testdbd.Flavor) {
	for {
		c.smu.Lock()
		s := c.next
		c.next = nil
		if s == nil {
			c.scanning = false
			c.smu.Unlock()
			return
		}
		c.smu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if s.status {
			// The server's counters are compared with the daemon's own
			// count: read them with no batch of the daemon in flight.
			s.own, s.err = c.observe(func() error { return s.run(ctx, db, flavor) })
		} else {
			s.err = s.run(ctx, db, flavor)
		}
		cancel()
		close(s.done)
	}
}

// run reads the tables' counters and, on a second connection of db at the
// same time, the DDL counters and the routines' digests asked for.
func (s *scan) run(ctx context.Context, db *sql.DB, flavor testdbd.Flavor) error {
	other := make(chan error, 1)
	go func() {
		var err error
		if s.status {
			s.serverDDL, err = readDDLStatus(ctx, db)
		}
		if err == nil && len(s.perDB) > 0 {
			s.routines, err = readRoutineDigests(ctx, db, s.perDB)
		}
		if err == nil {
			s.stats, err = readStatsMoved(ctx, db, s.dbs)
		}
		other <- err
	}()
	tables, second, err := readTableStates(ctx, db, flavor, s.dbs)
	s.tables, s.second = tables, second
	return errors.Join(err, <-other)
}

// readRoutineDigests returns, for each of dbs that has any, a digest of its
// procedures, functions and events as MariaDB stores them (mysql.proc and
// mysql.event): everything that defines them, so that creating, altering or
// dropping one changes it. The rows are digested here: sorting and hashing
// them on the server (GROUP_CONCAT … ORDER BY, MD5) cost it three times the
// CPU time of sending them.
func readRoutineDigests(ctx context.Context, q queryer, dbs map[string]bool) (map[string]string, error) {
	list := inList(dbs)
	rows, err := q.QueryContext(ctx, `SELECT db, CONCAT_WS(0x1f, 'R', type, name, param_list, returns, body, definer, sql_mode, security_type,
    comment, is_deterministic, sql_data_access, character_set_client, collation_connection, db_collation, aggregate)
  FROM mysql.proc WHERE db IN (`+list+`)
  UNION ALL
  SELECT db, CONCAT_WS(0x1f, 'E', name, body, definer, execute_at, interval_value, interval_field, starts, ends, status,
    on_completion, sql_mode, comment, originator, time_zone, character_set_client, collation_connection, db_collation)
  FROM mysql.event WHERE db IN (`+list+`)`)
	if err != nil {
		return nil, fmt.Errorf("read routines: %w", err)
	}
	defer rows.Close()
	defs := map[string][]string{}
	for rows.Next() {
		var db, def string
		if err := rows.Scan(&db, &def); err != nil {
			return nil, err
		}
		defs[db] = append(defs[db], def)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(defs))
	for db, d := range defs {
		slices.Sort(d)
		h := sha256.New()
		for _, def := range d {
			fmt.Fprintf(h, "%d:%s", len(def), def) // length-prefixed: no two lists hash alike
		}
		out[db] = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// readTableStates reads the detection state of the tables of dbs, by
// database and table, and the server's clock (UNIX_TIMESTAMP()) at the
// reading.
//
// MariaDB: InnoDB's counters (INNODB_SYS_TABLESTATS: table id,
// MODIFIED_COUNTER, NUM_ROWS, AUTOINC). Database names are generated by testdbd
// (letters, digits, underscores), so they appear in NAME as they are; table
// names come filename-encoded ("my@002dtable") and are decoded here.
// Partitions ("t#P#p0") add up to their table.
//
// MySQL: information_schema.TABLES (UPDATE_TIME, AUTO_INCREMENT, and
// TABLE_ROWS: InnoDB's running row count, see fulltextUntouched), read
// fresh (information_schema_stats_expiry is 0 on testdbd's servers). Its
// INNODB_TABLESTATS is no substitute: MODIFIED_COUNTER drops to 0 whenever
// the table's last handle closes, partitioned tables are missing from it,
// and reading it costs time for every table on the server (seconds with
// thousands), where TABLES costs time for the databases asked for only.
// UPDATE_TIME survives closed handles but has a resolution of one second;
// see candidates for how that is dealt with.
func readTableStates(ctx context.Context, q queryer, flavor testdbd.Flavor, dbs map[string]bool) (map[string]map[string]TableState, int64, error) {
	var query string
	if flavor == testdbd.MySQL {
		query = "SELECT TABLE_SCHEMA, TABLE_NAME, 0, 0, COALESCE(TABLE_ROWS, 0), COALESCE(UNIX_TIMESTAMP(UPDATE_TIME), 0), " +
			"COALESCE(AUTO_INCREMENT, 0), UNIX_TIMESTAMP() " +
			"FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA IN (" + inList(dbs) + ")"
	} else {
		var like []string
		for db := range dbs {
			like = append(like, fmt.Sprintf("NAME LIKE '%s/%%'", likeEscape(db)))
		}
		query = "SELECT SUBSTRING_INDEX(NAME, '/', 1), SUBSTRING(NAME, LOCATE('/', NAME) + 1), " +
			"TABLE_ID, MODIFIED_COUNTER, NUM_ROWS, 0, AUTOINC, UNIX_TIMESTAMP() FROM information_schema.INNODB_SYS_TABLESTATS WHERE " +
			strings.Join(like, " OR ")
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, 0, fmt.Errorf("read table counters: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]TableState{}
	var now int64
	for rows.Next() {
		var dbName, table string
		var st TableState
		if err := rows.Scan(&dbName, &table, &st.ID, &st.Modified, &st.Rows, &st.Updated, &st.AutoInc, &now); err != nil {
			return nil, 0, err
		}
		if flavor == testdbd.MySQL && st.AutoInc == 1 {
			// MySQL shows NULL for an empty table's counter until something
			// opens the table, then 1: the same next value, no write.
			st.AutoInc = 0
		}
		if flavor != testdbd.MySQL {
			decoded, err := filename.Decode(table)
			if err != nil {
				// Left out: the reset then finds the table missing and
				// checks everything.
				continue
			}
			table = decoded
		}
		if out[dbName] == nil {
			out[dbName] = map[string]TableState{}
		}
		addTable(out[dbName], table, st)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if now == 0 {
		// No table at all: the clock still matters.
		if err := q.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP()").Scan(&now); err != nil {
			return nil, 0, err
		}
	}
	return out, now, nil
}

// inList is dbs as the list of an SQL IN (...).
func inList(dbs map[string]bool) string {
	in := make([]string, 0, len(dbs))
	for db := range dbs {
		in = append(in, "'"+strings.ReplaceAll(db, "'", "''")+"'")
	}
	return strings.Join(in, ",")
}

// likeEscape escapes a database name for a LIKE pattern in a string literal.
func likeEscape(s string) string {
	return likeEscaper.Replace(s)
}

// ftsAux matches the hidden tables InnoDB keeps for a FULLTEXT index
// (FTS_<table id>_CONFIG, FTS_<table id>_<index id>_INDEX_1, ...; lower
// case on MySQL): they belong to their table, whose own counter moves when
// the index does. Only the prefix is matched: MariaDB's
// INNODB_SYS_TABLESTATS cuts "database/table" at 64 characters, which
// shortens the index tables' names of a database named with 20 or more.
var ftsAux = regexp.MustCompile(`(?i)^fts_[0-9a-f]{16}_`)

// addTable records a table's state; partitions ("t#P#p0") add up, and
// InnoDB's FULLTEXT tables are left out.
func addTable(tables map[string]TableState, name string, st TableState) {
	if ftsAux.MatchString(name) {
		return
	}
	if table, ok := partitionOf(name); ok {
		name = table
		prev := tables[name]
		st.Modified += prev.Modified
		st.Rows += prev.Rows
		st.ID = max(st.ID, prev.ID)
		st.AutoInc = max(st.AutoInc, prev.AutoInc)
		st.Updated = max(st.Updated, prev.Updated)
	}
	tables[name] = st
}

// partitionOf returns the table a partition's name ("t#P#p0", "t#p#p0",
// with subpartitions "t#P#p0#SP#s0") belongs to.
func partitionOf(name string) (string, bool) {
	for _, sep := range []string{"#P#", "#p#"} {
		if i := strings.Index(name, sep); i >= 0 {
			return name[:i], true
		}
	}
	return name, false
}

// readStatsMoved returns the tables of dbs whose InnoDB statistics are no
// longer the ones copied from their template (schema.StatsSentinel): an
// ANALYZE TABLE or a TRUNCATE wrote them since.
func readStatsMoved(ctx context.Context, q queryer, dbs map[string]bool) (map[string]map[string]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT database_name, table_name FROM mysql.innodb_table_stats WHERE database_name IN ("+
		inList(dbs)+") AND last_update <> '"+schema.StatsSentinel+"'")
	if err != nil {
		return nil, fmt.Errorf("read statistics: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var db, table string
		if err := rows.Scan(&db, &table); err != nil {
			return nil, err
		}
		// Filename-encoded, per partition on MySQL ("t#p#p0"). A name that
		// does not decode stays as it is: it matches no table, and the
		// table's counters speak for it.
		if decoded, err := filename.Decode(table); err == nil {
			table = decoded
		}
		table, _ = partitionOf(table)
		if out[db] == nil {
			out[db] = map[string]bool{}
		}
		out[db][table] = true
	}
	return out, rows.Err()
}

// likeEscaper is likeEscape's, built once (a Replacer is costly to build
// and safe to share).
var likeEscaper = strings.NewReplacer(`\`, `\\\\`, `_`, `\_`, `%`, `\%`, `'`, `''`)
