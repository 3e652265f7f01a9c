package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/strategies"
)

// The least a clean database handed out costs, looped beside testdbd's
// throughput runs by as many workers: the benchmark does itself, with no
// daemon work in between, what every hand-out needs and nothing else. Each
// worker owns a copy of the template and an account with privileges on it
// alone, and loops:
//
//   - a REST round trip to the daemon (GET /healthz, which does no work),
//     where testdbd's workers acquire;
//   - connect with the account's password, run the standard test (the
//     rollback variant inside a transaction it rolls back), disconnect;
//   - another REST round trip, where testdbd's workers release;
//   - the recycle, in one round trip of its own: end the account's
//     sessions (KILL HARD CONNECTION USER, MariaDB), give it a new
//     password, so that the old one stops working, and the floor's restore
//     of the dirty tables (floorVariant); for truncate followed, in a round
//     trip of its own as in testdbd's resets, by the statistics TRUNCATE
//     empties (essentialsStats).
//
// No detection (the benchmark knows the dirty tables), no baseline, no
// bookkeeping, no statistics put back after a rewind, no wait for killed
// sessions: less than any exact hand-out does. Each worker waits for its
// own recycle (testdbd's workers take another ready database meanwhile),
// so the loop's rate is not a ceiling; its CPU time per clean database is
// a floor, and the machine's cores over it are the most any hand-out
// through REST could reach (loopNote).
const loopSuffix = " + REST, looped"

// loopOf names each strategy variant's least loop.
var loopOf = func() map[string]string {
	out := map[string]string{}
	for _, v := range strategyVariants {
		out[v] = floorOf[v] + loopSuffix
	}
	return out
}()

// loopWhat describes a least loop for the report.
const loopWhat = "the benchmark's own loop of what a hand-out needs and nothing else, as many workers, each on a copy of the " +
	"template with an account of its own: a REST round trip to the daemon (`GET /healthz`) where testdbd's workers acquire, " +
	"connect with the account's password, the standard test, disconnect, another REST round trip where they release, then in " +
	"one round trip a new password, the account's sessions ended (`KILL HARD CONNECTION USER`) and the floor's restore of the " +
	"5 dirty tables (for truncate followed, in a round trip of its own, by the statistics `TRUNCATE` empties put back); no " +
	"detection, no statistics put back after a rewind, no daemon work. Each worker waits for its own recycle, where testdbd's " +
	"take another ready database, so its rate is no ceiling: its CPU time per clean database is the floor, and the machine's " +
	"cores over it the most any hand-out could reach (\"at most\" below)"

// leastLoop is the least loops' work on the server of the throughput
// daemon. Each run has databases and accounts of its own (open, close):
// the copies would otherwise sit on the server during testdbd's runs,
// whose detection reads time for every table there.
type leastLoop struct {
	d        *daemon
	cfg      *mysql.Config // the administrative login
	fp       *floorPlan
	restores map[string]string // the floors' restores, by strategy variant
	addr     string            // the server's address for the workers (TCP)
	pid      int               // the server's process
	dbs      []*loopDB
}

// loopDB is one worker's copy of the template and its account.
type loopDB struct {
	name, user, password string
	admin                *sql.DB // one session, on the database
	stats                string  // the statistics' statements, for truncate
}

// loopDatabase names worker i's copy.
func loopDatabase(i int) string { return "tdbbench_loop_" + strconv.Itoa(i) }

// newLeastLoop prepares the least loops of template on d's server. ok is
// false, with no error, where the server is not MariaDB's (the recycle's
// KILL … USER is MariaDB's).
func newLeastLoop(ctx context.Context, d *daemon, template string) (_ *leastLoop, ok bool, err error) {
	t, inst, err := templateInstance(ctx, d, template)
	if err != nil {
		return nil, false, err
	}
	cfg, admin, mariadb, err := floorAdmin(ctx, inst)
	if err != nil {
		return nil, false, err
	}
	defer admin.Close()
	if !mariadb {
		return nil, false, nil
	}
	fp, err := readFloorPlan(ctx, admin, t.Database)
	if err != nil {
		return nil, false, err
	}
	l := &leastLoop{d: d, cfg: cfg, fp: fp, restores: map[string]string{},
		addr: net.JoinHostPort(inst.Host, strconv.Itoa(int(inst.Port))), pid: int(inst.Pid)}
	for _, v := range strategyVariants {
		l.restores[v] = fp.restore(v)
	}
	return l, true, nil
}

// open copies the template once per worker and gives each copy an
// account.
func (l *leastLoop) open(ctx context.Context, workers int) (err error) {
	connector, err := mysql.NewConnector(l.cfg)
	if err != nil {
		return err
	}
	admin := sql.OpenDB(connector)
	defer admin.Close()
	defer func() {
		if err != nil {
			err = errors.Join(err, l.close(context.WithoutCancel(ctx)))
		}
	}()
	for i := range workers {
		name := loopDatabase(i)
		c := *l.cfg
		c.DBName = name
		connector, err := mysql.NewConnector(&c)
		if err != nil {
			return err
		}
		db := &loopDB{name: name, stats: l.fp.statsSQL(name), admin: sql.OpenDB(connector)}
		db.admin.SetMaxOpenConns(1)
		db.admin.SetMaxIdleConns(1)
		// Listed first, so that close drops what a failed copy left.
		l.dbs = append(l.dbs, db)
		if err := copyDatabase(ctx, admin, l.fp.template, name); err != nil {
			return fmt.Errorf("copy of the template for the least loop: %w", err)
		}
		a, err := accounts.Create(ctx, admin, "tdbbench_", name, 0)
		if err != nil {
			return err
		}
		db.user, db.password = a.User, a.Password
	}
	quiet(ctx, l.pid)
	return nil
}

// quiet waits, up to 5 s, until server process pid has used less than one
// clock tick of CPU time in 200 ms: the work that copying the template
// leaves to the server's background threads (flushing, purging) is done
// before a run reads its CPU time.
func quiet(ctx context.Context, pid int) {
	deadline := time.Now().Add(5 * time.Second)
	last := cpuMs(pid)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		now := cpuMs(pid)
		if now-last < 1000/clockTicks {
			return
		}
		last = now
	}
}

// handOut is one loop of worker w (see leastLoop): the REST round trips'
// times are acquire and release, the recycle's is part of release.
func (l *leastLoop) handOut(ctx context.Context, strategy string, w int) (handOutTimes, error) {
	var h handOutTimes
	db := l.dbs[w]
	t0 := time.Now()
	if err := l.d.api.Health(ctx); err != nil {
		return h, err
	}
	t1 := time.Now()
	h.acquire = ms(t1.Sub(t0))
	c := mysql.NewConfig()
	c.User, c.Passwd, c.DBName, c.Net, c.Addr = db.user, db.password, db.name, "tcp", l.addr
	conn, err := openOne(c)
	if err != nil {
		return h, err
	}
	err = runTest(ctx, conn, strategy == vRollback)
	conn.Close()
	if err != nil {
		return h, err
	}
	t2 := time.Now()
	h.work = ms(t2.Sub(t1))
	if err := l.d.api.Health(ctx); err != nil {
		return h, err
	}
	// The new password first, so that the old one stops working before
	// the sessions are ended.
	password := random.String(24, random.Alnum)
	q := fmt.Sprintf("ALTER USER %s IDENTIFIED BY '%s'; KILL HARD CONNECTION USER '%s'; %s", accounts.Quote(db.user), password, db.user,
		l.restores[strategy])
	if err := execRetrying(ctx, db.admin, q); err != nil {
		return h, fmt.Errorf("least loop's recycle of %s: %w", db.name, err)
	}
	db.password = password
	if strategy == vTruncate {
		if err := execRetrying(ctx, db.admin, db.stats); err != nil {
			return h, fmt.Errorf("least loop's statistics of %s: %w", db.name, err)
		}
	}
	h.release = ms(time.Since(t2))
	return h, nil
}

// execRetrying runs a batch up to 5 times while the server fails it with a
// deadlock or lock wait, as testdbd's resets do: concurrent statistics
// statements of several databases write the same tables. Every batch of
// the loop can run again.
func execRetrying(ctx context.Context, db *sql.DB, q string) error {
	for attempt := 0; ; attempt++ {
		_, err := db.ExecContext(ctx, q)
		if err == nil || attempt == 4 || !strategies.Retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(1+attempt) * time.Millisecond)
	}
}

// close drops the copies and their accounts.
func (l *leastLoop) close(ctx context.Context) error {
	var errs []error
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, db := range l.dbs {
		// Each on its own, so that a failure of one does not keep the
		// other.
		if _, err := db.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+db.name+"`"); err != nil {
			errs = append(errs, fmt.Errorf("drop the least loop's %s: %w", db.name, err))
		}
		if db.user != "" {
			if err := accounts.Drop(ctx, db.admin, db.user); err != nil {
				errs = append(errs, fmt.Errorf("the least loop's %s: %w", db.name, err))
			}
		}
		db.admin.Close()
	}
	l.dbs = nil
	return errors.Join(errs...)
}
