package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/dbcompare"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/templates"
)

var stressFor = flag.Duration("stress.duration", 10*time.Second, "how long TestStress runs (run it for 1m to soak the lease manager)")

func TestMain(m *testing.M) {
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	code := m.Run()
	testenv.RemovePristine()
	os.Exit(code)
}

// env is a manager over a fleet of native servers.
type env struct {
	m     *lease.Manager
	fleet *instance.Fleet
}

func newEnv(t *testing.T, p testenv.Provider, maxInstances int, cfg lease.Config) *env {
	t.Helper()
	e := &env{}
	e.fleet = instance.NewFleet(p.New(t), instance.FleetConfig{
		MaxInstances: maxInstances, Logger: testenv.Logger(t),
		OnDeath: func(s *instance.Member, err error) { e.m.OnInstanceDeath(s, err) },
	})
	cfg.Fleet = e.fleet
	if cfg.Logger == nil {
		cfg.Logger = testenv.Logger(t)
	}
	e.m = lease.New(cfg)
	e.m.Open()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.m.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := e.fleet.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return e
}

func exampleFiles(t *testing.T) []migrations.File {
	t.Helper()
	files, err := migrations.LoadDir(filepath.Join("..", "examples", "migrations"), "..")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func (e *env) ensure(t *testing.T, name string, poolSize int) templates.Info {
	t.Helper()
	info, err := e.m.EnsureTemplate(context.Background(), templates.Request{Name: name, Files: exampleFiles(t), PoolSize: poolSize})
	if err != nil {
		t.Fatalf("ensure %s: %v", name, err)
	}
	if info.State != templates.Ready {
		t.Fatalf("template %s: %+v", name, info)
	}
	return info
}

func (e *env) acquire(t *testing.T, req lease.AcquireRequest) lease.LeaseInfo {
	t.Helper()
	l, err := e.m.Acquire(context.Background(), req)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return l
}

// waitPool waits until the template's pool reaches the given ready count.
func (e *env) waitPool(t *testing.T, name string, ready int) templates.PoolCounts {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		info, err := e.m.GetTemplate(name, "")
		if err != nil {
			t.Fatal(err)
		}
		if info.Pool.Ready >= ready && info.Pool.Creating == 0 && info.Pool.Resetting == 0 {
			return info.Pool
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool of %s stuck at %+v, want %d ready", name, info.Pool, ready)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func open(t *testing.T, l lease.LeaseInfo) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestIsolation(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2})
			e.ensure(t, "app", 2)
			a := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			b := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			if a.Database == b.Database || a.User == b.User || a.Password == b.Password {
				t.Fatalf("two leases share a database or credentials: %+v %+v", a, b)
			}
			dbA := open(t, a)
			if _, err := dbA.Exec("INSERT INTO users (email, name) VALUES ('mine@x', 'A')"); err != nil {
				t.Fatalf("lease A cannot write its own database: %v", err)
			}
			forbidden := []string{
				fmt.Sprintf("SELECT * FROM `%s`.users", b.Database),
				fmt.Sprintf("INSERT INTO `%s`.users (email, name) VALUES ('x@x', 'x')", b.Database),
				fmt.Sprintf("DROP TABLE `%s`.comments", b.Database),
				"CREATE DATABASE evil",
				"SELECT * FROM mysql.user",
				fmt.Sprintf("GRANT SELECT ON `%s`.* TO '%s'@'%%'", a.Database, b.User),
				"CREATE USER 'evil'@'%' IDENTIFIED BY 'x'",
				"SET GLOBAL max_connections = 10",
				"SHUTDOWN",
			}
			for _, q := range forbidden {
				if _, err := dbA.Exec(q); err == nil {
					t.Errorf("lease A could run: %s", q)
				}
			}
			rows, err := dbA.Query("SHOW DATABASES")
			if err != nil {
				t.Fatal(err)
			}
			var seen []string
			for rows.Next() {
				var n string
				rows.Scan(&n)
				seen = append(seen, n)
			}
			rows.Close()
			// performance_schema's status and variables tables, and on MySQL
			// its process list (an account without PROCESS sees its own
			// sessions only), are readable by every account by design; they
			// hold no database's data.
			public := "'global_status', 'session_status', 'session_account_connect_attrs'"
			mysqlServer := e.fleet.Members()[0].Engine().Flavor == testdbd.MySQL
			if mysqlServer {
				public += ", 'global_variables', 'session_variables', 'global_variable_attributes', 'persisted_variables', " +
					"'processlist', 'variables_info', 'variables_metadata'"
			}
			for _, n := range seen {
				if n != a.Database && n != "information_schema" && (n != "performance_schema" || !mysqlServer) {
					t.Errorf("lease A sees database %s (all: %v)", n, seen)
				}
			}
			rows, err = dbA.Query(`SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
				WHERE TABLE_SCHEMA NOT IN ('information_schema', ?) AND NOT (TABLE_SCHEMA = 'performance_schema'
				AND TABLE_NAME IN (`+public+`))`, a.Database)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s, n string
				rows.Scan(&s, &n)
				t.Errorf("lease A sees table %s.%s", s, n)
			}
			rows.Close()
			// B's user cannot log in to A's database either.
			cfg, _ := mysql.ParseDSN(b.DSN)
			cfg.DBName = a.Database
			other, _ := sql.Open("mysql", cfg.FormatDSN())
			defer other.Close()
			if err := other.Ping(); err == nil {
				t.Error("lease B's user connected to lease A's database")
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1, MaxDatabases: 1})
			e.ensure(t, "app", 1)
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", TTL: time.Second})
			db := open(t, l)
			db.SetMaxIdleConns(1)
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(context.Background(), "INSERT INTO users (email, name) VALUES ('late@x', 'x')"); err != nil {
				t.Fatal(err)
			}
			// The next lease gets the same (only) database once the first expired and
			// it was reset.
			next, err := e.m.Acquire(context.Background(), lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: 10 * time.Second})
			if err != nil {
				t.Fatalf("acquire after expiry: %v", err)
			}
			// The account stays, with a new password.
			if next.Database != l.Database || next.Password == l.Password {
				t.Errorf("next lease %s/%s/%s, expired %s/%s/%s", next.Database, next.User, next.Password, l.Database, l.User, l.Password)
			}
			if next.Waited < 500*time.Millisecond {
				t.Errorf("waited only %v for an expiring lease", next.Waited)
			}
			// The expired lease's session was ended and its credentials refused.
			if _, err := conn.ExecContext(context.Background(), "SELECT 1"); err == nil {
				t.Error("the expired lease's open session still works")
			}
			fresh, _ := sql.Open("mysql", l.DSN)
			defer fresh.Close()
			if err := fresh.Ping(); err == nil {
				t.Error("the expired lease's credentials still log in")
			}
			// Calls on the expired lease say so.
			for name, call := range map[string]func() error{
				"renew": func() error { _, err := e.m.Renew(l.ID, 0); return err },
				"reset": func() error { _, err := e.m.Reset(context.Background(), l.ID, 0); return err },
			} {
				err := call()
				if err == nil || !strings.Contains(err.Error(), "expired") || testdbd.ErrorCode(err) != testdbd.EConflict {
					t.Errorf("%s of an expired lease: %v", name, err)
				}
			}
			if got, _ := e.m.Get(l.ID); got.State != lease.LeaseExpired {
				t.Errorf("expired lease state %q", got.State)
			}
			// Releasing it (cleanup code always does) succeeds with its final state.
			if got, err := e.m.Release(l.ID); err != nil || got.State != lease.LeaseExpired {
				t.Errorf("release of an expired lease: %+v, %v", got, err)
			}
			// The database the next lease got is clean.
			var count int
			open(t, next).QueryRow("SELECT COUNT(*) FROM users WHERE email = 'late@x'").Scan(&count)
			if count != 0 {
				t.Error("the expired lease's write survived the reset")
			}
		})
	}
}

func TestRenew(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			e.ensure(t, "app", 1)
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", TTL: time.Second})
			for i := 0; i < 4; i++ {
				time.Sleep(500 * time.Millisecond)
				r, err := e.m.Renew(l.ID, 0)
				if err != nil {
					t.Fatalf("renew %d: %v", i, err)
				}
				if !r.ExpiresAt.After(l.ExpiresAt) {
					t.Errorf("renew did not move expires_at")
				}
			}
			if err := open(t, l).Ping(); err != nil {
				t.Fatalf("a renewed lease expired: %v", err)
			}
		})
	}
}

func TestFIFOAndCapacityError(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1, MaxDatabases: 1})
			e.ensure(t, "app", 1)
			first := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})

			// Capacity: the one database is leased; a short wait fails with a
			// message naming the limit.
			_, err := e.m.Acquire(context.Background(), lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: 200 * time.Millisecond})
			if testdbd.ErrorCode(err) != testdbd.EExhausted || !strings.Contains(err.Error(), "--max-databases=1") ||
				!strings.Contains(err.Error(), "waiting ahead") {
				t.Fatalf("capacity error: %v", err)
			}

			// Waiters are served in the order they came.
			const n = 4
			order := make(chan int, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := e.m.Acquire(context.Background(), lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: 30 * time.Second})
					if err != nil {
						t.Errorf("waiter %d: %v", i, err)
						return
					}
					if l.Waited <= 0 {
						t.Errorf("waiter %d: waited_ms not reported", i)
					}
					order <- i
					time.Sleep(20 * time.Millisecond)
					if _, err := e.m.Release(l.ID); err != nil {
						t.Error(err)
					}
				}()
				time.Sleep(50 * time.Millisecond) // enqueue in a known order
			}
			if _, err := e.m.Release(first.ID); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			close(order)
			var got []int
			for i := range order {
				got = append(got, i)
			}
			if fmt.Sprint(got) != "[0 1 2 3]" {
				t.Errorf("served in order %v, want FIFO", got)
			}
			if s := e.m.Stats(); s.AcquireExhausted != 1 || s.AcquireWait.Count != n {
				t.Errorf("stats: exhausted %d, waits %d", s.AcquireExhausted, s.AcquireWait.Count)
			}
		})
	}
}

func TestReleaseReuseAndStickiness(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 3})
			e.ensure(t, "app", 3)
			e.waitPool(t, "app", 3)
			a := e.acquire(t, lease.AcquireRequest{Template: "app", Worker: "w1", Strategy: testdbd.StrategyTruncate})
			if _, err := open(t, a).Exec("DELETE FROM users WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.m.Release(a.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.m.Release(a.ID); err != nil {
				t.Errorf("releasing twice: %v", err)
			}
			e.waitPool(t, "app", 3)
			for i := 0; i < 3; i++ {
				b := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", Worker: "w1"})
				if b.Database != a.Database {
					t.Errorf("worker w1 got %s, its previous database was %s", b.Database, a.Database)
				}
				var n int
				open(t, b).QueryRow("SELECT COUNT(*) FROM users").Scan(&n)
				if n != 3 {
					t.Errorf("reused database has %d users, want the template's 3", n)
				}
				other := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", Worker: "w2"})
				if other.Database == a.Database {
					t.Error("another worker got w1's database while it was free for w1")
				}
				e.m.Release(other.ID)
				e.m.Release(b.ID)
				e.waitPool(t, "app", 3)
			}
		})
	}
}

func TestTemplates(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			ctx := context.Background()
			files := exampleFiles(t)

			// 20 concurrent calls for the same files build once.
			var wg sync.WaitGroup
			infos := make([]templates.Info, 20)
			errs := make([]error, 20)
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					infos[i], errs[i] = e.m.EnsureTemplate(ctx, templates.Request{Name: "app", Files: files})
				}()
			}
			wg.Wait()
			for i := range 20 {
				if errs[i] != nil || infos[i].State != templates.Ready || infos[i].Hash != infos[0].Hash || !infos[i].CreatedAt.Equal(infos[0].CreatedAt) {
					t.Fatalf("call %d: %+v %v", i, infos[i], errs[i])
				}
			}
			if b := e.m.Builds(); b != 1 {
				t.Errorf("%d builds for 20 calls", b)
			}
			info := infos[0]
			if info.Tables != 6 || info.Views != 2 || info.Triggers != 2 || info.Routines != 2 || info.Events != 1 || info.Version != 3 ||
				info.Build.Migrate <= 0 || info.Build.Total <= 0 || len(info.Migrations) != 3 {
				t.Errorf("template info: %+v", info)
			}

			// A failing migration: FAILED with the file and the server's message;
			// the server stays usable; fixing the file builds a new hash.
			bad := append([]migrations.File(nil), files...)
			bad = append(bad, migrations.File{Name: "00004_broken.sql", Content: []byte("-- +goose Up\nALTER TABLE nowhere ADD COLUMN x INT;\n")})
			got, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "bad", Files: bad})
			if err == nil || got.State != templates.Failed || !strings.Contains(got.Err, "00004_broken.sql") || !strings.Contains(got.Err, "nowhere") {
				t.Fatalf("failing template: %+v %v", got, err)
			}
			if testdbd.ErrorCode(err) != testdbd.EConflict {
				t.Errorf("failing build error code %s", testdbd.ErrorCode(err))
			}
			if _, err := e.m.Acquire(ctx, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "bad"}); err == nil || !strings.Contains(err.Error(), "failed to build") {
				t.Errorf("acquire of a failed template: %v", err)
			}
			again, _ := e.m.EnsureTemplate(ctx, templates.Request{Name: "bad", Files: bad})
			if again.Hash != got.Hash || e.m.Builds() != 2 {
				t.Errorf("the same failing files were built again (builds %d)", e.m.Builds())
			}
			bad[len(bad)-1].Content = []byte("-- +goose Up\nALTER TABLE users ADD COLUMN x INT;\n")
			fixed, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "bad", Files: bad})
			if err != nil || fixed.State != templates.Ready || fixed.Hash == got.Hash {
				t.Fatalf("fixed template: %+v %v", fixed, err)
			}
			e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"}) // the server still serves

			// Bad input.
			cases := map[string]templates.Request{
				"unknown dir":   {Name: "x", MigrationsDir: "/does/not/exist"},
				"empty dir":     {Name: "x", MigrationsDir: t.TempDir()},
				"both":          {Name: "x", MigrationsDir: "/tmp", Files: files},
				"neither":       {Name: "x"},
				"hostile name":  {Name: "x`; DROP DATABASE mysql; --", Files: files},
				"quote name":    {Name: "o'brien", Files: files},
				"long name":     {Name: strings.Repeat("n", 65), Files: files},
				"traversal":     {Name: "x", Files: []migrations.File{{Name: "../00001_x.sql", Content: []byte("-- +goose Up\nSELECT 1;")}}},
				"big seed":      {Name: "x", Files: files, Seed: strings.Repeat("x", migrations.MaxSeedBytes+1)},
				"wrong engine":  {Name: "x", Files: files, Engine: "oracle"},
				"negative pool": {Name: "x", Files: files, PoolSize: -1},
			}
			for what, req := range cases {
				if _, err := e.m.EnsureTemplate(ctx, req); testdbd.ErrorCode(err) != testdbd.EInvalid {
					t.Errorf("%s: %v", what, err)
				}
			}
			if _, err := e.m.GetTemplate("nope", ""); testdbd.ErrorCode(err) != testdbd.ENotFound {
				t.Errorf("unknown template: %v", err)
			}
			if _, err := e.m.Acquire(ctx, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "nope"}); testdbd.ErrorCode(err) != testdbd.ENotFound {
				t.Errorf("acquire unknown template: %v", err)
			}
			if _, err := e.m.Get("l-nope"); testdbd.ErrorCode(err) != testdbd.ENotFound {
				t.Errorf("unknown lease: %v", err)
			}

			// Delete refuses while leases are held, unless forced.
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			if _, err := e.m.DeleteTemplate(ctx, "app", false); testdbd.ErrorCode(err) != testdbd.EConflict || !strings.Contains(err.Error(), "force") {
				t.Errorf("delete with leases: %v", err)
			}
			if _, err := e.m.DeleteTemplate(ctx, "app", true); err != nil {
				t.Fatal(err)
			}
			if _, err := e.m.Reset(ctx, l.ID, 0); err == nil {
				t.Error("a lease of a deleted template can still reset")
			}
			if _, err := e.m.GetTemplate("app", ""); testdbd.ErrorCode(err) != testdbd.ENotFound {
				t.Errorf("deleted template: %v", err)
			}
		})
	}
}

// TestStandardTemplateClones builds the 100-table standard template with a
// pool of 8 and compares every clone with the template.
func TestStandardTemplateClones(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{})
			src := workload.Standard(100)
			info, err := e.m.EnsureTemplate(context.Background(), templates.Request{Name: "std", Files: src.Files, Seed: src.Seed, PoolSize: 8})
			if err != nil {
				t.Fatal(err)
			}
			if info.Tables != 101 || info.Views != 2 || info.Triggers != 2 || info.Routines != 1 {
				t.Errorf("template: %+v", info)
			}
			e.waitPool(t, "std", 8)
			srv := e.fleet.Members()[0]
			want, err := dbcompare.Take(context.Background(), srv.DB, info.Database)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 8; i++ {
				l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "std"})
				got, err := dbcompare.Take(context.Background(), srv.DB, l.Database)
				if err != nil {
					t.Fatal(err)
				}
				if d := dbcompare.Diff(want, got); len(d) > 0 {
					t.Errorf("clone %s differs:\n%s", l.Database, strings.Join(d, "\n"))
				}
			}
		})
	}
}

// TestStress runs 32 clients acquiring, writing, resetting, renewing and
// releasing against a small capacity: no database is ever held by two
// leases, the only error is ResourceExhausted, and the pool returns to
// where it started.
func TestStress(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 2, lease.Config{PoolSize: 3, MaxDatabases: 6, MaxDBsPerInstance: 4, IdleTrim: time.Second})
			e.ensure(t, "app", 3)
			before := e.waitPool(t, "app", 3)

			var (
				mu      sync.Mutex
				holder  = map[string]string{} // database -> lease id
				ops     atomic.Int64
				exhaust atomic.Int64
			)
			deadline := time.Now().Add(*stressFor)
			var wg sync.WaitGroup
			for c := 0; c < 32; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(c), 7))
					for time.Now().Before(deadline) {
						l, err := e.m.Acquire(context.Background(), lease.AcquireRequest{Template: "app",
							Strategy: testdbd.Strategies[rng.IntN(3)], WaitTimeout: time.Duration(50+rng.IntN(500)) * time.Millisecond,
							Worker: fmt.Sprintf("w%d", c%8)})
						if err != nil {
							if testdbd.ErrorCode(err) != testdbd.EExhausted {
								t.Errorf("client %d: acquire: %v", c, err)
								return
							}
							exhaust.Add(1)
							continue
						}
						mu.Lock()
						if other, ok := holder[l.Database]; ok {
							t.Errorf("database %s handed to %s while %s holds it", l.Database, l.ID, other)
						}
						holder[l.Database] = l.ID
						mu.Unlock()
						db, _ := sql.Open("mysql", l.DSN)
						if _, err := db.Exec(fmt.Sprintf("INSERT INTO users (email, name) VALUES ('%s@x', 'c')", l.ID)); err != nil {
							t.Errorf("client %d: write: %v", c, err)
						}
						switch rng.IntN(3) {
						case 0:
							if _, err := e.m.Reset(context.Background(), l.ID, 0); err != nil {
								t.Errorf("client %d: reset: %v", c, err)
							}
						case 1:
							if _, err := e.m.Renew(l.ID, 30*time.Second); err != nil {
								t.Errorf("client %d: renew: %v", c, err)
							}
						}
						var n int
						if err := db.QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n > 4 {
							t.Errorf("client %d: %d users (err %v): a leftover from another lease", c, n, err)
						}
						db.Close()
						mu.Lock()
						delete(holder, l.Database)
						mu.Unlock()
						if _, err := e.m.Release(l.ID); err != nil {
							t.Errorf("client %d: release: %v", c, err)
						}
						ops.Add(1)
					}
				}()
			}
			wg.Wait()
			t.Logf("%d lease cycles, %d exhausted acquires in %v; stats %+v", ops.Load(), exhaust.Load(), *stressFor, e.m.Stats().Resets)
			if ops.Load() == 0 {
				t.Fatal("no lease cycle completed")
			}
			// The burst grew the pool to the limit; idle, it shrinks back to where
			// it started.
			deadline = time.Now().Add(30 * time.Second)
			for {
				info, _ := e.m.GetTemplate("app", "")
				if info.Pool == before {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("pool after the stress %+v, before %+v", info.Pool, before)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if s := e.m.Stats(); s.LeasesActive != 0 || s.Databases != before.Ready {
				t.Errorf("after the stress: %d leases active, %d databases", s.LeasesActive, s.Databases)
			}
		})
	}
}

// TestServerKilled kills a server with -9 while leases are held: they fail
// with Unavailable naming the instance, and new acquires are served by a
// replacement.
func TestServerKilled(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2})
			e.ensure(t, "app", 2)
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			victim := e.fleet.Members()[0]
			info := victim.Info(context.Background())
			p.Kill(t, victim)
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := e.m.Reset(context.Background(), l.ID, 0)
				if err != nil && testdbd.ErrorCode(err) == testdbd.EUnavailable && strings.Contains(err.Error(), info.ID) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no clear error within 10 s of the kill: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			next, err := e.m.Acquire(context.Background(), lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: time.Minute})
			if err != nil {
				t.Fatalf("acquire after the kill: %v", err)
			}
			if next.InstanceID == info.ID {
				t.Error("served by the dead server")
			}
			if err := open(t, next).Ping(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(info.Datadir); !os.IsNotExist(err) {
				t.Errorf("dead server's datadir %s remains", info.Datadir)
			}
			if _, err := e.m.Release(l.ID); err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("release of the failed lease: %v", err)
			}
		})
	}
}

// TestMassRelease releases and resets more leases at once than a server
// has administrative connections, after one lease ran DDL (so that every
// reset on the server compares everything): every reset must finish.
func TestMassRelease(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 24, MaxDatabases: 24, Clones: 4})
	e.ensure(t, "app", 24)
	e.waitPool(t, "app", 24)
	acquireAll := func(ddl bool) []string {
		var ids []string
		for i := 0; i < 24; i++ {
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			q := "INSERT INTO users (email, name) VALUES ('m@x', 'm')"
			if ddl && i == 0 {
				q = "CREATE TABLE scratch (i INT)"
			}
			if _, err := open(t, l).Exec(q); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, l.ID)
		}
		return ids
	}
	for _, ddl := range []bool{false, true} {
		ids := acquireAll(ddl)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.m.Reset(ctx, id, 0); err != nil {
					t.Errorf("reset with DDL=%v: %v", ddl, err)
				}
			}()
		}
		wg.Wait()
		cancel()
		for _, id := range ids {
			if _, err := e.m.Release(id); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		e.waitPool(t, "app", 24)
		t.Logf("DDL=%v: 24 concurrent resets, then 24 releases back in the pool in %v", ddl, time.Since(start))
	}
}

// TestRetiredTemplateIsReaped replaces a template while it has ready and
// leased databases: once the old build is stale, all of them go, and the
// counts stay right.
func TestRetiredTemplateIsReaped(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 3, StaleBuild: time.Second, IdleTrim: time.Second})
	e.ensure(t, "app", 3)
	e.waitPool(t, "app", 3)
	l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
	e.waitPool(t, "app", 3) // 3 ready and 1 leased
	files := append(exampleFiles(t), migrations.File{Name: "00009_more.sql", Content: []byte("-- +goose Up\nCREATE TABLE more_stuff (id INT);\n")})
	if _, err := e.m.EnsureTemplate(context.Background(), templates.Request{Name: "app", Files: files, PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Release(l.ID); err != nil {
		t.Fatal(err)
	}
	e.waitPool(t, "app", 1)
	srv := e.fleet.Members()[0]
	deadline := time.Now().Add(20 * time.Second)
	for {
		var dbs, users int
		srv.DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'tdb\\_%'").Scan(&dbs)
		srv.DB.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'tdbu\\_%'").Scan(&users)
		s := e.m.Stats()
		// The new template: its template database and 1 worker with its user.
		if dbs == 2 && users == 1 && s.Databases == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after replacing the template: %d databases, %d users on the server, %d counted", dbs, users, s.Databases)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCanceledAcquireKeepsNothing gives up waiting while a database frees:
// no lease may stay behind for a caller that is gone.
func TestCanceledAcquireKeepsNothing(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1, MaxDatabases: 1})
	e.ensure(t, "app", 1)
	held := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := e.m.Acquire(ctx, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", WaitTimeout: time.Minute})
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a canceled acquire returned a lease")
		}
	}
	e.m.Release(held.ID)
	e.waitPool(t, "app", 1)
	if s := e.m.Stats(); s.LeasesActive != 0 {
		t.Errorf("%d leases active after canceled acquires", s.LeasesActive)
	}
}

// TestPreparedXAAtRelease: a lease whose test left XA transactions
// prepared — one on a session still open at the release, one whose client
// disconnected — is released; its database is recycled (not dropped), the
// transactions are gone (nobody can commit them into the next lease's
// database), and the next lease gets the template's rows. A template
// deleted while a lease's test holds one prepared leaves no database
// behind.
func TestPreparedXAAtRelease(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2})
			e.ensure(t, "app", 2)
			e.waitPool(t, "app", 2)
			srv := e.fleet.Members()[0]
			a := e.acquire(t, lease.AcquireRequest{Template: "app", Worker: "w1", Strategy: testdbd.StrategySnapshot})
			db := open(t, a) // no idle connections: closing one disconnects
			prepare := func(xid, stmt string) *sql.Conn {
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{"XA START '" + xid + "'", stmt, "XA END '" + xid + "'", "XA PREPARE '" + xid + "'"} {
					if _, err := c.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				return c
			}
			open1 := prepare("rel_open", "INSERT INTO users (email, name) VALUES ('xa@x', 'xa')")
			defer open1.Close()
			prepare("rel_closed", "DELETE FROM users WHERE id = 3").Close()
			if _, err := e.m.Release(a.ID); err != nil {
				t.Fatal(err)
			}
			e.waitPool(t, "app", 2)
			if ids, err := binlog.Prepared(ctx, srv.DB); err != nil || len(ids) > 0 {
				t.Fatalf("prepared after the release: %v (%v)", ids, err)
			}
			_, evs := e.m.Events(100, 0)
			for _, ev := range evs {
				if ev.Kind == "recycle_failed" {
					t.Errorf("the released database was not recycled: %s", ev.Message)
				}
			}
			b := e.acquire(t, lease.AcquireRequest{Template: "app", Worker: "w1", Strategy: testdbd.StrategySnapshot})
			if b.Database != a.Database {
				t.Fatalf("worker w1 got %s, its previous database was %s", b.Database, a.Database)
			}
			var n int
			if err := open(t, b).QueryRow("SELECT COUNT(*) FROM users WHERE id <= 3 AND email <> 'xa@x'").Scan(&n); err != nil || n != 3 {
				t.Fatalf("the next lease's users: %d of the template's 3 (%v)", n, err)
			}
			if _, err := open(t, b).Exec("XA COMMIT 'rel_closed'"); err == nil {
				t.Error("XA COMMIT of the released lease's prepared transaction succeeded in the next lease")
			}

			db = open(t, b)
			prepare("del_closed", "DELETE FROM users WHERE id = 2").Close()
			if _, err := e.m.DeleteTemplate(ctx, "app", true); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				var dbs int
				srv.DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'tdb\\_%'").Scan(&dbs)
				ids, _ := binlog.Prepared(ctx, srv.DB)
				if dbs == 0 && len(ids) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after deleting the template: %d of its databases on the server, prepared %v", dbs, ids)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
