package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
)

// baseServer is a server for the baselines, run without testdbd's daemon:
// the benchmark starts it through the native provider, as a test suite's
// CI would start its MySQL service.
type baseServer struct {
	name     string
	provider *native.Provider
	inst     testdbd.Instance
	admin    *sql.DB          // root over the Unix socket: creates and drops databases
	client   testdbd.Endpoint // what the "application" connects to: TCP, its own user
	diskRoot string           // removed at close (disk-backed server)
	stateDir string
}

// startBaseline starts the disk-backed server (datadir under diskPath,
// default settings: full durability) or the tmpfs server (testdbd's
// disposable-data settings), with its state directory under tmp.
func startBaseline(ctx context.Context, disk bool, tmp, diskPath, pristine string) (_ *baseServer, err error) {
	b := &baseServer{name: "tmpfs"}
	if disk {
		b.name = "disk"
	}
	if b.stateDir, err = os.MkdirTemp(tmp, "b"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	cfg := native.Config{StateDir: b.stateDir, PristineDir: pristine,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if disk {
		if b.diskRoot, err = os.MkdirTemp(diskPath, "tdbb-disk-"); err != nil {
			return nil, err
		}
		// Under a root daemon the server runs as another user, which must reach it.
		if err := os.Chmod(b.diskRoot, 0o711); err != nil {
			return nil, err
		}
		cfg.DatadirRoot, cfg.AllowDisk = b.diskRoot, true
	}
	if b.provider, err = native.New(ctx, cfg); err != nil {
		return nil, fmt.Errorf("%s baseline: %w", b.name, err)
	}
	var opts testdbd.StartOptions // no settings: the server's defaults, full durability
	if !disk {
		opts.Args = instance.Args(b.provider.Engine(), instance.DefaultConfig)
	}
	if b.inst, err = b.provider.Start(ctx, opts); err != nil {
		return nil, fmt.Errorf("%s baseline: %w", b.name, err)
	}
	if b.admin, err = instance.OpenAdmin(b.inst.Admin(), 2); err != nil {
		return nil, err
	}
	host, port := b.inst.ClientAddr()
	b.client = testdbd.Endpoint{Host: host, Port: port, User: "bench", Password: "bench"}
	if _, err := b.admin.ExecContext(ctx, "CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'bench';"+
		"GRANT ALL ON *.* TO 'bench'@'127.0.0.1'"); err != nil {
		return nil, fmt.Errorf("%s baseline: create user: %w", b.name, err)
	}
	return b, nil
}

// ServerInfo is a baseline server, with the settings that decide what
// durability costs read back from it.
type ServerInfo struct {
	Name     string            `json:"name"`
	Datadir  string            `json:"datadir"`
	OnTmpfs  bool              `json:"on_tmpfs"`
	Settings map[string]string `json:"settings"` // SELECT @@GLOBAL.x
}

// info reads back the settings that decide what durability costs.
func (b *baseServer) info(ctx context.Context) (ServerInfo, error) {
	inf := b.inst.Info(ctx)
	s := ServerInfo{Name: b.name, Datadir: inf.Datadir, OnTmpfs: inf.DatadirOnTmpfs, Settings: map[string]string{}}
	for _, v := range durabilitySettings {
		var val sql.NullString
		if err := b.admin.QueryRowContext(ctx, "SELECT @@GLOBAL."+v).Scan(&val); err != nil {
			return s, fmt.Errorf("read %s: %w", v, err)
		}
		s.Settings[v] = val.String
	}
	return s, nil
}

// durabilitySettings are the server variables recorded for every baseline.
var durabilitySettings = []string{
	"version", "innodb_flush_log_at_trx_commit", "innodb_doublewrite", "innodb_flush_method", "log_bin", "sync_binlog",
}

func (b *baseServer) close() {
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if b.admin != nil {
		b.admin.Close()
	}
	if b.provider != nil {
		_ = b.provider.Close(ctx)
	}
	if b.diskRoot != "" {
		_ = os.RemoveAll(b.diskRoot)
	}
	_ = os.RemoveAll(b.stateDir)
}

// migrateFresh is Laravel's `migrate:fresh` for one worker: drop and
// create its database, run every migration and the seed, over a new
// connection of the application's user.
func (b *baseServer) migrateFresh(ctx context.Context, database string, src migrations.Source) error {
	q := schema.Quote(database)
	if _, err := b.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+q+"; CREATE DATABASE "+q); err != nil {
		return fmt.Errorf("recreate %s: %w", database, err)
	}
	db, err := b.open(database)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrations.Run(ctx, db, src, nil, nil); err != nil {
		return fmt.Errorf("migrate %s: %w", database, err)
	}
	return nil
}

// open opens a pool of one connection of the application's user (one test
// worker's) to database.
func (b *baseServer) open(database string) (*sql.DB, error) {
	return instance.OpenDatabase(b.client, database, 1)
}

// laravel is Laravel's DatabaseTruncation on one worker's connection:
// with foreign key checks off, one `select exists(...)` per table (the
// listing is cached after the first test, the migrations table excluded),
// TRUNCATE of every table that has rows, then the seeder, one statement per
// round trip.
type laravel struct {
	conn   *sql.Conn
	tables []string
	seed   []string
}

func newLaravel(ctx context.Context, conn *sql.Conn, src migrations.Source) (*laravel, error) {
	l := &laravel{conn: conn}
	rows, err := conn.QueryContext(ctx, "SELECT table_name FROM information_schema.tables "+
		"WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' AND table_name <> 'goose_db_version' ORDER BY table_name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		l.tables = append(l.tables, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(src.Seed, ";\n") {
		if s = strings.TrimSpace(s); s != "" {
			l.seed = append(l.seed, s)
		}
	}
	return l, nil
}

// truncate runs one Laravel-style truncation and returns the number of
// tables it truncated.
func (l *laravel) truncate(ctx context.Context) (int, error) {
	if _, err := l.conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS=0"); err != nil {
		return 0, err
	}
	var nonEmpty []string
	for _, t := range l.tables {
		var exists bool
		q := "select exists(select * from " + schema.Quote(t) + ") as `exists`"
		if err := l.conn.QueryRowContext(ctx, q).Scan(&exists); err != nil {
			return 0, err
		}
		if exists {
			nonEmpty = append(nonEmpty, t)
		}
	}
	for _, t := range nonEmpty {
		if _, err := l.conn.ExecContext(ctx, "truncate table "+schema.Quote(t)); err != nil {
			return 0, err
		}
	}
	for _, s := range l.seed {
		if _, err := l.conn.ExecContext(ctx, s); err != nil {
			return 0, err
		}
	}
	if _, err := l.conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS=1"); err != nil {
		return 0, err
	}
	return len(nonEmpty), nil
}

// standardSource is the standard workload with n tables.
func standardSource(n int) migrations.Source { return workload.Standard(n) }
