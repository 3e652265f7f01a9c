package templates

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

// BuildOptions tune one build.
type BuildOptions struct {
	// Timeout bounds the migrations and the seed; 0 means none. When it
	// passes, the running statement is killed and the build fails with
	// ETimeout naming the limit.
	Timeout time.Duration
	Log     *slog.Logger
	// Progress, when set, is told each phase and, while migrating, each
	// migration as it starts.
	Progress func(phase string, step, steps int, migration string)
	// Binlog is the server's binary log (nil: it keeps none). A build whose
	// migrations or seed prepared an XA transaction is refused (see
	// refuseXA), and whatever they left prepared is rolled back before the
	// database is dropped.
	Binlog *binlog.Log
	// Discard, when set, is handed what a build that fails made on the
	// server (its database and its account, the account's sessions ended)
	// instead of the build dropping them itself: the caller knows more
	// (the XA transactions the build's sessions left prepared, whose
	// locks would hold the drop) and logs what it drops. ctx is the
	// build's, uncanceled.
	Discard func(ctx context.Context, database string, users ...string)
}

// discard drops what a failed build made on inst: database and users,
// through Discard when set, else itself (errors ignored).
func (o BuildOptions) discard(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, database string, users ...string) {
	ctx = context.WithoutCancel(ctx)
	if o.Discard != nil {
		o.Discard(ctx, database, users...)
		return
	}
	for _, u := range users {
		_ = accounts.Drop(ctx, inst.DB, u)
	}
	dropBuilt(ctx, inst, ddl, o.Binlog, database)
}

func (o BuildOptions) progress(phase string, step, steps int, migration string) {
	if o.Progress != nil {
		o.Progress(phase, step, steps, migration)
	}
}

// buildConnections caps the connections of a build's account.
const buildConnections = 8

// Built is a template database built on one instance.
type Built struct {
	Database string
	// Owner is the account that ran the migrations and the seed: all
	// privileges on the template database and nothing else. It stays, locked,
	// as the definer of the database's views, triggers, routines and events
	// (schema.Capture names it as the owner); drop it with the database.
	Owner   string
	Schema  *schema.Schema
	Result  migrations.Result
	Capture time.Duration
}

// Build creates database on inst and builds the template of src in it: the
// migrations, then the seed, run as a new account with privileges on that
// database only (no FILE, no other schema, no GRANT), then a capture of the
// definition. ddl is the instance's DDL accounting: creating and dropping
// the database are counted, the migrations run as uncounted work.
//
// Canceling ctx (the template was deleted or replaced, the daemon stops)
// or passing opts.Timeout kills the build's statement on the server. On
// failure the build's sessions are ended and the database and the account
// dropped (opts.Discard); a failure of the user's migrations or seed is a
// *migrations.BuildError.
func Build(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, database string, src migrations.Source, opts BuildOptions) (_ *Built, err error) {
	if err := ddl.Exec(ctx, inst.DB, 1, "CREATE DATABASE "+schema.Quote(database)); err != nil {
		return nil, fmt.Errorf("create template database: %w", err)
	}
	owner, err := accounts.Create(ctx, inst.DB, "tdbt_", database, buildConnections)
	if err != nil {
		opts.discard(ctx, inst, ddl, database)
		return nil, err
	}
	if opts.Binlog != nil {
		opts.Binlog.Watch(database)
		defer opts.Binlog.Unwatch(database)
	}
	defer func() {
		if err != nil {
			opts.discard(ctx, inst, ddl, database, owner.User)
		}
	}()
	res, err := migrate(ctx, inst, ddl, owner, src, opts)
	if err != nil {
		return nil, err
	}
	if err := refuseXA(ctx, inst, opts.Binlog, database, "the migrations or "+migrations.SeedFile); err != nil {
		return nil, err
	}
	start := time.Now()
	opts.progress(PhaseCapturing, 0, 0, "")
	if err := settle(ctx, inst, ddl, database); err != nil {
		return nil, err
	}
	s, err := schema.Capture(ctx, inst.DB, database, owner.User)
	if err != nil {
		return nil, err
	}
	return &Built{Database: database, Owner: owner.User, Schema: s, Result: res, Capture: time.Since(start)}, nil
}

// migrate runs src as owner, then locks the account and ends its sessions:
// it stays only as the definer of what the migrations created.
func migrate(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, owner accounts.Account, src migrations.Source, opts BuildOptions) (migrations.Result, error) {
	host, port := inst.ClientAddr()
	db, err := instance.OpenDatabase(testdbd.Endpoint{Host: host, Port: port, User: owner.User, Password: owner.Password}, owner.Database, 2)
	if err != nil {
		return migrations.Result{}, err
	}
	defer db.Close()
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if opts.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, opts.Timeout)
	}
	defer cancel()
	// The driver gives up on a canceled statement but the server goes on
	// running it: end the account's sessions, which stops it.
	stopped := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-runCtx.Done():
			endSessions(context.WithoutCancel(ctx), inst, owner.User, false)
		case <-finished:
		}
	}()
	var res migrations.Result
	err = ddl.Unaccounted(func() (err error) {
		res, err = migrations.Run(runCtx, db, src, opts.Log, func(step, steps int, file string) {
			phase := PhaseMigrating
			if file == migrations.SeedFile {
				phase = PhaseSeeding
			}
			opts.progress(phase, step, steps, file)
		})
		return err
	})
	close(finished)
	<-stopped
	endSessions(context.WithoutCancel(ctx), inst, owner.User, true)
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return res, testdbd.Errorf(testdbd.ETimeout,
			"the build ran longer than its time limit of %v while running %s, which was stopped: raise the limit (build_timeout_seconds in the request, or the daemon's --build-timeout) or make the migrations faster",
			opts.Timeout, runningFile(err))
	case ctx.Err() != nil:
		return res, fmt.Errorf("build stopped while running %s: %w", runningFile(err), context.Cause(ctx))
	case err != nil:
		return res, explainPrivileges(err)
	}
	return res, nil
}

// endSessions locks (with lock) and disconnects the build account.
func endSessions(ctx context.Context, inst *instance.Member, user string, lock bool) {
	conn, err := inst.DB.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = accounts.EndSessions(ctx, conn, inst.Flavor, user, lock)
}

// refuseXA fails a build whose migrations or seed (what, for the error)
// prepared an XA transaction in database, once the build's sessions have
// ended: a prepared transaction outlives its session, and any account on
// the server may commit or roll back one whose session ended (MariaDB
// lists every account's xids to every account), into the template that
// every lease is cloned from. The build fails even when its own session
// ended the transaction, since another account may have done so first:
// XA is for leases, not templates. Build's cleanup rolls back what is left
// prepared (dropBuilt).
func refuseXA(ctx context.Context, inst *instance.Member, log *binlog.Log, database, what string) error {
	if log == nil {
		return nil
	}
	ids, err := log.PreparedIn(ctx, inst.DB, database)
	if err != nil || len(ids) == 0 {
		return err
	}
	shown := make([]string, len(ids))
	for i, id := range ids {
		shown[i] = id.String()
	}
	return &migrations.BuildError{File: what, Err: testdbd.Errorf(testdbd.EInvalid,
		"XA transaction %s was prepared (XA PREPARE) in the template database, which a template's migrations and seed may not do: a "+
			"prepared transaction outlives its session, and another account on the server could commit it into the template. The template "+
			"was refused and what was left prepared rolled back: commit XA transactions in one phase (XA COMMIT <xid> ONE PHASE) or use "+
			"plain transactions (BEGIN … COMMIT)",
		strings.Join(shown, ", "))}
}

// dropBuilt drops a failed build's database, after rolling back the XA
// transactions its migrations or seed left prepared in it (their locks
// would stop the drop, and anyone could commit them). The build's sessions
// must have ended.
func dropBuilt(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, log *binlog.Log, database string) {
	if log != nil {
		_, _, _ = log.RollBackXA(ctx, inst.DB, database)
	}
	_ = schema.Drop(ctx, inst.DB, ddl, database)
}

// runningFile names the migration (or the seed) a failed build was running.
func runningFile(err error) string {
	var be *migrations.BuildError
	if errors.As(err, &be) {
		return be.File
	}
	return "the migrations"
}

// explainPrivileges adds to a build failure refused for lack of privileges
// what the build account may do.
func explainPrivileges(err error) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return err
	}
	switch me.Number {
	case 1044, 1045, 1142, 1143, 1227, 1370, 1449:
		return fmt.Errorf("%w (migrations and the seed run as an account with all privileges on the template's database and none elsewhere: "+
			"no other database, no users or grants, no global settings, no FILE; leave out DEFINER clauses, testdbd makes each database's owner the definer)", err)
	}
	return err
}

// settle makes the built template database what every clone will be: its
// FULLTEXT tables rebuilt (so that their indexes hold no words of rows the
// migrations deleted, as a clone's do not: relevance depends on them) and
// every table analyzed (the optimizer statistics clones copy: with
// innodb_stats_auto_recalc off nothing computes them otherwise).
func settle(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, database string) error {
	var tables, fulltext []string
	err := schema.EachRow(ctx, inst.DB, `SELECT t.TABLE_NAME, EXISTS (SELECT 1 FROM information_schema.STATISTICS s
		WHERE s.TABLE_SCHEMA = t.TABLE_SCHEMA AND s.TABLE_NAME = t.TABLE_NAME AND s.INDEX_TYPE = 'FULLTEXT')
		FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = ? AND t.TABLE_TYPE = 'BASE TABLE' ORDER BY 1`,
		[]any{database}, func(rows *sql.Rows) error {
			var name string
			var ft bool
			if err := rows.Scan(&name, &ft); err != nil {
				return err
			}
			tables = append(tables, schema.Quote(database)+"."+schema.Quote(name))
			if ft {
				fulltext = append(fulltext, tables[len(tables)-1])
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("list the template's tables: %w", err)
	}
	for _, t := range fulltext {
		if err := ddl.Exec(ctx, inst.DB, 1, "ALTER TABLE "+t+" FORCE"); err != nil {
			return fmt.Errorf("rebuild %s: %w", t, err)
		}
	}
	// At the server's statistics sampling: resets lower it for a moment
	// (strategies.DDLCounter.FullSampling).
	return ddl.FullSampling(ctx, inst.DB, func() error {
		for start := 0; start < len(tables); start += 100 {
			chunk := tables[start:min(start+100, len(tables))]
			if err := ddl.Exec(ctx, inst.DB, 1, "ANALYZE TABLE "+strings.Join(chunk, ", ")); err != nil {
				return fmt.Errorf("analyze the template's tables: %w", err)
			}
		}
		return nil
	})
}

// BeginExternal creates database on inst for a build by the caller's own
// migrator, and the account the caller builds it as: all privileges on
// that database and nothing else, as a build's. FinishExternal or
// AbortExternal ends it, with the same log (the server's binary log, nil
// when it keeps none; see BuildOptions.Binlog).
func BeginExternal(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, log *binlog.Log, database string) (accounts.Account, error) {
	if err := ddl.Exec(ctx, inst.DB, 1, "CREATE DATABASE "+schema.Quote(database)); err != nil {
		return accounts.Account{}, fmt.Errorf("create template database: %w", err)
	}
	owner, err := accounts.Create(ctx, inst.DB, "tdbt_", database, buildConnections)
	if err != nil {
		_ = schema.Drop(context.WithoutCancel(ctx), inst.DB, ddl, database)
		return accounts.Account{}, err
	}
	if log != nil {
		log.Watch(database)
	}
	return owner, nil
}

// FinishExternal makes the database an external build filled a template:
// the build's account is locked and its sessions ended (it stays as the
// definer of what it created), then the database is settled and captured
// as a build's; a build that prepared an XA transaction is refused (see
// refuseXA). On failure the database and the account are dropped
// (opts.Discard).
func FinishExternal(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, database, owner string, opts BuildOptions) (_ *Built, err error) {
	defer func() {
		if err != nil {
			EndBuild(context.WithoutCancel(ctx), inst, owner)
			opts.discard(ctx, inst, ddl, database, owner)
		}
		if opts.Binlog != nil {
			opts.Binlog.Unwatch(database)
		}
	}()
	endSessions(ctx, inst, owner, true)
	if err := refuseXA(ctx, inst, opts.Binlog, database, "the external build"); err != nil {
		return nil, err
	}
	start := time.Now()
	opts.progress(PhaseCapturing, 0, 0, "")
	if err := settle(ctx, inst, ddl, database); err != nil {
		return nil, err
	}
	s, err := schema.Capture(ctx, inst.DB, database, owner)
	if err != nil {
		return nil, &migrations.BuildError{File: "the external build", Err: err}
	}
	return &Built{Database: database, Owner: owner, Schema: s, Capture: time.Since(start)}, nil
}

// AbortExternal drops an external build's database and account, after
// rolling back the XA transactions the build left prepared in it.
func AbortExternal(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, log *binlog.Log, database, owner string) {
	EndBuild(ctx, inst, owner)
	_ = accounts.Drop(ctx, inst.DB, owner)
	dropBuilt(ctx, inst, ddl, log, database)
	if log != nil {
		log.Unwatch(database)
	}
}

// EndBuild locks a build's account and ends its sessions, which ends
// their statements and transactions (a prepared XA transaction outlives
// them: see BuildOptions.Discard).
func EndBuild(ctx context.Context, inst *instance.Member, owner string) {
	endSessions(ctx, inst, owner, true)
}
