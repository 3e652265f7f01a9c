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
	variable string // global variable read back with SELECT @@GLOBAL.<variable>
	flag     string // command-line option
	want     string // the value asked for, as the server would show it
}

// settings returns the disposable-data settings for flavor: no binary log, no
// doublewrite, no flush on commit, small buffers, statistics that never
// recalculate on their own (dirty-table detection relies on it), table caches
// large enough that no table is evicted, and short lock waits.
func settings(flavor testdbd.Flavor, c Config) []setting {
	c = c.withDefaults()
	kv := func(name, value string) setting {
		return setting{variable: name, flag: "--" + strings.ReplaceAll(name, "_", "-") + "=" + value, want: value}
	}
	s := []setting{
		{variable: "log_bin", flag: "--skip-log-bin", want: "OFF"},
		kv("sync_binlog", "0"),
		kv("innodb_flush_log_at_trx_commit", "0"),
		kv("innodb_doublewrite", "OFF"),
		kv("innodb_file_per_table", "ON"),
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
	}
	switch flavor {
	case testdbd.MariaDB:
		s = append(s,
			kv("innodb_flush_method", "fsync"),
			kv("innodb_log_file_size", strconv.Itoa(InnoDBLogFileBytes)),
			kv("aria_pagecache_buffer_size", strconv.Itoa(8<<20)),
		)
	case testdbd.MySQL:
		s = append(s,
			kv("innodb_flush_method", "fsync"),
			kv("innodb_redo_log_capacity", strconv.Itoa(8<<20)),
			kv("mysqlx", "OFF"),
		)
	}
	return s
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

// InnoDBLogFileBytes is the redo log size of MariaDB datadirs. It must be the
// same at initialization and at every start, or the server resizes the log.
const InnoDBLogFileBytes = 8 << 20

// Args returns the command-line options that ask for the settings.
func Args(flavor testdbd.Flavor, c Config) []string {
	var args []string
	for _, s := range settings(flavor, c) {
		args = append(args, s.flag)
	}
	return args
}

// ReadSettings reads every setting testdbd asks for back from the running
// server, in one query, and says for each whether it took.
func ReadSettings(ctx context.Context, db *sql.DB, flavor testdbd.Flavor, c Config) ([]testdbd.Setting, error) {
	want := settings(flavor, c)
	cols := make([]string, len(want))
	for i, s := range want {
		cols[i] = "@@GLOBAL." + s.variable
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
		out[i] = testdbd.Setting{Name: s.variable, Requested: s.want, Actual: actual, OK: sameValue(s.variable, s.want, actual)}
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
