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
	kv := func(name, value string) setting {
		return setting{variable: name, flag: "--" + strings.ReplaceAll(name, "_", "-") + "=" + value, want: value}
	}
	check := func(name, value string) setting { return setting{variable: name, want: value} }
	s := []setting{
		{variable: "log_bin", flag: "--log-bin=" + BinlogName, want: "ON"},
		kv("sync_binlog", "0"),
		kv("binlog_row_image", "MINIMAL"),
		kv("binlog_checksum", "NONE"),
		// Only the daemon purges it, after reading it (binlog.Log.Tidy).
		kv("binlog_expire_logs_seconds", "0"),
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
