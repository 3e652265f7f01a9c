package instance

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/testdbd/testdbd"
)

// Config holds the tunable parts of the server settings.
type Config struct {
	BufferPoolBytes int64 // innodb_buffer_pool_size
	MaxConnections  int   // max_connections
	TableCache      int   // table_open_cache and table_definition_cache
}

// DefaultConfig is what the daemon uses unless told otherwise.
var DefaultConfig = Config{
	BufferPoolBytes: 32 << 20,
	MaxConnections:  512,
	TableCache:      20000,
}

// setting is one server setting: how to ask for it on the command line and
// how to read it back.
type setting struct {
	variable string // the name shown; read back as @@GLOBAL.<variable> unless read is set
	read     string // an SQL expression that reads the value back, when not a global variable
	// flag is the command-line option. Empty for a value the provider asks
	// for itself (Hardening) or that is the engine's default: it is only
	// read back and checked.
	flag  string
	want  string                // the value asked for, as the server would show it
	match func(got string) bool // decides whether got means want, when comparing values is not enough
}

// settings returns the disposable-data settings for engine e: no
// doublewrite, no flush on commit, small buffers, statistics that never
// recalculate on their own (dirty-table detection relies on it), table
// caches large enough that no table is evicted, and short lock waits; a
// binary log that is never synced (see BinlogName); and the hardening every
// provider applies (see Hardening), read back.
func settings(e testdbd.Engine, c Config) []setting {
	c = c.withDefaults()
	s := []setting{
		{variable: "log_bin", flag: "--log-bin=" + BinlogName, want: "ON"},
		kv("sync_binlog", "0"),
		kv("binlog_row_image", "MINIMAL"),
		kv("binlog_checksum", "NONE"),
		// Only the daemon purges it, after reading it (binlog.Log.Tidy).
		kv("binlog_expire_logs_seconds", "0"),
		// Small files, so that the daemon can purge what it has read
		// while a test goes on writing (see BinlogFileBytes), and a
		// bound on what one transaction or statement may log (see
		// TransactionLogBytes).
		kv("max_binlog_size", strconv.Itoa(BinlogFileBytes)),
		kv("max_binlog_cache_size", strconv.Itoa(TransactionLogBytes)),
		kv("max_binlog_stmt_cache_size", strconv.Itoa(TransactionLogBytes)),
		// Migrations and tests create functions and triggers as accounts
		// without SUPER, which the binary log refuses otherwise.
		kv("log_bin_trust_function_creators", "ON"),
		kv("innodb_flush_log_at_trx_commit", "0"),
		kv("innodb_doublewrite", "OFF"),
		kv("innodb_buffer_pool_size", strconv.FormatInt(c.BufferPoolBytes, 10)),
		kv("innodb_log_buffer_size", strconv.Itoa(4<<20)),
		kv("innodb_adaptive_hash_index", "OFF"),
		kv("innodb_stats_auto_recalc", "OFF"),
		kv("innodb_lock_wait_timeout", "10"),
		kv("lock_wait_timeout", "10"),
		{variable: "skip_name_resolve", flag: "--skip-name-resolve", want: "ON"},
		kv("max_connections", strconv.Itoa(c.MaxConnections)),
		kv("table_open_cache", strconv.Itoa(c.TableCache)),
		kv("table_definition_cache", strconv.Itoa(c.TableCache)),
		kv("open_files_limit", strconv.Itoa(c.openFiles())),
		kv("performance_schema", "OFF"),
		kv("event_scheduler", "OFF"),
		kv("character_set_server", "utf8mb4"),
		kv("max_allowed_packet", strconv.Itoa(64<<20)),
		kv("key_buffer_size", strconv.Itoa(1<<20)),
		// Hardening: no table files outside the datadir (CREATE TABLE ...
		// DATA DIRECTORY is ignored), no server-side file import or export.
		check("have_symlink", "DISABLED"),
	}
	switch e.Flavor {
	case testdbd.MariaDB:
		if atLeast(e, 11, 0) {
			// 11.0 deprecated innodb_file_per_table (always on) and
			// innodb_flush_method (its fsync is these two settings now).
			s = append(s,
				check("innodb_file_per_table", "ON"),
				kv("innodb_data_file_buffering", "ON"),
				kv("innodb_log_file_buffering", "ON"),
			)
		} else {
			s = append(s,
				kv("innodb_file_per_table", "ON"),
				kv("innodb_flush_method", "fsync"),
			)
		}
		s = append(s, undoSettings(e)...)
		s = append(s,
			kv("binlog_format", "ROW"),
			// The statement text beside each row event: not read, and it
			// would copy every test statement into the log.
			kv("binlog_annotate_row_events", "OFF"),
			kv("innodb_log_file_size", strconv.Itoa(InnoDBLogFileBytes)),
			kv("aria_pagecache_buffer_size", strconv.Itoa(8<<20)),
			setting{variable: "secure_file_priv", want: "an empty directory of its own", match: isDirectory},
		)
	case testdbd.MySQL:
		s = append(s,
			// MySQL 9's defaults turn GTIDs on with the binary log, and
			// their consistency rules refuse statements a server without a
			// binary log runs (CREATE TABLE … SELECT in a transaction,
			// non-transactional tables beside InnoDB ones).
			kv("gtid_mode", "OFF"),
			kv("enforce_gtid_consistency", "OFF"),
			// A prepared XA transaction stays with the session that
			// prepared it until that session ends, as on MariaDB: ON (the
			// default) detaches it at XA PREPARE, and then any account
			// that knows its xid may commit or roll it back, another
			// lease's test too (see package binlog).
			kv("xa_detach_on_prepare", "OFF"),
			kv("innodb_file_per_table", "ON"),
			kv("innodb_flush_method", "fsync"),
			// 8 MB as MariaDB's redo log. 32 or 64 MB made a burst of 1,000
			// CREATE TABLE + INSERT at most 10% faster on tmpfs (noise
			// level) for 24 or 56 MB more tmpfs per server.
			kv("innodb_redo_log_capacity", strconv.Itoa(InnoDBLogFileBytes)),
			// Undo logs: MySQL keeps them in two undo tablespaces of 16 MB
			// and truncates one once it outgrows innodb_max_undo_log_size,
			// 1 GB by default: at 16 MB a test's large transaction gives
			// its space back once purged (see undoSettings).
			check("innodb_undo_log_truncate", "ON"),
			kv("innodb_max_undo_log_size", strconv.Itoa(16<<20)),
			// A plugin, not a variable: read its status instead.
			setting{variable: "mysqlx", flag: "--mysqlx=OFF", want: "OFF",
				read: "(SELECT IF(MAX(PLUGIN_STATUS) = 'ACTIVE', 'ON', 'OFF') FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'mysqlx')"},
			// Debian's build interleaves the buffer pool over NUMA nodes,
			// which Docker's seccomp profile refuses (a warning per start).
			kv("innodb_numa_interleave", "OFF"),
			// One LRU list of table_open_cache entries instead of 16 sixteenths:
			// a table closed by eviction loses the modification counter that
			// dirty-table detection reads.
			kv("table_open_cache_instances", "1"),
			// information_schema.TABLES reads AUTO_INCREMENT and sizes live,
			// not from a day-long cache.
			kv("information_schema_stats_expiry", "0"),
			check("secure_file_priv", "NULL"),
		)
	}
	return s
}

// undoSettings returns MariaDB's undo log settings. Undo logs live in the
// system tablespace (ibdata1) unless undo tablespaces are asked for, and
// ibdata1 never shrinks: one test that inserted and then deleted 400,000
// rows (or whose reset deleted them) grew it from 12 to 76 MB for the
// server's life. In undo tablespaces truncated once one grows past
// innodb_max_undo_log_size (10 MB, their initial size), the same test
// leaves ibdata1 at 12 MB, and the undo tablespaces, 43 MB at the delete,
// back at 10 MB each within seconds of the purge. Three, as MariaDB 11
// initializes datadirs with (its images' seeds have them, and a server
// started with another number keeps theirs); 30 MB of tmpfs per server.
// Datadirs are initialized with them (InitArgs): MariaDB 10.11 also
// creates them at a start from a datadir that has none, but only after a
// slow shutdown. Versions before 10.11 are not asked for them (they could
// not be added to a datadir that has none).
func undoSettings(e testdbd.Engine) []setting {
	if !atLeast(e, 10, 11) {
		return nil
	}
	return []setting{
		kv("innodb_undo_tablespaces", "3"),
		kv("innodb_undo_log_truncate", "ON"),
		kv("innodb_max_undo_log_size", strconv.Itoa(10<<20)),
	}
}

// kv is a setting asked for on the command line as --name=value.
func kv(name, value string) setting {
	return setting{variable: name, flag: "--" + strings.ReplaceAll(name, "_", "-") + "=" + value, want: value}
}

// check is a setting only read back: the engine's default, or asked for
// by the provider.
func check(name, value string) setting { return setting{variable: name, want: value} }

// InitArgs returns the options a datadir of engine e must be initialized
// with (mariadb-install-db, mysqld --initialize) for the settings to take:
// MariaDB's undo tablespaces (see undoSettings). A server started from a
// datadir without them creates them only if the datadir's last shutdown
// was slow (innodb_fast_shutdown=0), which mariadb-install-db does or not
// depending on the user it runs as.
func InitArgs(e testdbd.Engine) []string {
	var args []string
	for _, s := range undoSettings(e) {
		if s.variable == "innodb_undo_tablespaces" {
			args = append(args, s.flag)
		}
	}
	return args
}

// BinlogFileBytes is the size at which a server starts a new binary log
// file (max_binlog_size; 1 GB by default). The daemon reads and purges
// the log as it grows (binlog.Log.Tidy), but only whole files: with 1 GB
// files nothing could be purged before a test had written a gigabyte.
// Starting a new file every 4 MB costs nothing measurable (20,000
// single-row commits took the server the same CPU time, 0.63 s, with 1 GB,
// 4 MB and 1 MB files). A transaction is never split: one larger than
// this makes a file of its own.
const BinlogFileBytes = 4 << 20

// TransactionLogBytes is the most one transaction (max_binlog_cache_size)
// or one statement on tables that have no transactions
// (max_binlog_stmt_cache_size) may write to the binary log; past it the
// statement fails with error 1197 (or 1705), which names the variable, and
// a transaction goes on without it. Until its commit a transaction's log
// is kept in a file in the server's tmpdir, which is on the same tmpfs as
// the datadir (natively) and counts in no database; at the commit it is
// copied whole into the binary log. Without a bound one transaction could
// fill the tmpfs twice over with space the daemon cannot blame on its
// lease. 128 MB is far more than a test writes in one transaction (a
// reset writes nothing there: the daemon's sessions stay out of the log).
const TransactionLogBytes = 128 << 20

// BinlogName is the base name of the binary log files in a server's
// datadir. The servers keep a binary log although nothing replicates from
// them: it is the one place where a server records which tables a prepared
// XA transaction wrote to (package binlog), so that a reset can roll back the
// ones a test left in its database. Nothing syncs it (sync_binlog=0), the
// daemon's own sessions do not write to it (OpenAdmin), and the daemon
// purges it as it grows (binlog.Log.Tidy).
const BinlogName = "testdbd-bin"

// Hardening returns the options every provider starts a server with, after
// the caller's settings so that none can weaken them: server-side file
// import and export confined (MySQL: secure_file_priv=NULL, which disables
// LOAD DATA INFILE, SELECT ... INTO OUTFILE and LOAD_FILE(); MariaDB has no
// such value, so filesDir: an empty directory the server cannot write to),
// and no symbolic links, so that CREATE TABLE ... DATA DIRECTORY writes
// nothing outside the datadir (MySQL's default; the option is deprecated
// there).
func Hardening(e testdbd.Engine, filesDir string) []string {
	if e.Flavor == testdbd.MySQL {
		return []string{"--secure-file-priv=NULL"}
	}
	return []string{"--secure-file-priv=" + filesDir, "--skip-symbolic-links"}
}

// isDirectory reports whether a secure_file_priv value names a directory
// (MariaDB shows NULL or an empty value when file access is unrestricted).
func isDirectory(got string) bool {
	return got != "" && got != "NULL" && got != "/"
}

// atLeast reports whether e's version is major.minor or later.
func atLeast(e testdbd.Engine, major, minor int) bool {
	parts := strings.SplitN(e.Version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// withDefaults fills in zero fields and shrinks the table caches to what the
// process's open-file limit allows (the server would shrink them itself).
func (c Config) withDefaults() Config {
	if c.BufferPoolBytes == 0 {
		c.BufferPoolBytes = DefaultConfig.BufferPoolBytes
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultConfig.MaxConnections
	}
	if c.TableCache == 0 {
		c.TableCache = DefaultConfig.TableCache
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Max != unix.RLIM_INFINITY {
		if room := (int(lim.Max) - c.MaxConnections - fileReserve) / 2; room < c.TableCache && room > 400 {
			c.TableCache = room
		}
	}
	return c
}

// fileReserve is the number of file descriptors kept for everything but
// tables and connections.
const fileReserve = 200

func (c Config) openFiles() int { return c.TableCache*2 + c.MaxConnections + fileReserve }

// TableCacheSize returns the table_open_cache and table_definition_cache sizes
// the server will be asked for.
func (c Config) TableCacheSize() int { return c.withDefaults().TableCache }

// InnoDBLogFileBytes is the redo log size of datadirs (MariaDB's
// innodb_log_file_size, MySQL's innodb_redo_log_capacity). MariaDB's must be
// the same at initialization and at every start, or the server resizes the
// log.
const InnoDBLogFileBytes = 8 << 20

// Args returns the command-line options that ask for the settings of engine e.
func Args(e testdbd.Engine, c Config) []string {
	var args []string
	for _, s := range settings(e, c) {
		if s.flag != "" {
			args = append(args, s.flag)
		}
	}
	return args
}

// ReadSettings reads every setting testdbd asks for back from the running
// server, in one query, and says for each whether it took.
func ReadSettings(ctx context.Context, db *sql.DB, e testdbd.Engine, c Config) ([]testdbd.Setting, error) {
	want := settings(e, c)
	cols := make([]string, len(want))
	for i, s := range want {
		cols[i] = "@@GLOBAL." + s.variable
		if s.read != "" {
			cols[i] = s.read
		}
	}
	vals := make([]sql.NullString, len(want))
	ptrs := make([]any, len(want))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := db.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", ")).Scan(ptrs...); err != nil {
		return nil, fmt.Errorf("read back server settings: %w", err)
	}
	out := make([]testdbd.Setting, len(want))
	for i, s := range want {
		actual := vals[i].String
		if !vals[i].Valid {
			actual = "NULL"
		}
		ok := sameValue(s.variable, s.want, actual)
		if s.match != nil {
			ok = s.match(actual)
		}
		out[i] = testdbd.Setting{Name: s.variable, Requested: s.want, Actual: actual, OK: ok}
	}
	return out, nil
}

// sameValue compares a requested and an actual value the way the server
// means them: booleans as ON/OFF/1/0, numbers as numbers, the rest
// case-insensitively. open_files_limit may be raised by the server.
func sameValue(name, want, got string) bool {
	norm := func(v string) string {
		switch strings.ToUpper(v) {
		case "ON", "1", "TRUE", "YES":
			return "1"
		case "OFF", "0", "FALSE", "NO":
			return "0"
		}
		return strings.ToLower(v)
	}
	if name == "open_files_limit" {
		w, err1 := strconv.ParseInt(want, 10, 64)
		g, err2 := strconv.ParseInt(got, 10, 64)
		return err1 == nil && err2 == nil && g >= w
	}
	return norm(want) == norm(got)
}
