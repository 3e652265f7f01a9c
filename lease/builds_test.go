package lease_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/templates"
)

// checkout is one working tree's migrations for template "app": a table of
// its own tells its schema apart.
func checkout(t *testing.T, name string) []migrations.File {
	return append(exampleFiles(t), migrations.File{Name: "00009_" + name + ".sql",
		Content: []byte("-- +goose Up\nCREATE TABLE only_" + name + " (id INT PRIMARY KEY);\n")})
}

// schemaOf says which checkout's schema a leased database has.
func schemaOf(t *testing.T, l lease.LeaseInfo) string {
	t.Helper()
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'only\\_%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, strings.TrimPrefix(n, "only_"))
	}
	return strings.Join(tables, ",")
}

// TestPinnedBuilds: two checkouts with different migrations under one
// template name, tested in parallel against one daemon, each ensuring its
// migrations now and then (as each test run does) and leasing pinned to
// the hash its ensure returned, each get their own schema every time; an
// unpinned lease gets the name's current build; a lease pinned to a build
// the name no longer has fails naming both hashes.
func TestPinnedBuilds(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1})
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			files := checkout(t, name)
			for run := 0; run < 3; run++ {
				info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "app", Files: files})
				if err != nil {
					t.Errorf("checkout %s: ensure: %v", name, err)
					return
				}
				for i := 0; i < 8; i++ {
					l, err := e.m.Acquire(ctx, lease.AcquireRequest{Template: "app", TemplateHash: info.Hash,
						Strategy: testdbd.StrategySnapshot, Worker: fmt.Sprintf("%s-%d", name, i%2)})
					if err != nil {
						t.Errorf("checkout %s, run %d: acquire pinned to %s: %v", name, run, templates.Short(info.Hash), err)
						return
					}
					if got := schemaOf(t, l); got != name || l.TemplateHash != info.Hash {
						t.Errorf("checkout %s, run %d: leased a database with the schema of %q (build %s)", name, run, got, templates.Short(l.TemplateHash))
					}
					if _, err := e.m.Release(l.ID); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Both builds are live; the one ensured last is current.
	list := e.m.ListTemplates()
	if len(list) != 2 || list[0].Name != "app" || list[1].Name != "app" || !list[0].Current || list[1].Current {
		t.Fatalf("templates: %+v", list)
	}
	cur := list[0]
	l, err := e.m.Acquire(ctx, lease.AcquireRequest{Template: "app", Strategy: testdbd.StrategySnapshot})
	if err != nil {
		t.Fatal(err)
	}
	if l.TemplateHash != cur.Hash {
		t.Errorf("unpinned lease of build %s, the current one is %s", templates.Short(l.TemplateHash), templates.Short(cur.Hash))
	}
	e.m.Release(l.ID)
	if got, err := e.m.GetTemplate("app", list[1].Hash); err != nil || got.Hash != list[1].Hash || got.Current {
		t.Errorf("get by hash: %+v, %v", got, err)
	}

	// A hash the name has no live build of.
	other := strings.Repeat("0", 64)
	_, err = e.m.Acquire(ctx, lease.AcquireRequest{Template: "app", TemplateHash: other, Strategy: testdbd.StrategySnapshot})
	if testdbd.ErrorCode(err) != testdbd.EConflict || !strings.Contains(err.Error(), templates.Short(cur.Hash)) ||
		!strings.Contains(err.Error(), templates.Short(other)) {
		t.Errorf("acquire pinned to an unknown build: %v", err)
	}
}

// TestBuildingKeepsTheCurrentBuild: while a build of new content runs, the
// name still hands out its previous build; an acquire pinned to the new
// build waits for it instead of failing.
func TestBuildingKeepsTheCurrentBuild(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1})
	ctx := context.Background()
	old := e.ensure(t, "app", 1)
	slow := append(checkout(t, "slow"), migrations.File{Name: "00010_wait.sql", Content: []byte("-- +goose Up\nDO SLEEP(2);\n")})
	building, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "app", Files: slow, Async: true})
	if err != nil || building.State != templates.Building {
		t.Fatalf("async ensure: %+v, %v", building, err)
	}
	l, err := e.m.Acquire(ctx, lease.AcquireRequest{Template: "app", Strategy: testdbd.StrategySnapshot})
	if err != nil || l.TemplateHash != old.Hash {
		t.Fatalf("during the new build, an unpinned lease: %+v, %v (want build %s)", l, err, templates.Short(old.Hash))
	}
	e.m.Release(l.ID)
	start := time.Now()
	l, err = e.m.Acquire(ctx, lease.AcquireRequest{Template: "app", TemplateHash: building.Hash, Strategy: testdbd.StrategySnapshot, WaitTimeout: time.Minute})
	if err != nil || l.TemplateHash != building.Hash || schemaOf(t, l) != "slow" {
		t.Fatalf("acquire pinned to the build in progress: %+v, %v", l, err)
	}
	t.Logf("the pinned acquire waited %v for the build", time.Since(start).Round(time.Millisecond))
	if cur, _ := e.m.GetTemplate("app", ""); cur.Hash != building.Hash {
		t.Errorf("after the build, the name points at %s, want the new %s", templates.Short(cur.Hash), templates.Short(building.Hash))
	}
}

// TestBuildProgress: a build reports the migration it is on.
func TestBuildProgress(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1})
	var files []migrations.File
	for i := 1; i <= 12; i++ {
		files = append(files, migrations.File{Name: fmt.Sprintf("%05d_step.sql", i),
			Content: []byte(fmt.Sprintf("-- +goose Up\nCREATE TABLE t%d (id INT PRIMARY KEY);\nDO SLEEP(0.1);\n", i))})
	}
	info, err := e.m.EnsureTemplate(context.Background(), templates.Request{Name: "steps", Files: files, Async: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]string{}
	for info.State == templates.Building || info.Progress.Phase == templates.PhaseCloning {
		if p := info.Progress; p.Phase == templates.PhaseMigrating {
			if p.Steps != 12 || p.Step < 1 || p.Step > 12 || p.Migration != fmt.Sprintf("%05d_step.sql", p.Step) {
				t.Errorf("progress: %+v", p)
			}
			seen[p.Step] = p.Migration
		}
		time.Sleep(20 * time.Millisecond)
		info, _ = e.m.GetTemplate("steps", info.Hash)
	}
	if info.State != templates.Ready || info.Progress.Phase != templates.PhaseDone || info.Progress.Elapsed == 0 {
		t.Fatalf("after the build: %+v", info)
	}
	if len(seen) < 6 {
		t.Errorf("saw %d of 12 migrations while building: %v", len(seen), seen)
	}
}

// TestGolangMigrateLayout: golang-migrate's NNN_name.up.sql/.down.sql
// files build as they are, each up file one multi-statement batch.
func TestGolangMigrateLayout(t *testing.T) {
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1})
	files := []migrations.File{
		{Name: "000001_users.up.sql", Content: []byte("CREATE TABLE users (id INT AUTO_INCREMENT PRIMARY KEY, name TEXT);\nINSERT INTO users (name) VALUES ('ann');\n")},
		{Name: "000001_users.down.sql", Content: []byte("DROP TABLE users;\n")},
		{Name: "000002_posts.up.sql", Content: []byte("CREATE TABLE posts (id INT PRIMARY KEY, user_id INT, FOREIGN KEY (user_id) REFERENCES users (id));\n" +
			"CREATE PROCEDURE count_posts() SELECT COUNT(*) FROM posts;\n")},
		{Name: "000002_posts.down.sql", Content: []byte("DROP TABLE posts;\n")},
	}
	info, err := e.m.EnsureTemplate(context.Background(), templates.Request{Name: "gm", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if info.Tables != 3 || info.Routines != 1 || info.Version != 2 || strings.Join(info.Migrations, ",") != "000001_users.up.sql,000002_posts.up.sql" {
		t.Errorf("template: %+v", info) // 3 tables: users, posts, goose's version table
	}
	mixed := append(files, migrations.File{Name: "00003_more.sql", Content: []byte("-- +goose Up\nSELECT 1;\n")})
	if _, err := e.m.EnsureTemplate(context.Background(), templates.Request{Name: "gm", Files: mixed}); testdbd.ErrorCode(err) != testdbd.EInvalid ||
		!strings.Contains(err.Error(), "one layout") {
		t.Errorf("mixed layouts: %v", err)
	}
}

// TestExternalBuild: a build by the caller's own migrator gets a scratch
// database it alone reaches, becomes the template at finish, is found
// again by its content hash (live, then from the cache by another
// manager), and is cleaned up when aborted or not finished in time.
func TestExternalBuild(t *testing.T) {
	cache := t.TempDir()
	e := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1, CacheDir: cache})
	ctx := context.Background()
	req := templates.ExternalRequest{Name: "ext", ContentHash: "migrations-v1"}
	info, b, err := e.m.BeginExternal(ctx, req)
	if err != nil || b == nil || info.State != templates.Building || info.Source != templates.SourceExternal {
		t.Fatalf("begin: %+v %+v %v", info, b, err)
	}
	db, err := sql.Open("mysql", b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE users (id INT AUTO_INCREMENT PRIMARY KEY, name TEXT);
		INSERT INTO users (name) VALUES ('ann'), ('bob');
		CREATE PROCEDURE n_users() SELECT COUNT(*) FROM users`); err != nil {
		t.Fatalf("the migrator's statements: %v", err)
	}
	if _, err := db.Exec("CREATE DATABASE elsewhere"); err == nil {
		t.Error("the build's account created another database")
	}
	info, err = e.m.FinishExternal(ctx, "ext", info.Hash, false)
	if err != nil || info.State != templates.Ready || info.Tables != 1 || info.Routines != 1 {
		t.Fatalf("finish: %+v %v", info, err)
	}
	if err := db.Ping(); err == nil {
		t.Error("the build's account still logs in after the build")
	}
	l := e.acquire(t, lease.AcquireRequest{Template: "ext", TemplateHash: info.Hash, Strategy: testdbd.StrategySnapshot})
	ldb := open(t, l)
	var n int
	if err := ldb.QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n != 2 {
		t.Errorf("a lease of the external template: %d users, %v", n, err)
	}
	again, b2, err := e.m.BeginExternal(ctx, req)
	if err != nil || b2 != nil || again.Hash != info.Hash || again.State != templates.Ready {
		t.Errorf("begin of the same content again: %+v %+v %v, want the template and nothing to build", again, b2, err)
	}

	// Aborted, and not finished in time: nothing is left on the server.
	srv := e.fleet.Members()[0]
	count := func() (dbs, users int) {
		srv.DB.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'tdb\\_%\\_t%'").Scan(&dbs)
		srv.DB.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'tdbt\\_%'").Scan(&users)
		return
	}
	dbs0, users0 := count()
	bad, b3, err := e.m.BeginExternal(ctx, templates.ExternalRequest{Name: "ext", ContentHash: "migrations-v2"})
	if err != nil || b3 == nil {
		t.Fatal(err)
	}
	if d, u := count(); d != dbs0+1 || u != users0+1 {
		t.Errorf("during a build: %d template databases and %d build accounts, want %d and %d", d, u, dbs0+1, users0+1)
	}
	aborted, err := e.m.AbortExternal(ctx, "ext", bad.Hash, "migrate exited with status 1")
	if err != nil || aborted.State != templates.Failed || !strings.Contains(aborted.Err, "exited with status 1") {
		t.Errorf("abort: %+v %v", aborted, err)
	}
	if d, u := count(); d != dbs0 || u != users0 {
		t.Errorf("after the abort: %d template databases and %d build accounts, want %d and %d", d, u, dbs0, users0)
	}
	late, b4, err := e.m.BeginExternal(ctx, templates.ExternalRequest{Name: "ext", ContentHash: "migrations-v3", TTL: time.Second})
	if err == nil && late.Current {
		t.Error("a build in progress became its name's current build over a ready one")
	}
	if err != nil || b4 == nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// A failed build that is not its name's current one is retired at
		// once: gone from the API too.
		_, gerr := e.m.GetTemplate("ext", late.Hash)
		d, u := count()
		if gerr != nil && d == dbs0 && u == users0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an external build past its time limit: %v; %d databases, %d accounts", gerr, d, u)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := e.m.FinishExternal(ctx, "ext", late.Hash, false); testdbd.ErrorCode(err) != testdbd.ENotFound {
		t.Errorf("finish after the time limit: %v", err)
	}

	// Another manager on the same cache: the content comes from the cache,
	// nothing to build.
	deadline = time.Now().Add(30 * time.Second)
	for !cached(cache, info.Hash) {
		if time.Now().After(deadline) {
			t.Fatal("the external template was not cached")
		}
		time.Sleep(50 * time.Millisecond)
	}
	e2 := newEnv(t, testenv.Providers()[0], 1, lease.Config{PoolSize: 1, CacheDir: cache})
	restored, b5, err := e2.m.BeginExternal(ctx, req)
	if err != nil || b5 != nil {
		t.Fatalf("begin on another manager with the cache: %+v %+v %v", restored, b5, err)
	}
	for restored.State == templates.Building || restored.Progress.Phase == templates.PhaseCloning {
		time.Sleep(20 * time.Millisecond)
		restored, _ = e2.m.GetTemplate("ext", info.Hash)
	}
	if restored.State != templates.Ready || restored.Source != templates.SourceCache || restored.Tables != 1 || restored.Routines != 1 {
		t.Errorf("restored: %+v", restored)
	}
}

func cached(dir, hash string) bool {
	_, err := os.Stat(filepath.Join(dir, hash+".tdbimg"))
	return err == nil
}
