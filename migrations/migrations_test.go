package migrations_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/dbcompare"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// build creates database name on srv from src and captures it.
func build(t *testing.T, srv *instance.Member, name string, src migrations.Source) (*schema.Schema, migrations.Result, error) {
	t.Helper()
	ctx := context.Background()
	if _, err := srv.DB.ExecContext(ctx, "CREATE DATABASE "+schema.Quote(name)); err != nil {
		t.Fatal(err)
	}
	db, err := instance.OpenDatabase(srv.Admin(), name, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := migrations.Run(ctx, db, src, testenv.Logger(t), nil)
	if err != nil {
		return nil, res, err
	}
	s, err := schema.Capture(ctx, srv.DB, name, "")
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	return s, res, nil
}

func snapshot(t *testing.T, srv *instance.Member, name string) *dbcompare.Snapshot {
	t.Helper()
	s, err := dbcompare.Take(context.Background(), srv.DB, name)
	if err != nil {
		t.Fatalf("snapshot %s: %v", name, err)
	}
	return s
}

func assertEqual(t *testing.T, want, got *dbcompare.Snapshot) {
	t.Helper()
	if d := dbcompare.Diff(want, got); len(d) > 0 {
		t.Errorf("%s differs from %s in %d ways:\n%s", got.Database, want.Database, len(d), strings.Join(d, "\n"))
	}
}

func loadExample(t *testing.T) migrations.Source {
	t.Helper()
	files, err := migrations.LoadDir(filepath.Join("..", "examples", "migrations"), "..")
	if err != nil {
		t.Fatal(err)
	}
	return migrations.Source{Files: files, Seed: "INSERT INTO users (email, name) VALUES ('seeded@example.com', 'Seed');"}
}

// TestCloneEqualsTemplate clones the example schema (foreign keys with ON
// DELETE CASCADE and SET NULL, views on views, triggers, a procedure called
// by a trigger, a function, an event, generated columns, seed rows, an
// AUTO_INCREMENT above MAX(id)+1) and compares every object, every table's
// rows and every AUTO_INCREMENT counter.
func TestCloneEqualsTemplate(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			s, res, err := build(t, srv, "tpl_example", loadExample(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != 3 || len(res.Applied) != 3 {
				t.Errorf("goose version %d, applied %v", res.Version, res.Applied)
			}
			if len(s.Views) != 2 || len(s.Triggers) != 2 || len(s.Routines) != 2 || len(s.Events) != 1 {
				t.Errorf("captured %d views, %d triggers, %d routines, %d events", len(s.Views), len(s.Triggers), len(s.Routines), len(s.Events))
			}
			if s.Views[0].Name != "active_users" {
				t.Errorf("views not in dependency order: %s first", s.Views[0].Name)
			}
			posts, _ := s.Table("posts")
			if !posts.HasTriggers || strings.Join(posts.TriggerTargets, ",") != "audit_log,post_counts" {
				t.Errorf("posts trigger targets %v", posts.TriggerTargets)
			}
			users, _ := s.Table("users")
			if strings.Join(users.TriggerTargets, ",") != "audit_log" {
				t.Errorf("users trigger targets %v (through the procedure)", users.TriggerTargets)
			}
			comments, _ := s.Table("comments")
			if comments.AutoIncrement != 3 || comments.Rows != 1 {
				t.Errorf("comments: AUTO_INCREMENT %d rows %d, want 3 and 1", comments.AutoIncrement, comments.Rows)
			}

			want := snapshot(t, srv, "tpl_example")
			if len(want.Objects) != 13 { // 6 tables (goose_db_version too), 2 views, 2 triggers, 2 routines, 1 event
				t.Fatalf("template snapshot has %d objects, want 13", len(want.Objects))
			}
			ctx := context.Background()
			if err := s.Clone(ctx, srv.DB, &strategies.DDLCounter{}, "w_example", ""); err != nil {
				t.Fatal(err)
			}
			assertEqual(t, want, snapshot(t, srv, "w_example"))

			// The clone's objects work on the clone, not on the template.
			if _, err := srv.DB.ExecContext(ctx, "INSERT INTO w_example.posts (user_id, title) VALUES (3, 'Third Post')"); err != nil {
				t.Fatal(err)
			}
			var audit, tplAudit, active int
			_ = srv.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM w_example.audit_log").Scan(&audit)
			_ = srv.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM tpl_example.audit_log").Scan(&tplAudit)
			_ = srv.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM w_example.active_user_emails").Scan(&active)
			if audit != tplAudit+1 || active != 3 {
				t.Errorf("clone's trigger/view: audit %d (template %d), active users %d", audit, tplAudit, active)
			}
			var slug string
			_ = srv.DB.QueryRowContext(ctx, "SELECT slug FROM w_example.posts WHERE title = 'Third Post'").Scan(&slug)
			if slug != "third-post" {
				t.Errorf("generated column: %q", slug)
			}
			var n int
			if err := srv.DB.QueryRowContext(ctx, "SELECT w_example.post_count(3)").Scan(&n); err != nil || n != 1 {
				t.Errorf("function: %d %v", n, err)
			}
			if _, err := srv.DB.ExecContext(ctx, "DELETE FROM w_example.users WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			_ = srv.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM w_example.comments WHERE post_id = 1").Scan(&n)
			if n != 0 {
				t.Errorf("ON DELETE CASCADE did not reach comments in the clone")
			}
			assertEqual(t, want, snapshot(t, srv, "tpl_example")) // template untouched
		})
	}
}

// TestStandardWorkload builds the 100-table standard template once and
// checks 8 clones of it against the template.
func TestStandardWorkload(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			s, _, err := build(t, srv, "tpl_std", workload.Standard(100))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Tables) != 101 { // + goose_db_version
				t.Fatalf("%d tables captured", len(s.Tables))
			}
			want := snapshot(t, srv, "tpl_std")
			var wg sync.WaitGroup
			errs := make([]error, 8)
			start := time.Now()
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.Clone(context.Background(), srv.DB, &strategies.DDLCounter{}, fmt.Sprintf("w_std_%d", i), "")
				}()
			}
			wg.Wait()
			t.Logf("8 clones of 100 tables in %v", time.Since(start))
			for i, err := range errs {
				if err != nil {
					t.Fatalf("clone %d: %v", i, err)
				}
				assertEqual(t, want, snapshot(t, srv, fmt.Sprintf("w_std_%d", i)))
			}
		})
	}
}

// TestCompareSeesDifferences guards the comparison itself: a clone that
// differs in a row, a counter or an object must not compare equal.
func TestCompareSeesDifferences(t *testing.T) {
	srv := testenv.Server(t)
	s, _, err := build(t, srv, "tpl_cmp", loadExample(t))
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, srv, "tpl_cmp")
	ctx := context.Background()
	changes := map[string]string{
		"row":            "UPDATE %s.users SET name = 'Eve' WHERE id = 1",
		"auto_increment": "ALTER TABLE %s.comments AUTO_INCREMENT = 100",
		"rolled back":    "BEGIN; INSERT INTO %[1]s.users (email, name) VALUES ('x@y', 'x'); ROLLBACK",
		"trigger":        "DROP TRIGGER %s.posts_after_insert",
		"view":           "CREATE OR REPLACE VIEW %s.active_users AS SELECT id, email, name FROM users",
		"routine":        "DROP PROCEDURE %s.log_action",
		"column default": "ALTER TABLE %s.users ALTER COLUMN name SET DEFAULT 'x'",
		"extra table":    "CREATE TABLE %s.extra (id INT)",
	}
	i := 0
	for what, stmt := range changes {
		i++
		name := fmt.Sprintf("w_cmp_%d", i)
		if err := s.Clone(ctx, srv.DB, &strategies.DDLCounter{}, name, ""); err != nil {
			t.Fatal(err)
		}
		conn, _ := srv.DB.Conn(ctx)
		conn.ExecContext(ctx, "USE "+name)
		if _, err := conn.ExecContext(ctx, fmt.Sprintf(stmt, name)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		conn.Close()
		if d := dbcompare.Diff(want, snapshot(t, srv, name)); len(d) == 0 {
			t.Errorf("a clone with a changed %s compares equal", what)
		}
	}
}

func TestFailingMigrationNamesTheFile(t *testing.T) {
	srv := testenv.Server(t)
	src := migrations.Source{Files: []migrations.File{
		{Name: "00001_ok.sql", Content: []byte("-- +goose Up\nCREATE TABLE a (id INT PRIMARY KEY);\n")},
		{Name: "00002_broken.sql", Content: []byte("-- +goose Up\nCREATE TABLE b (id INT PRIMARY KEY);\nCREATE TABEL c (id INT);\n")},
		{Name: "00003_never.sql", Content: []byte("-- +goose Up\nCREATE TABLE d (id INT);\n")},
	}}
	_, res, err := build(t, srv, "tpl_broken", src)
	if err == nil {
		t.Fatal("a broken migration built")
	}
	if !migrations.IsBuildError(err) || !strings.Contains(err.Error(), "00002_broken.sql") || !strings.Contains(err.Error(), "1064") {
		t.Errorf("error %q should name 00002_broken.sql and the server's error 1064", err)
	}
	if len(res.Applied) != 1 || res.Applied[0] != "00001_ok.sql" {
		t.Errorf("applied %v", res.Applied)
	}

	_, _, err = build(t, srv, "tpl_badseed", migrations.Source{Files: src.Files[:1], Seed: "INSERT INTO a VALUES (1); INSERT INTO nope VALUES (1);"})
	if err == nil || !strings.Contains(err.Error(), "seed_sql") || !strings.Contains(err.Error(), "nope") {
		t.Errorf("bad seed: %v", err)
	}
	// The server is still usable.
	if err := srv.DB.Ping(); err != nil {
		t.Fatal(err)
	}
}

func TestUploadRules(t *testing.T) {
	ok := []byte("-- +goose Up\nSELECT 1;\n")
	cases := []struct {
		name  string
		files []migrations.File
		want  string
	}{
		{"slash", []migrations.File{{Name: "a/00001_x.sql", Content: ok}}, "plain file name"},
		{"backslash", []migrations.File{{Name: `..\00001_x.sql`, Content: ok}}, "plain file name"},
		{"dotdot", []migrations.File{{Name: "..", Content: ok}}, "plain file name"},
		{"traversal", []migrations.File{{Name: "../../etc/00001_passwd.sql", Content: ok}}, "plain file name"},
		{"nul", []migrations.File{{Name: "00001_x\x00.sql", Content: ok}}, "plain file name"},
		{"empty name", []migrations.File{{Name: "", Content: ok}}, "no name"},
		{"long name", []migrations.File{{Name: "00001_" + strings.Repeat("x", 300) + ".sql", Content: ok}}, "longer than"},
		{"not sql", []migrations.File{{Name: "00001_x.go", Content: ok}}, ".sql"},
		{"no version", []migrations.File{{Name: "create.sql", Content: ok}}, "version prefix"},
		{"duplicate version", []migrations.File{{Name: "00001_a.sql", Content: ok}, {Name: "1_b.sql", Content: ok}}, "same version"},
		{"twice", []migrations.File{{Name: "00001_a.sql", Content: ok}, {Name: "00001_a.sql", Content: ok}}, "twice"},
		{"none", nil, "no migrations"},
		{"too big", []migrations.File{{Name: "00001_a.sql", Content: make([]byte, migrations.MaxFileBytes+1)}}, "over the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := migrations.CheckUpload(c.files)
			if err == nil || !strings.Contains(err.Error(), c.want) || testdbd.ErrorCode(err) != testdbd.EInvalid {
				t.Errorf("err = %v, want an invalid-argument error containing %q", err, c.want)
			}
		})
	}
	files, err := migrations.CheckUpload([]migrations.File{{Name: "00002_b.sql", Content: ok}, {Name: "00001_a.sql", Content: ok}})
	if err != nil || files[0].Name != "00001_a.sql" {
		t.Errorf("valid upload: %v %v", files, err)
	}
	if err := migrations.CheckSeed(strings.Repeat("x", migrations.MaxSeedBytes+1)); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("big seed: %v", err)
	}
}

func TestLoadDir(t *testing.T) {
	if _, err := migrations.LoadDir("/nonexistent/dir", "/"); err == nil || testdbd.ErrorCode(err) != testdbd.EInvalid || !strings.Contains(err.Error(), "daemon's host") {
		t.Errorf("missing dir: %v", err)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "README.md"), []byte("hi"), 0o644)
	if _, err := migrations.LoadDir(empty, empty); err == nil || !strings.Contains(err.Error(), "no migrations") {
		t.Errorf("empty dir: %v", err)
	}
	files, err := migrations.LoadDir(filepath.Join("..", "examples", "migrations"), "..")
	if err != nil || len(files) != 3 {
		t.Errorf("examples: %d files, %v", len(files), err)
	}

	// Confinement to the root: a directory outside it, a symbolic link
	// leading out of it (to a directory, to a file) are refused; a file
	// that is not a goose migration is refused without its content.
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.sql")
	os.WriteFile(secret, []byte("root:$6$hash-of-the-first-line\nsecond line\n"), 0o600)
	os.WriteFile(filepath.Join(outside, "00001_ok.sql"), []byte("-- +goose Up\nSELECT 1;\n"), 0o644)
	if _, err := migrations.LoadDir(outside, root); testdbd.ErrorCode(err) != testdbd.EInvalid || !strings.Contains(err.Error(), "--migrations-root") {
		t.Errorf("a directory outside the root: %v", err)
	}
	linkDir := filepath.Join(root, "elsewhere")
	os.Symlink(outside, linkDir)
	if _, err := migrations.LoadDir(linkDir, root); testdbd.ErrorCode(err) != testdbd.EInvalid || !strings.Contains(err.Error(), "outside") {
		t.Errorf("a symbolic link to a directory outside the root: %v", err)
	}
	inside := filepath.Join(root, "migrations")
	os.Mkdir(inside, 0o755)
	os.WriteFile(filepath.Join(inside, "00001_ok.sql"), []byte("-- +goose Up\nSELECT 1;\n"), 0o644)
	os.Symlink(secret, filepath.Join(inside, "00002_leak.sql"))
	if _, err := migrations.LoadDir(inside, root); testdbd.ErrorCode(err) != testdbd.EInvalid || !strings.Contains(err.Error(), "symbolic link") ||
		strings.Contains(err.Error(), "hash-of-the-first-line") {
		t.Errorf("a symbolic link to a file outside the root: %v", err)
	}
	os.Remove(filepath.Join(inside, "00002_leak.sql"))
	os.WriteFile(filepath.Join(inside, "00002_notgoose.sql"), []byte("root:$6$hash-of-the-first-line\n"), 0o644)
	if _, err := migrations.LoadDir(inside, root); testdbd.ErrorCode(err) != testdbd.EInvalid || !strings.Contains(err.Error(), "-- +goose Up") ||
		strings.Contains(err.Error(), "hash-of-the-first-line") {
		t.Errorf("a file that is not a goose migration: %v", err)
	}
	os.Remove(filepath.Join(inside, "00002_notgoose.sql"))
	if files, err := migrations.LoadDir(inside, root); err != nil || len(files) != 1 {
		t.Errorf("a directory inside the root: %d files, %v", len(files), err)
	}
}

// TestLoadDirHidesPathsOutsideRoot: the error for a migrations_dir
// outside --migrations-root is the same whether the path exists or not
// (through a symbolic link in the root too), so that a caller cannot probe
// the daemon's host for paths.
func TestLoadDirHidesPathsOutsideRoot(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.Mkdir(filepath.Join(outside, "exists"), 0o755)
	os.WriteFile(filepath.Join(outside, "file"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(outside, "exists"), filepath.Join(root, "to-existing"))
	os.Symlink(filepath.Join(outside, "missing"), filepath.Join(root, "to-missing"))
	message := func(path string) string {
		_, err := migrations.LoadDir(path, root)
		if testdbd.ErrorCode(err) != testdbd.EInvalid {
			t.Fatalf("%s: %v, want EInvalid", path, err)
		}
		return strings.ReplaceAll(err.Error(), path, "PATH")
	}
	want := message(filepath.Join(outside, "missing"))
	for _, path := range []string{
		filepath.Join(outside, "exists"), filepath.Join(outside, "file"), outside, "/etc",
		filepath.Join(outside, "missing", "deeper"), filepath.Join(root, "to-existing"), filepath.Join(root, "to-missing"),
	} {
		if got := message(path); got != want {
			t.Errorf("migrations_dir %s outside the root:\n%s\nbut a missing one:\n%s", path, got, want)
		}
	}
	if !strings.Contains(want, "--migrations-root") {
		t.Errorf("the error names no flag: %s", want)
	}
}

func TestHash(t *testing.T) {
	e := testdbd.Engine{Flavor: testdbd.MariaDB, Version: "10.11.19"}
	base := migrations.Source{Files: []migrations.File{{Name: "00001_a.sql", Content: []byte("x")}}, Seed: "s"}
	h := migrations.Hash(base, e)
	if h != migrations.Hash(base, e) {
		t.Fatal("hash is not stable")
	}
	variants := map[string]func() (migrations.Source, testdbd.Engine){
		"file content": func() (migrations.Source, testdbd.Engine) {
			return migrations.Source{Files: []migrations.File{{Name: "00001_a.sql", Content: []byte("y")}}, Seed: "s"}, e
		},
		"file name": func() (migrations.Source, testdbd.Engine) {
			return migrations.Source{Files: []migrations.File{{Name: "00001_b.sql", Content: []byte("x")}}, Seed: "s"}, e
		},
		"seed": func() (migrations.Source, testdbd.Engine) {
			return migrations.Source{Files: base.Files, Seed: "t"}, e
		},
		"engine version": func() (migrations.Source, testdbd.Engine) {
			return base, testdbd.Engine{Flavor: testdbd.MariaDB, Version: "11.4.2"}
		},
		"flavor": func() (migrations.Source, testdbd.Engine) {
			return base, testdbd.Engine{Flavor: testdbd.MySQL, Version: "10.11.19"}
		},
		"boundary": func() (migrations.Source, testdbd.Engine) {
			return migrations.Source{Files: []migrations.File{{Name: "00001_a.sql", Content: []byte("xs")}}, Seed: ""}, e
		},
	}
	for name, v := range variants {
		if migrations.Hash(v()) == h {
			t.Errorf("changing the %s did not change the hash", name)
		}
	}
	old := testdbd.Version
	testdbd.Version = "other"
	defer func() { testdbd.Version = old }()
	if migrations.Hash(base, e) == h {
		t.Error("changing testdbd's version did not change the hash")
	}
}
