package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/internal/filename"
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

// The least an exact reset through the REST API does on top of its floor,
// in series: a REST round trip to the daemon (GET /healthz, which does no
// work), one read of the worker database's table state in a round trip of
// its own, then the floor's restore. Two reads are timed in every sample,
// InnoDB's counters (INNODB_SYS_TABLESTATS, what testdbd's detection reads
// on MariaDB) and information_schema.TABLES of the one database (what it
// reads on MySQL), and the cheaper counts. Ending the lease's sessions is
// left out, so this is a lower bound for a reset that reads the state
// before restoring and answers over REST (one that folded the read into
// the restore's round trip would save that round trip, about 0.05 ms).
// The truncate variant's also puts back, after its restore, the optimizer
// statistics TRUNCATE empties, as testdbd's resets do (essentialsStats):
// an exact reset keeps each table's statistics equal to its template's.
const essentialsSuffix = " + REST + read"

// essentialsStats describes the truncate essentials' work after the
// restore.
const essentialsStats = "; for truncate, after the restore, the optimizer statistics that `TRUNCATE` empties put back in a round trip " +
	"of its own, as testdbd's resets keep them equal to the template's (the template's rows copied into `mysql.innodb_table_stats` and " +
	"`mysql.innodb_index_stats`, and each table that holds rows renamed away and back so that the server loads them: the statements " +
	"testdbd runs)"

// essentialsOf names each strategy variant's essentials: its floor's name
// with essentialsSuffix.
var essentialsOf = func() map[string]string {
	out := map[string]string{}
	for v, f := range floorOf {
		out[v] = f + essentialsSuffix
	}
	return out
}()

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
//   - truncate: TRUNCATE, INSERT … SELECT from the template, and ALTER
//     TABLE … AUTO_INCREMENT back to the template's where those two leave
//     another value, per dirty table;
//   - snapshot: the same with DELETE instead of TRUNCATE;
//   - rollback: the ALTER TABLE … AUTO_INCREMENT of each dirty table only
//     (InnoDB does not roll the counter back).
type floorVariant struct {
	label string
	db    *sql.DB
	sql   string // the one round trip
	p     procs
	// essentials: a REST round trip to the daemon and the reads of the
	// table state come first (see reset).
	essentials *daemon
	mariadb    bool // the server has INNODB_SYS_TABLESTATS
	// stats, for the truncate essentials, puts the statistics back after
	// the restore (essentialsStats).
	stats   string
	samples int
}

// essentialsWhat describes the essentials' work before the restore.
const essentialsWhat = "a REST round trip to the daemon (`GET /healthz`, which does no work) and one read of the database's table state " +
	"in a round trip of its own: InnoDB's counters of its tables (`INNODB_SYS_TABLESTATS`, what testdbd's detection reads on MariaDB) or " +
	"`information_schema.TABLES` of the one database (`UPDATE_TIME`, `AUTO_INCREMENT`, what it reads on MySQL); both reads are timed " +
	"in every sample, one after the other in alternating order, and the cheaper counts"

// The two reads of the floor database's table state: InnoDB's counters
// (what testdbd's detection reads on MariaDB) and information_schema.TABLES
// (UPDATE_TIME and AUTO_INCREMENT, what it reads on MySQL).
var (
	essentialsStatsRead = "SELECT NAME, TABLE_ID, MODIFIED_COUNTER, NUM_ROWS, AUTOINC FROM information_schema.INNODB_SYS_TABLESTATS WHERE NAME LIKE '" +
		strings.ReplaceAll(floorDatabase, "_", `\\_`) + "/%'"
	essentialsTablesRead = "SELECT TABLE_NAME, UPDATE_TIME, AUTO_INCREMENT, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = '" +
		floorDatabase + "' AND TABLE_TYPE = 'BASE TABLE'"
)

// newFloorVariants makes the floor database on the daemon's (one) server,
// a copy of template's database made table by table with its foreign
// keys, and on it the floor variants of the strategy variants in plain and
// the essentials variants of those in essentials; suffix ends their names.
func newFloorVariants(ctx context.Context, d *daemon, template, suffix string, plain, essentials []string) (_ []variant, err error) {
	t, inst, err := templateInstance(ctx, d, template)
	if err != nil {
		return nil, err
	}
	p := procs{server: int(inst.Pid)}
	cfg, admin, mariadb, err := floorAdmin(ctx, inst)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if err := copyDatabase(ctx, admin, t.Database, floorDatabase); err != nil {
		return nil, fmt.Errorf("copy of the template for the floor: %w", err)
	}
	fp, err := readFloorPlan(ctx, admin, t.Database)
	if err != nil {
		return nil, err
	}
	statsSQL := fp.statsSQL(floorDatabase)
	cfg.DBName = floorDatabase
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	var vs []variant
	for _, v := range floorRestores {
		add := func(label string, ess *daemon) {
			db := sql.OpenDB(connector)
			db.SetMaxOpenConns(1)
			db.SetMaxIdleConns(1)
			fv := &floorVariant{label: label + suffix, db: db, sql: fp.restore(v.strategy), p: p, essentials: ess, mariadb: mariadb}
			if ess != nil && v.strategy == vTruncate {
				fv.stats = statsSQL
			}
			vs = append(vs, fv)
		}
		if slices.Contains(plain, v.strategy) {
			add(floorOf[v.strategy], nil)
		}
		if slices.Contains(essentials, v.strategy) {
			add(essentialsOf[v.strategy], d)
		}
	}
	return vs, nil
}

// floorPlan is what the floors' statements need to know of the template:
// its database, and each dirty table's rows and AUTO_INCREMENT.
type floorPlan struct {
	template string
	// autoInc is each dirty table's next AUTO_INCREMENT value in the
	// template; natural what TRUNCATE and copying the rows leave it at:
	// one past the highest id (the standard workload's key), 1 for an
	// empty table. Where the two are equal, truncate needs no rewind
	// (testdbd's resets skip it too).
	autoInc, natural map[string]int64
	// dirty are the dirty tables (workload.Dirty, in its order) with their
	// template row counts: the restores copy rows into those that have
	// some, and testdbd's statistics statements (statsSQL) give the
	// template's statistics back to each and rename those holding rows so
	// that the server loads them.
	dirty []*schema.Table
	// base are the template's tables (not views), those copyDatabase
	// copies, with a row count of 1 whatever theirs: enough for their
	// statistics to be loaded anew (statsSQLOf).
	base []*schema.Table
	// stats are the template's statistics figures, by key (see
	// tableStatsCols).
	stats map[string]string
}

// table returns the template's base table name, with its rows where it is
// a dirty table, or nil.
func (fp *floorPlan) table(name string) *schema.Table {
	for _, ts := range [][]*schema.Table{fp.dirty, fp.base} {
		if i := slices.IndexFunc(ts, func(t *schema.Table) bool { return t.Name == name }); i >= 0 {
			return ts[i]
		}
	}
	return nil
}

// readFloorPlan reads the template's dirty tables on admin's server.
func readFloorPlan(ctx context.Context, admin *sql.DB, template string) (*floorPlan, error) {
	fp := &floorPlan{template: template, autoInc: map[string]int64{}, natural: map[string]int64{}}
	err := schema.EachRow(ctx, admin, "SELECT TABLE_NAME, AUTO_INCREMENT, TABLE_TYPE = 'BASE TABLE' FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
		[]any{template}, func(rows *sql.Rows) error {
			var name string
			var ai sql.NullInt64
			var base bool
			if err := rows.Scan(&name, &ai, &base); err != nil {
				return err
			}
			fp.autoInc[name] = max(ai.Int64, 1)
			if base {
				fp.base = append(fp.base, &schema.Table{Name: name, Rows: 1})
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	for _, tbl := range workload.Dirty {
		var rows, next int64
		if err := admin.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*), COALESCE(MAX(id), 0) + 1 FROM `%s`.`%s`", template, tbl)).Scan(&rows, &next); err != nil {
			return nil, err
		}
		fp.natural[tbl] = next
		fp.dirty = append(fp.dirty, &schema.Table{Name: tbl, Rows: rows})
	}
	return fp, fp.readTemplateStats(ctx, admin)
}

// floorRestore is the restore of a floor.
type floorRestore struct {
	strategy, clear  string // clear: how the dirty tables are emptied ("": they are not)
	copyRows, rewind bool
}

// floorRestores are the floors' restores, by strategy variant (see
// floorVariant).
var floorRestores = []floorRestore{
	{vTruncate, "TRUNCATE TABLE", true, true},
	{vSnapshot, "DELETE FROM", true, true},
	{vRollback, "", false, true},
	{vSnapshotKeep, "DELETE FROM", true, false},
}

// restore is the floor's restore of strategy variant v, one batch on a
// session whose default database is the one restored.
func (fp *floorPlan) restore(v string) string {
	r := floorRestores[slices.IndexFunc(floorRestores, func(r floorRestore) bool { return r.strategy == v })]
	var b strings.Builder
	b.WriteString("SET FOREIGN_KEY_CHECKS = 0")
	for _, t := range fp.dirty {
		tbl := t.Name
		if r.clear != "" {
			fmt.Fprintf(&b, "; %s `%s`", r.clear, tbl)
		}
		if r.copyRows && t.Rows > 0 {
			// An empty template table has no rows to copy: testdbd skips
			// the copy too.
			fmt.Fprintf(&b, "; INSERT INTO `%s` SELECT * FROM `%s`.`%s`", tbl, fp.template, tbl)
		}
		if r.rewind && !(r.clear == "TRUNCATE TABLE" && fp.autoInc[tbl] == fp.natural[tbl]) {
			fmt.Fprintf(&b, "; ALTER TABLE `%s` AUTO_INCREMENT = %d", tbl, fp.autoInc[tbl])
		}
	}
	b.WriteString("; SET FOREIGN_KEY_CHECKS = 1")
	return b.String()
}

// statsSQL is what testdbd runs to give the dirty tables of database db
// the template's statistics (essentialsStats), as it does: in READ
// COMMITTED, which takes no gap locks in the statistics tables that every
// database shares.
func (fp *floorPlan) statsSQL(db string) string { return fp.statsSQLOf(db, fp.dirty) }

// statsSQLOf is statsSQL for tables, some of the dirty tables or base.
func (fp *floorPlan) statsSQLOf(db string, tables []*schema.Table) string {
	q, _ := (&schema.Schema{Database: fp.template}).StatsSQL(db, tables)
	return "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;\n" + q + "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
}

// The statistics figures of a table (its row in mysql.innodb_table_stats)
// and of an index (each of its rows in mysql.innodb_index_stats, named w),
// as the floors' queries read them: a key and the figures, fields joined
// by 0x1f. The table's name is the key's second field, as the server
// stores it (filename-encoded).
const (
	tableStatsCols = "CONCAT_WS(0x1f, 'T', table_name), CONCAT_WS(0x1f, n_rows, clustered_index_size, sum_of_other_index_sizes)"
	indexStatsCols = "CONCAT_WS(0x1f, 'I', w.table_name, w.index_name, w.stat_name), CONCAT_WS(0x1f, w.stat_value, w.sample_size)"
)

// readTemplateStats reads the template's statistics figures into
// fp.stats.
func (fp *floorPlan) readTemplateStats(ctx context.Context, admin *sql.DB) error {
	fp.stats = map[string]string{}
	for _, t := range []struct{ cols, table string }{{tableStatsCols, "innodb_table_stats"}, {indexStatsCols, "innodb_index_stats"}} {
		err := schema.EachRow(ctx, admin, "SELECT "+t.cols+" FROM mysql."+t.table+" w WHERE w.database_name = ?", []any{fp.template},
			func(rows *sql.Rows) error {
				var k, v string
				if err := rows.Scan(&k, &v); err != nil {
					return err
				}
				fp.stats[k] = v
				return nil
			})
		if err != nil {
			return fmt.Errorf("the template's statistics: %w", err)
		}
	}
	return nil
}

// recentStats is a query of the statistics figures (tableStatsCols,
// indexStatsCols), two columns, of the tables of database db, but those of skip, whose
// row in mysql.innodb_table_stats was written at or after UNIX time since
// (InnoDB writes a table's row there and its indexes' rows together).
// MariaDB's. The figures are compared with the template's by the client
// (statsDiffer), which costs the server less than a join.
func (fp *floorPlan) recentStats(db string, since int64, skip []*schema.Table) string {
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	recent := "database_name = " + lit(db) + " AND last_update >= FROM_UNIXTIME(" + strconv.FormatInt(since, 10) + ")"
	if len(skip) > 0 {
		names := make([]string, len(skip))
		for i, t := range skip {
			names[i] = lit(filename.Encode(t.Name))
		}
		recent += " AND table_name NOT IN (" + strings.Join(names, ",") + ")"
	}
	return "SET STATEMENT time_zone = '+00:00' FOR SELECT " + tableStatsCols + " FROM mysql.innodb_table_stats WHERE " + recent +
		" UNION ALL SELECT " + indexStatsCols +
		" FROM (SELECT table_name FROM mysql.innodb_table_stats WHERE " + recent + ") r JOIN mysql.innodb_index_stats w ON w.database_name = " +
		lit(db) + " AND w.table_name = r.table_name"
}

// statsDiffer returns the tables (decoded names) whose figures in rows, a
// result of recentStats, are not the template's, or that the template
// lacks, each once.
func (fp *floorPlan) statsDiffer(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		if fp.stats[r[0]] == r[1] {
			continue
		}
		// The key's second field, a partition's folded into its table's
		// ("t#P#p0" on MariaDB).
		name := strings.Split(r[0], "\x1f")[1]
		name, _, _ = strings.Cut(name, "#P#")
		name, _, _ = strings.Cut(name, "#p#")
		if decoded, err := filename.Decode(name); err == nil {
			name = decoded
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// floorAdmin logs in to in's server with every privilege (adminConfig) for
// the floors' work: several statements a round trip, kept out of the
// binary log as the daemon's own sessions are. It returns the
// configuration, a pool, and whether the server is MariaDB's.
func floorAdmin(ctx context.Context, in client.Instance) (*mysql.Config, *sql.DB, bool, error) {
	cfg, err := adminConfig(ctx, in)
	if err != nil {
		return nil, nil, false, err
	}
	cfg.MultiStatements, cfg.InterpolateParams = true, true
	cfg.Params = map[string]string{"sql_log_bin": "0"}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, false, err
	}
	admin := sql.OpenDB(connector)
	var version string
	if err := admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		admin.Close()
		return nil, nil, false, err
	}
	return cfg, admin, strings.Contains(version, "MariaDB"), nil
}

// templateInstance returns template and the instance of d that holds it.
func templateInstance(ctx context.Context, d *daemon, template string) (*client.Template, client.Instance, error) {
	t, err := d.api.GetTemplate(ctx, template)
	if err != nil {
		return nil, client.Instance{}, err
	}
	insts, err := d.api.ListInstances(ctx)
	if err != nil {
		return nil, client.Instance{}, err
	}
	for _, in := range insts {
		if in.ID == t.InstanceID {
			return t, in, nil
		}
	}
	return nil, client.Instance{}, fmt.Errorf("the instance %s of template %s is not listed", t.InstanceID, template)
}

// adminConfig is how the benchmark logs in to a daemon's server with every
// privilege. The native provider's server: root on its Unix socket, which
// lies beside the datadir. A Docker container's: testdbd's admin account
// over the published port, with the password the container's init file
// holds, which the host's Docker users may read.
func adminConfig(ctx context.Context, in client.Instance) (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	switch in.Provider {
	case "native":
		cfg.User, cfg.Net, cfg.Addr = "root", "unix", filepath.Join(filepath.Dir(in.Datadir), "mysqld.sock")
	case "docker":
		out, err := exec.CommandContext(ctx, "docker", "exec", in.ContainerID, "cat", serverimage.InitFile).Output()
		if err != nil {
			return nil, fmt.Errorf("read the admin password of container %s: docker exec: %w", in.ContainerID, err)
		}
		pw, ok := serverimage.AdminPassword(string(out))
		if !ok {
			return nil, fmt.Errorf("container %s: %s names no password of %s", in.ContainerID, serverimage.InitFile, serverimage.AdminUser)
		}
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = serverimage.AdminUser, pw, "tcp", net.JoinHostPort(in.Host, strconv.Itoa(int(in.Port)))
	default:
		return nil, fmt.Errorf("instance %s: the benchmark cannot log in to a server of provider %q", in.ID, in.Provider)
	}
	return cfg, nil
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
	return runTest(ctx, v.db, strings.HasPrefix(v.label, vFloorRollback))
}

// reset runs the floor's restore; for the essentials, after a REST round
// trip and the reads of the table state (both, in an order that alternates
// from sample to sample; on MySQL only TABLES), and for truncate's followed
// by the statistics' round trip. The sample is the sum of the REST round
// trip, the cheaper read, the restore and the statistics, each timed
// (PhasesMs: REST, the TABLESTATS read or 0, the restore, the TABLES read,
// the statistics or 0).
func (v *floorVariant) reset(ctx context.Context) (ResetSample, error) {
	if v.essentials == nil {
		start := time.Now()
		_, err := v.db.ExecContext(ctx, v.sql)
		return ResetSample{ClientMs: ms(time.Since(start)), Tables: len(workload.Dirty)}, err
	}
	var s ResetSample
	start := time.Now()
	if err := v.essentials.api.Health(ctx); err != nil {
		return s, err
	}
	rest := ms(time.Since(start))
	reads := []string{essentialsTablesRead}
	if v.mariadb {
		reads = append(reads, essentialsStatsRead)
	}
	if v.samples++; v.samples%2 == 0 {
		slices.Reverse(reads)
	}
	var stats, tables float64
	for _, q := range reads {
		d, err := v.read(ctx, q)
		if err != nil {
			return s, err
		}
		if q == essentialsStatsRead {
			stats = d
		} else {
			tables = d
		}
	}
	t0 := time.Now()
	if _, err := v.db.ExecContext(ctx, v.sql); err != nil {
		return s, err
	}
	restore := ms(time.Since(t0))
	var statsBack float64
	if v.stats != "" {
		t0 = time.Now()
		if _, err := v.db.ExecContext(ctx, v.stats); err != nil {
			return s, fmt.Errorf("put the statistics back: %w", err)
		}
		statsBack = ms(time.Since(t0))
	}
	read := tables
	if v.mariadb {
		read = min(stats, tables)
	}
	s.ClientMs, s.Tables = rest+read+restore+statsBack, len(workload.Dirty)
	s.PhasesMs = []float64{round3(rest), round3(stats), round3(restore), round3(tables), round3(statsBack)}
	return s, nil
}

// read times one read of the floor database's table state, in ms.
func (v *floorVariant) read(ctx context.Context, q string) (float64, error) {
	start := time.Now()
	tables := 0
	if err := schema.EachRow(ctx, v.db, q, nil, func(*sql.Rows) error { tables++; return nil }); err != nil {
		return 0, err
	}
	if tables == 0 {
		return 0, fmt.Errorf("the read of %s's table state found no table", floorDatabase)
	}
	return ms(time.Since(start)), nil
}

func (v *floorVariant) procs() procs { return v.p }
func (v *floorVariant) close()       { v.db.Close() }

// floorRatio is a strategy variant's reset p50 over its floor's, from
// the same run.
func floorRatio(r *Results, v string) (ratio, p50, floor float64) {
	s, f := resetSummary(r.Resets, v), resetSummary(r.Resets, floorOf[v])
	return s.P50 / f.P50, s.P50, f.P50
}
