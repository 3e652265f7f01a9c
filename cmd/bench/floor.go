package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/schema"
)

// The raw floor of each strategy's work: what the server itself must do to
// put back exactly the tables the standard test dirtied, issued by the
// benchmark as one round trip, with no daemon in between. It runs on the
// daemon's own server, against a copy of the template made by the
// benchmark, so that the daemon's reset and its floor differ only in what
// the daemon adds (ending sessions, detection, HTTP, bookkeeping).
const (
	vFloorTruncate = "floor truncate"
	vFloorSnapshot = "floor snapshot"
	vFloorRollback = "floor rollback"
	// vFloorSnapshotKeep: the snapshot restore without the rewind.
	vFloorSnapshotKeep = "floor snapshot, keep AUTO_INCREMENT"
)

// floorOf names each strategy variant's floor.
var floorOf = map[string]string{vTruncate: vFloorTruncate, vSnapshot: vFloorSnapshot, vRollback: vFloorRollback,
	vSnapshotKeep: vFloorSnapshotKeep}

// floorDatabase is the benchmark's own copy of the template on the
// daemon's server.
const floorDatabase = "tdbbench_floor"

// floorVariant runs the standard test on the floor database (inside a
// transaction it rolls back, for rollback) and then the strategy's restore
// of the dirty tables in one round trip:
//
//   - truncate: TRUNCATE, INSERT … SELECT from the template, ALTER TABLE …
//     AUTO_INCREMENT back to the template's, per dirty table;
//   - snapshot: the same with DELETE instead of TRUNCATE;
//   - rollback: the ALTER TABLE … AUTO_INCREMENT of each dirty table only
//     (InnoDB does not roll the counter back).
type floorVariant struct {
	label string
	db    *sql.DB
	sql   string // the one round trip
	p     procs
}

// newFloorVariants makes the floor database on the daemon's (one) server,
// a copy of template's database made table by table with its foreign
// keys, and the three floor variants on it.
func newFloorVariants(ctx context.Context, d *daemon, template string) (_ []variant, err error) {
	t, err := d.api.GetTemplate(ctx, template)
	if err != nil {
		return nil, err
	}
	insts, err := d.api.ListInstances(ctx)
	if err != nil {
		return nil, err
	}
	var datadir string
	var p procs
	for _, in := range insts {
		if in.ID == t.InstanceID {
			datadir, p.server = in.Datadir, int(in.Pid)
		}
	}
	if datadir == "" {
		return nil, fmt.Errorf("the instance %s of template %s is not listed", t.InstanceID, template)
	}
	// The native provider's server: root logs in on its Unix socket, which
	// lies beside the datadir.
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "unix", filepath.Join(filepath.Dir(datadir), "mysqld.sock"), ""
	cfg.MultiStatements, cfg.InterpolateParams = true, true
	// As the daemon's own sessions: the floor's restores stay out of the
	// binary log.
	cfg.Params = map[string]string{"sql_log_bin": "0"}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	admin := sql.OpenDB(connector)
	defer admin.Close()
	if err := copyDatabase(ctx, admin, t.Database, floorDatabase); err != nil {
		return nil, fmt.Errorf("copy of the template for the floor: %w", err)
	}
	autoInc := map[string]int64{}
	err = schema.EachRow(ctx, admin, "SELECT TABLE_NAME, AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
		[]any{t.Database}, func(rows *sql.Rows) error {
			var name string
			var ai sql.NullInt64
			if err := rows.Scan(&name, &ai); err != nil {
				return err
			}
			autoInc[name] = max(ai.Int64, 1)
			return nil
		})
	if err != nil {
		return nil, err
	}
	restore := func(clear string, copyRows, rewind bool) string {
		var b strings.Builder
		b.WriteString("SET FOREIGN_KEY_CHECKS = 0")
		for _, tbl := range workload.Dirty {
			if clear != "" {
				fmt.Fprintf(&b, "; %s `%s`", clear, tbl)
			}
			if copyRows {
				fmt.Fprintf(&b, "; INSERT INTO `%s` SELECT * FROM `%s`.`%s`", tbl, t.Database, tbl)
			}
			if rewind {
				fmt.Fprintf(&b, "; ALTER TABLE `%s` AUTO_INCREMENT = %d", tbl, autoInc[tbl])
			}
		}
		b.WriteString("; SET FOREIGN_KEY_CHECKS = 1")
		return b.String()
	}
	cfg.DBName = floorDatabase
	if connector, err = mysql.NewConnector(cfg); err != nil {
		return nil, err
	}
	var vs []variant
	for _, v := range []struct {
		label, reset string
	}{
		{vFloorTruncate, restore("TRUNCATE TABLE", true, true)},
		{vFloorSnapshot, restore("DELETE FROM", true, true)},
		{vFloorRollback, restore("", false, true)},
		{vFloorSnapshotKeep, restore("DELETE FROM", true, false)},
	} {
		db := sql.OpenDB(connector)
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		vs = append(vs, &floorVariant{label: v.label, db: db, sql: v.reset, p: p})
	}
	return vs, nil
}

// copyDatabase makes dst a copy of src's tables: their definitions (with
// foreign keys, under FOREIGN_KEY_CHECKS = 0), rows and AUTO_INCREMENT.
func copyDatabase(ctx context.Context, db *sql.DB, src, dst string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s`; USE `%s`; SET FOREIGN_KEY_CHECKS = 0", dst, dst, dst)); err != nil {
		return err
	}
	var tables []string
	err = schema.EachRow(ctx, conn, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
		[]any{src}, func(rows *sql.Rows) error {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			tables = append(tables, n)
			return nil
		})
	if err != nil {
		return err
	}
	for _, tbl := range tables {
		var name, create string
		if err := conn.QueryRowContext(ctx, fmt.Sprintf("SHOW CREATE TABLE `%s`.`%s`", src, tbl)).Scan(&name, &create); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, create); err != nil {
			return fmt.Errorf("%s: %w", tbl, err)
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO `%s` SELECT * FROM `%s`.`%s`", tbl, src, tbl)); err != nil {
			return fmt.Errorf("%s: %w", tbl, err)
		}
	}
	_, err = conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS = 1")
	return err
}

func (v *floorVariant) name() string { return v.label }

func (v *floorVariant) test(ctx context.Context) error {
	return runTest(ctx, v.db, v.label == vFloorRollback)
}

func (v *floorVariant) reset(ctx context.Context) (ResetSample, error) {
	start := time.Now()
	_, err := v.db.ExecContext(ctx, v.sql)
	return ResetSample{ClientMs: ms(time.Since(start)), Tables: len(workload.Dirty)}, err
}

func (v *floorVariant) procs() procs { return v.p }
func (v *floorVariant) close()       { v.db.Close() }

// floorRatio is a strategy variant's reset p50 over its floor's, from
// the same run.
func floorRatio(r *Results, v string) (ratio, p50, floor float64) {
	s, f := resetSummary(r.Resets, v), resetSummary(r.Resets, floorOf[v])
	return s.P50 / f.P50, s.P50, f.P50
}
