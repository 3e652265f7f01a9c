package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/templates"
)

// migration wraps statements into a goose file.
func migration(name string, stmts ...string) migrations.File {
	return migrations.File{Name: name, Content: []byte("-- +goose Up\n" + strings.Join(stmts, ";\n") + ";\n")}
}

// adminCount runs a COUNT(*) query as the server's admin.
func (e *env) adminCount(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.fleet.Members()[0].DB.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestHostileMigrations replays what a migration uploaded by anyone who
// can reach the API could try against the server and its host: each fails
// the build with a privilege error and leaves nothing behind, and the
// other template's database and the server's accounts are untouched.
func TestHostileMigrations(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			ctx := context.Background()
			victim := e.ensure(t, "victim", 1)
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "victim"})
			live := open(t, l)
			mustExec(t, live, "INSERT INTO users (email, name) VALUES ('secret@x', 'secret')")
			outfile := filepath.Join(os.TempDir(), fmt.Sprintf("tdb-hostile-%d", time.Now().UnixNano()))
			defer os.Remove(outfile)
			buildersBefore := e.adminCount(t, "SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'tdbt\\_%'")

			hostile := map[string]string{
				"write a file":          fmt.Sprintf("SELECT 'x' INTO OUTFILE '%s'", outfile),
				"read a file":           "CREATE TABLE f (t TEXT); LOAD DATA INFILE '/etc/hostname' INTO TABLE f",
				"read a live lease":     fmt.Sprintf("CREATE TABLE s AS SELECT * FROM `%s`.users", l.Database),
				"read the template":     fmt.Sprintf("CREATE TABLE s AS SELECT * FROM `%s`.users", victim.Database),
				"read account hashes":   "CREATE TABLE s AS SELECT * FROM mysql.user",
				"make an account":       "CREATE USER backdoor IDENTIFIED BY 'pw'",
				"grant to oneself":      "GRANT ALL ON *.* TO CURRENT_USER",
				"drop another database": fmt.Sprintf("DROP DATABASE `%s`", victim.Database),
				"global setting":        "SET GLOBAL max_connections = 1",
				"root as definer":       "CREATE DEFINER = 'root'@'localhost' PROCEDURE p() SELECT 1",
			}
			for what, stmt := range hostile {
				name := "hostile-" + strings.ReplaceAll(what, " ", "-")
				info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: name,
					Files: []migrations.File{migration("00001_hostile.sql", stmt)}})
				if err == nil || info.State != templates.Failed {
					t.Errorf("%s: the build did not fail: %+v", what, info)
					continue
				}
				if !strings.Contains(info.Err, "denied") && !strings.Contains(info.Err, "privilege") {
					t.Errorf("%s: not a privilege error: %s", what, info.Err)
				}
				if !strings.Contains(info.Err, "all privileges on the template's database and none elsewhere") {
					t.Errorf("%s: the error does not say what migrations may do: %s", what, info.Err)
				}
			}
			if _, err := os.Stat(outfile); err == nil {
				t.Errorf("a migration wrote %s", outfile)
			}
			if n := e.adminCount(t, "SELECT COUNT(*) FROM mysql.user WHERE User = 'backdoor'"); n != 0 {
				t.Error("a migration created an account")
			}
			// Failed builds leave neither their database nor their account.
			if n := e.adminCount(t, "SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'tdbt\\_%'"); n != buildersBefore {
				t.Errorf("%d build accounts after the failed builds, %d before", n, buildersBefore)
			}
			if n := e.adminCount(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'tdb\\_%\\_t%'"); n != 1 {
				t.Errorf("%d template databases after the failed builds, want the victim's only", n)
			}
			if n := e.adminCount(t, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", victim.Database); n != 1 {
				t.Error("the other template's database is gone")
			}
			var rows int
			if err := live.QueryRow("SELECT COUNT(*) FROM users WHERE email = 'secret@x'").Scan(&rows); err != nil || rows != 1 {
				t.Errorf("the live lease's row: %d, %v", rows, err)
			}
		})
	}
}

// TestDefinersAreConfined shows that a template's procedures and views run
// with their database owner's privileges, which reach that database only:
// a procedure written to read another database fails when a lease calls it.
func TestDefinersAreConfined(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			ctx := context.Background()
			if _, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "defs", Files: []migrations.File{
				{Name: "00001_defs.sql", Content: []byte(`-- +goose Up
CREATE TABLE t (id INT PRIMARY KEY);
INSERT INTO t VALUES (1);
-- +goose StatementBegin
CREATE PROCEDURE peek(IN other VARCHAR(64))
BEGIN
  SET @q = CONCAT('SELECT COUNT(*) INTO @n FROM mysql.user');
  PREPARE s FROM @q; EXECUTE s; DEALLOCATE PREPARE s;
END;
-- +goose StatementEnd
CREATE VIEW v AS SELECT id FROM t;
CREATE SQL SECURITY DEFINER VIEW w AS SELECT COUNT(*) AS n FROM t;
`)}}}); err != nil {
				t.Fatal(err)
			}
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "defs"})
			db := open(t, l)
			// The objects work on the lease's own database...
			var n int
			if err := db.QueryRow("SELECT n FROM w").Scan(&n); err != nil || n != 1 {
				t.Fatalf("a definer view on the lease's database: %d, %v", n, err)
			}
			// ...but their definer reaches nothing else.
			if _, err := db.Exec("CALL peek('mysql')"); err == nil || !strings.Contains(err.Error(), "denied") {
				t.Errorf("a definer procedure read mysql.user: %v", err)
			}
			// The definer is the database's own locked owner.
			var definer string
			if err := db.QueryRow("SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'peek'").Scan(&definer); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(definer, "tdbo_") {
				t.Errorf("definer %q is not the database's owner", definer)
			}
			owner := strings.SplitN(definer, "@", 2)[0]
			host, port := e.fleet.Members()[0].ClientAddr()
			login, _ := sql.Open("mysql", fmt.Sprintf("%s:x@tcp(%s:%d)/%s", owner, host, port, l.Database))
			defer login.Close()
			if err := login.Ping(); err == nil {
				t.Error("the database's owner can log in")
			}
		})
	}
}

// TestBuildTimeoutAndCancel: a migration that runs forever fails the
// build at its time limit with an error naming the limit, and the
// statement is stopped on the server; deleting a template while it builds
// stops its statement too.
func TestBuildTimeoutAndCancel(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1, BuildTimeout: 2 * time.Second})
			ctx := context.Background()
			sleeper := []migrations.File{migration("00001_sleep.sql", "CREATE TABLE t (id INT)", "SELECT SLEEP(600)")}
			start := time.Now()
			info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "sleepy", Files: sleeper})
			took := time.Since(start)
			if testdbd.ErrorCode(err) != testdbd.ETimeout || info.State != templates.Failed ||
				!strings.Contains(info.Err, "time limit of 2s") || !strings.Contains(info.Err, "00001_sleep.sql") {
				t.Fatalf("build past its limit: %+v, %v (code %s)", info, err, testdbd.ErrorCode(err))
			}
			if took > 10*time.Second {
				t.Errorf("the build took %v to fail with a 2 s limit", took)
			}
			waitNoSleepers(t, e)

			// A request may ask for its own limit, within the daemon's maximum.
			if _, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "x", Files: sleeper, BuildTimeout: 48 * time.Hour}); testdbd.ErrorCode(err) != testdbd.EInvalid {
				t.Errorf("a limit over the maximum: %v", err)
			}

			// Deleting the template while it builds stops the statement.
			slow := []migrations.File{migration("00001_sleep.sql", "CREATE TABLE t (id INT)", "SELECT SLEEP(600)")}
			if _, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "doomed", Files: slow, Async: true, BuildTimeout: time.Hour}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for e.adminCount(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'") == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the build never started its statement")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := e.m.DeleteTemplate(ctx, "doomed", false); err != nil {
				t.Fatal(err)
			}
			waitNoSleepers(t, e)
		})
	}
}

// waitNoSleepers waits until no SLEEP statement runs on the server.
func waitNoSleepers(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.adminCount(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the build's statement still runs on the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestConnectionCap: a lease that leaks connections reaches its cap and
// gets an error naming it; another lease on the same server still
// connects.
func TestConnectionCap(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2, LeaseConnections: 16, MaxLeaseConnections: 20})
			e.ensure(t, "app", 2)
			hog := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			other := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", MaxConnections: 20})
			if hog.MaxConnections != 16 || other.MaxConnections != 20 {
				t.Errorf("caps %d and %d, want 16 and 20", hog.MaxConnections, other.MaxConnections)
			}
			var held []*sql.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			db := open(t, hog)
			db.SetMaxOpenConns(0)
			var refused error
			for i := 0; i < 600; i++ {
				c, err := db.Conn(context.Background())
				if err == nil {
					err = c.PingContext(context.Background())
				}
				if err != nil {
					refused = err
					break
				}
				held = append(held, c)
			}
			if len(held) != 16 || refused == nil || !strings.Contains(refused.Error(), "max_user_connections") {
				t.Fatalf("the hog held %d connections before: %v", len(held), refused)
			}
			// The other lease connects, up to its own larger cap.
			odb := open(t, other)
			odb.SetMaxOpenConns(0)
			for i := 0; i < 20; i++ {
				c, err := odb.Conn(context.Background())
				if err == nil {
					err = c.PingContext(context.Background())
				}
				if err != nil {
					t.Fatalf("the other lease's connection %d: %v", i+1, err)
				}
				held = append(held, c)
			}
			if _, err := e.m.Acquire(context.Background(), lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", MaxConnections: 21}); testdbd.ErrorCode(err) != testdbd.EInvalid {
				t.Errorf("a cap over the maximum: %v", err)
			}
		})
	}
}

// TestTemplatesHeal: a template whose databases cannot be made says so at
// once (degraded, with the server's message) and backs off instead of
// retrying without end; a template database that went missing is built
// again, and leases of it are served again.
func TestTemplatesHeal(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1, MaxDatabases: 4})
			ctx := context.Background()
			info := e.ensure(t, "app", 1)

			// Clones fail: degraded, acquires fail at once with the message, few
			// attempts.
			var attempts atomic.Int64
			lease.FailClones(func(string) error {
				attempts.Add(1)
				return errors.New("Error 1030: Got error 28 from storage engine (simulated)")
			})
			defer lease.FailClones(nil)
			first := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"}) // the ready one
			start := time.Now()
			_, err := e.m.Acquire(ctx, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: 30 * time.Second})
			if testdbd.ErrorCode(err) != testdbd.EUnavailable || !strings.Contains(err.Error(), "error 28") {
				t.Fatalf("acquire while clones fail: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the acquire waited %v instead of failing at once", d)
			}
			got, _ := e.m.GetTemplate("app", "")
			if got.State != templates.Degraded || !strings.Contains(got.Err, "error 28") {
				t.Errorf("template while clones fail: %s %q", got.State, got.Err)
			}
			time.Sleep(3 * time.Second)
			if n := attempts.Load(); n > 8 {
				t.Errorf("%d attempts in about 3 s: no backoff", n)
			}
			lease.FailClones(nil)
			next, err := e.m.Acquire(ctx, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: time.Minute})
			if err != nil {
				t.Fatalf("acquire after clones work again: %v", err)
			}
			if got, _ := e.m.GetTemplate("app", ""); got.State != templates.Ready {
				t.Errorf("template after recovery: %s %q", got.State, got.Err)
			}
			e.m.Release(next.ID)

			// The template database goes missing: a reset that needs it says so,
			// the database is built again and leases are served.
			mustExec(t, open(t, first), "UPDATE users SET name = 'x' WHERE id = 1")
			db := e.fleet.Members()[0].DB
			if _, err := db.Exec("DROP DATABASE `" + info.Database + "`"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.m.Reset(ctx, first.ID, testdbd.StrategyUnspecified); testdbd.ErrorCode(err) != testdbd.EUnavailable ||
				!strings.Contains(err.Error(), "being built again") {
				t.Errorf("reset after the template database was dropped: %v", err)
			}
			e.m.Release(first.ID)
			deadline := time.Now().Add(time.Minute)
			for {
				l, err := e.m.Acquire(ctx, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: 10 * time.Second})
				if err == nil {
					var n int
					if err := open(t, l).QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n == 0 {
						t.Fatalf("a lease after the rebuild: %d users, %v", n, err)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no lease within a minute of the template database's loss: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got, _ := e.m.GetTemplate("app", ""); got.Database == info.Database {
				t.Errorf("the template database was not built again: %s", got.Database)
			}
		})
	}
}

// TestSpace: a lease that fills its database fails alone, at its cap, and
// gets its space back to the server; another lease on the same server
// keeps working and the server stays up. When the server runs short of
// space before any lease reaches its cap, the largest lease fails.
func TestSpace(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			for _, c := range []struct {
				name  string
				cfg   lease.Config
				match string
			}{
				{"cap", lease.Config{PoolSize: 2, LeaseSpace: 48 << 20}, "--lease-space=48M"},
				{"reserve", lease.Config{PoolSize: 2, LeaseSpace: 8 << 30, SpaceReserve: 400 << 20}, "--space-reserve"},
			} {
				t.Run(c.name, func(t *testing.T) { fillSpace(t, p, c.cfg, c.match) })
			}
		})
	}
}

func fillSpace(t *testing.T, p testenv.Provider, cfg lease.Config, match string) {
	e := newEnv(t, p, 1, cfg)
	e.ensure(t, "app", 2)
	x := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
	y := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
	if _, ok := e.fleet.Members()[0].DatadirUsage(); !ok {
		t.Skip("the datadir is not visible to the daemon: space is not watched")
	}
	xdb, ydb := open(t, x), open(t, y)
	mustExec(t, xdb, "CREATE TABLE fill (id INT AUTO_INCREMENT PRIMARY KEY, pad LONGBLOB)")
	mustExec(t, xdb, "INSERT INTO fill (pad) VALUES (REPEAT('x', 1000000))")
	var stopped error
	for i := 0; i < 1000 && stopped == nil; i++ {
		_, stopped = xdb.Exec("INSERT INTO fill (pad) SELECT pad FROM fill LIMIT 4")
		time.Sleep(5 * time.Millisecond)
	}
	if stopped == nil {
		t.Fatal("the lease wrote 4 GB without being stopped")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := e.m.Get(x.ID)
		if got.State == lease.LeaseFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the filling lease is %s after its writes were refused (%v)", got.State, stopped)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err := e.m.Reset(context.Background(), x.ID, testdbd.StrategyUnspecified)
	if err == nil || !strings.Contains(err.Error(), match) {
		t.Errorf("the failed lease's error does not name the limit (%s): %v", match, err)
	}
	saysWhy(t, e.m, x.ID, lease.LeaseFailed, match, "was dropped")
	// The other lease works, and so does the server.
	mustExec(t, ydb, "INSERT INTO users (email, name) VALUES ('still@x', 'fine')")
	if _, err := e.m.Reset(context.Background(), y.ID, testdbd.StrategyUnspecified); err != nil {
		t.Errorf("the other lease's reset: %v", err)
	}
	select {
	case <-e.fleet.Members()[0].Done():
		t.Fatal("the server died")
	default:
	}
	// The space came back.
	deadline = time.Now().Add(10 * time.Second)
	for {
		u, _ := e.fleet.Members()[0].DatadirUsage()
		if u.Free > u.Size/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's datadir has %dM free of %dM", u.Free>>20, u.Size>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: 30 * time.Second})
}

// TestGrownDatabaseMadeAgain: a released database whose files grew far
// past its template's (a reset empties tables but does not shrink their
// files) is dropped and a new one made, while one that grew a little is
// handed out again. The daemon measured the database at the first release
// and follows its files' writes from then on (see the instance package's
// sizes tests for that the measurements stay exact).
func TestGrownDatabaseMadeAgain(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1})
	e.ensure(t, "app", 1)
	if _, ok := e.fleet.Members()[0].DatabaseBytes("mysql"); !ok {
		t.Skip("the datadir is not visible to the daemon: database sizes are not measured")
	}
	req := lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", Worker: "w"}
	// cycle releases l, waits until its database is recycled (or dropped)
	// and leases again for the same worker: its database when it is ready
	// (a worker gets its previous database back when it can).
	cycle := func(l lease.LeaseInfo) lease.LeaseInfo {
		t.Helper()
		if _, err := e.m.Release(l.ID); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			tpl := e.m.ListTemplates()[0]
			if tpl.Pool.Ready >= 1 && tpl.Pool.Resetting == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pool did not come back: %+v", tpl.Pool)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return e.acquire(t, req)
	}
	grow := func(l lease.LeaseInfo, doublings int) {
		t.Helper()
		db := open(t, l)
		defer db.Close()
		mustExec(t, db, "INSERT INTO users (email, name) VALUES ('grow@x', 'g')")
		mustExec(t, db, "INSERT INTO posts (user_id, title, body) SELECT id, 't', REPEAT('x', 60000) FROM users WHERE email = 'grow@x'")
		for i := 0; i < doublings; i++ {
			mustExec(t, db, "INSERT INTO posts (user_id, title, body) SELECT user_id, title, body FROM posts")
		}
	}
	small := e.acquire(t, req)
	grow(small, 0)
	big := cycle(small)
	if big.Database != small.Database {
		t.Fatalf("a database that grew by one row was made again: %s, then %s", small.Database, big.Database)
	}
	grow(big, 11) // 2,048 rows of 60 KB: 120 MB
	if again := cycle(big); again.Database == big.Database {
		t.Fatalf("database %s grew by 120 MB and was handed out again", big.Database)
	}
}

// TestEvents: the recent resets (asked for, and recycles of released and
// expired leases) and the events an operator should see are kept, newest
// first, and can be read from a sequence number on.
func TestEvents(t *testing.T) {
	p := testenv.Providers()[0]
	e := newEnv(t, p, 1, lease.Config{PoolSize: 2})
	e.ensure(t, "app", 2)
	ctx := context.Background()
	l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
	mustExec(t, open(t, l), "UPDATE users SET name = 'x' WHERE id = 1")
	if _, err := e.m.Reset(ctx, l.ID, testdbd.StrategyUnspecified); err != nil {
		t.Fatal(err)
	}
	resets, _ := e.m.Events(10, 0)
	if len(resets) == 0 || resets[0].Trigger != "reset" || resets[0].Report.LeaseID != l.ID || resets[0].Template != "app" ||
		len(resets[0].Report.TablesReset) == 0 {
		t.Fatalf("resets after ResetLease: %+v", resets)
	}
	mark := resets[0].Seq
	e.m.Release(l.ID)
	short := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", TTL: time.Second})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resets, events := e.m.Events(10, mark)
		var release, expiry, expired bool
		for _, r := range resets {
			release = release || r.Trigger == "release" && r.Report.LeaseID == l.ID
			expiry = expiry || r.Trigger == "expiry" && r.Report.LeaseID == short.ID
		}
		for _, ev := range events {
			expired = expired || ev.Kind == "lease_expired" && ev.LeaseID == short.ID && ev.Level == "warning"
		}
		if release && expiry && expired {
			for _, r := range resets {
				if r.Seq <= mark {
					t.Errorf("an entry at or before the mark: %+v", r)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after release and expiry: resets %+v events %+v", resets, events)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
