package lease_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/templates"
)

// xaSQL is an XA transaction xid that inserts a user and is left prepared.
func xaSQL(xid, email string) string {
	return "XA START '" + xid + "'; INSERT INTO users (email, name) VALUES ('" + email + "', 'xa'); XA END '" + xid + "'; XA PREPARE '" + xid + "'"
}

// TestXATemplates: a template's build may not prepare XA transactions. A
// seed that leaves one prepared, one that prepares and commits its own,
// one that fails after preparing, and an external build whose migrator
// left one prepared are refused with an error that says why and what to do
// instead; none leaves a prepared transaction or a database behind, so a
// lease on the same server has nothing to commit into a template (XA
// RECOVER, listing every account's xids on MariaDB, shows it nothing). A
// seed that commits in one phase builds.
func TestXATemplates(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			e.ensure(t, "app", 1)
			srv := e.fleet.Members()[0]
			t.Cleanup(func() { rollBackAll(srv) }) // what the old code left, so that the servers stop
			hostile := open(t, e.acquire(t, lease.AcquireRequest{Template: "app", Strategy: testdbd.StrategySnapshot}))
			e.waitPool(t, "app", 1)
			dbsBefore := e.adminCount(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'tdb\\_%'")

			refused := map[string]string{
				"left prepared":       xaSQL("seed_left", "left@x"),
				"committed by itself": xaSQL("seed_own", "own@x") + "; XA COMMIT 'seed_own'",
				"failed after":        xaSQL("seed_failed", "failed@x") + "; SELECT * FROM no_such_table",
			}
			for what, seed := range refused {
				info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "xa-" + strings.ReplaceAll(what, " ", "-"), Files: exampleFiles(t), Seed: seed})
				if err == nil || info.State != templates.Failed {
					t.Errorf("seed %s: the build did not fail: %+v", what, info)
					continue
				}
				if what != "failed after" && (!strings.Contains(info.Err, "was prepared (XA PREPARE)") || !strings.Contains(info.Err, "ONE PHASE")) {
					t.Errorf("seed %s: the error does not say why and what to do: %s", what, info.Err)
				}
			}
			x, b, err := e.m.BeginExternal(ctx, templates.ExternalRequest{Name: "xa-external", ContentHash: "v1"})
			if err != nil {
				t.Fatal(err)
			}
			migrator, err := sql.Open("mysql", b.DSN)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := migrator.Exec("CREATE TABLE users (id INT AUTO_INCREMENT PRIMARY KEY, email TEXT, name TEXT); " + xaSQL("ext_left", "ext@x")); err != nil {
				t.Fatal(err)
			}
			migrator.Close() // the migrator exits; its prepared transaction stays
			if info, err := e.m.FinishExternal(ctx, "xa-external", x.Hash, false); err == nil || !strings.Contains(info.Err, "was prepared (XA PREPARE)") {
				t.Errorf("external build that left an XA transaction prepared: %+v, %v", info, err)
			}

			for _, xid := range []string{"seed_left", "seed_own", "seed_failed", "ext_left"} {
				if _, err := hostile.Exec("XA COMMIT '" + xid + "'"); err == nil {
					t.Errorf("a lease committed the template build's XA transaction %s", xid)
				}
			}
			if ids := prepared(t, srv); len(ids) > 0 {
				t.Errorf("prepared after the builds: %v", ids)
			}
			if n := e.adminCount(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'tdb\\_%'"); n != dbsBefore {
				t.Errorf("%d databases after the refused builds, %d before", n, dbsBefore)
			}

			info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "xa-one-phase", Files: exampleFiles(t),
				Seed: "XA START 'one'; INSERT INTO users (email, name) VALUES ('one@x', 'xa'); XA END 'one'; XA COMMIT 'one' ONE PHASE"})
			if err != nil || info.State != templates.Ready {
				t.Fatalf("a seed that commits in one phase: %+v, %v", info, err)
			}
			var n int
			l := e.acquire(t, lease.AcquireRequest{Template: "xa-one-phase", Strategy: testdbd.StrategySnapshot})
			if err := open(t, l).QueryRow("SELECT COUNT(*) FROM users WHERE email = 'one@x'").Scan(&n); err != nil || n != 1 {
				t.Errorf("the one-phase seed's row in a lease: %d (%v)", n, err)
			}
		})
	}
}

// prepared lists the XA transactions srv holds prepared.
func prepared(t *testing.T, srv *instance.Member) []string {
	t.Helper()
	ids, err := binlog.Prepared(context.Background(), srv.DB)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		out = append(out, id.String())
	}
	return out
}

// rollBackAll rolls back every XA transaction srv holds prepared, waiting
// a little for sessions that still hold theirs to end.
func rollBackAll(srv *instance.Member) {
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		ids, err := binlog.Prepared(ctx, srv.DB)
		if err != nil || len(ids) == 0 {
			return
		}
		for _, id := range ids {
			_, _ = srv.DB.ExecContext(ctx, "XA ROLLBACK "+id.SQL())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestXALeases: one lease's prepared XA transactions are out of another
// lease's reach on the same server. While the session that prepared one is
// connected, the other lease can neither commit nor roll it back (MySQL
// runs with xa_detach_on_prepare off for this), and its own session
// commits it. Once that session has ended, the daemon rolls it back
// without waiting for a reset, says so in an event and in the next
// reset's report, and the other lease finds nothing to commit. Lease
// accounts cannot list the server's prepared transactions on MySQL (no
// XA_RECOVER_ADMIN); MariaDB lists them to every account.
func TestXALeases(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2})
			e.ensure(t, "app", 2)
			srv := e.fleet.Members()[0]
			t.Cleanup(func() { rollBackAll(srv) })
			a := e.acquire(t, lease.AcquireRequest{Template: "app", Strategy: testdbd.StrategySnapshot})
			b := e.acquire(t, lease.AcquireRequest{Template: "app", Strategy: testdbd.StrategySnapshot})
			hostile, victim := open(t, a), open(t, b)
			session := func() *sql.Conn {
				c, err := victim.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			run := func(c *sql.Conn, stmts string) {
				t.Helper()
				for _, q := range strings.Split(stmts, "; ") {
					if _, err := c.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
			}
			count := func(email string) int {
				t.Helper()
				var n int
				if err := victim.QueryRow("SELECT COUNT(*) FROM users WHERE email = ?", email).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}

			held := session()
			run(held, xaSQL("b_held", "held@x"))
			rows, err := hostile.Query("XA RECOVER")
			if err == nil {
				rows.Close()
			}
			if srv.Flavor == testdbd.MySQL && err == nil {
				t.Error("a lease's account listed the server's prepared XA transactions (XA RECOVER) on MySQL")
			}
			t.Logf("XA RECOVER as another lease: %v", err)
			for _, q := range []string{"XA COMMIT 'b_held'", "XA ROLLBACK 'b_held'"} {
				if _, err := hostile.Exec(q); err == nil {
					t.Errorf("another lease ran %s on a transaction its session holds", q)
				}
			}
			run(held, "XA COMMIT 'b_held'")
			if n := count("held@x"); n != 1 {
				t.Errorf("the transaction its own session committed: %d rows, want 1", n)
			}
			held.Close()

			left := session()
			run(left, xaSQL("b_left", "left@x"))
			disconnect(left)
			// Rolled back, and said so, without a reset.
			said := func() bool {
				_, evs := e.m.Events(100, 0)
				for _, ev := range evs {
					if ev.Kind == "xa_rolled_back" && ev.LeaseID == b.ID && strings.Contains(ev.Message, "'b_left'") &&
						strings.Contains(ev.Message, "end XA transactions on the session that prepared them") {
						return true
					}
				}
				return false
			}
			deadline := time.Now().Add(30 * time.Second)
			for ids := prepared(t, srv); len(ids) > 0 || !said(); ids = prepared(t, srv) {
				if time.Now().After(deadline) {
					t.Fatalf("30 s after its session ended, without a reset: still prepared %v, event said so: %v", ids, said())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := hostile.Exec("XA COMMIT 'b_left'"); err == nil {
				t.Error("another lease committed the transaction a session left prepared")
			}
			if n := count("left@x"); n != 0 {
				t.Errorf("the transaction left prepared: %d rows in the lease's database, want 0", n)
			}
			rep, err := e.m.Reset(ctx, b.ID, testdbd.StrategyUnspecified)
			if err != nil || !slices.Contains(rep.XARolledBack, "'b_left'") {
				t.Errorf("the next reset's report: %+v, %v; want 'b_left' among xa_rolled_back", rep, err)
			}
		})
	}
}

// disconnect closes c's connection to the server, as a client that exits
// does.
func disconnect(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}
