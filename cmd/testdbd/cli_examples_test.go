package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestExamples runs every example under examples/ against a daemon of its
// own, each with the one command its header documents, and checks that
// every lease was given back afterwards. `make test` installs what they need
// (scripts/install-deps.sh examples).
func TestExamples(t *testing.T) {
	testenv.NeedFull(t, "the examples")
	d := startDaemon(t, testenv.StateDir(t))
	env := []string{"TESTDBD_ADDR=" + d.httpAddr, pathWithBinary(), "PYTHONDONTWRITEBYTECODE=1"}
	examples := []struct {
		name string
		cmd  []string // run in the repository's root
		says string   // printed on success
	}{
		{"go", []string{"go", "test", "-race", "-count=1", "./examples/go/"}, "ok"},
		{"php", []string{"php", "examples/php/paratest.php"}, "[worker 3] the template is back: ok"},
		{"python", []string{"python3", "examples/python/xdist.py"}, "[gw2] the template is back: ok"},
		{"shell", []string{"examples/shell/demo.sh"}, "shell example: ok"},
	}
	t.Run("each", func(t *testing.T) {
		for _, ex := range examples {
			t.Run(ex.name, func(t *testing.T) {
				t.Parallel()
				args := ex.cmd
				if args[0] == "python3" {
					args = append([]string{pythonWithPyMySQL(t)}, args[1:]...)
				}
				for _, tool := range []string{args[0], "curl", "mariadb"} {
					if !strings.Contains(tool, "/") {
						testenv.NeedCommand(t, tool, "scripts/install-deps.sh server examples")
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, args[0], args[1:]...)
				cmd.Dir = repoRoot
				cmd.Env = append(os.Environ(), env...)
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), ex.says) {
					t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
				}
				if testing.Verbose() {
					t.Logf("%s:\n%s", strings.Join(args, " "), out)
				}
			})
		}
	})
	c, err := client.New(d.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := c.ListLeases(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		t.Errorf("lease %s (worker %q) was not released by its example", l.ID, l.Worker)
	}
}

// pythonWithPyMySQL returns a python3 that can import pymysql: the one on
// PATH, or Debian's, which python3-pymysql installs into (a python3 from
// pyenv or a virtualenv may come first on PATH).
func pythonWithPyMySQL(t *testing.T) string {
	py, ok := pythonWith("pymysql")
	if !ok {
		t.Fatal("no python3 can import pymysql: run scripts/install-deps.sh examples (make test does), which installs python3-pymysql")
	}
	return py
}

// pythonWith returns the first python3 (on PATH, then Debian's) that can
// import every module.
func pythonWith(modules ...string) (string, bool) {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run() == nil {
			if p, err := exec.LookPath(py); err == nil {
				return p, true
			}
		}
	}
	return "", false
}

// TestPytestExample runs examples/python/pytest, the pytest guide's
// conftest.py, with three xdist workers, when pytest and pytest-xdist are
// installed (scripts/install-deps.sh clients, which make test-all runs);
// examples/python/xdist.py,
// which TestExamples runs, does the same without pytest.
func TestPytestExample(t *testing.T) {
	testenv.NeedFull(t, "the pytest example")
	py, ok := pythonWith("pytest", "xdist", "pymysql")
	if !ok {
		t.Skip("pytest, pytest-xdist or PyMySQL is missing (apt-get install python3-pytest python3-pytest-xdist python3-pymysql)")
	}
	d := startDaemon(t, testenv.StateDir(t))
	cmd := exec.Command(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3", "examples/python/pytest")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "TESTDBD_ADDR="+d.httpAddr, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "19 passed") {
		t.Fatalf("pytest examples/python/pytest: %v\n%s", err, out)
	}
}

// TestDjangoExample runs examples/django/run.sh, the Django guide end to
// end, when Django, pytest-django and pytest-xdist are installed
// (scripts/install-deps.sh clients, which make test-all runs).
func TestDjangoExample(t *testing.T) {
	testenv.NeedFull(t, "the Django example")
	py, ok := pythonWith("django", "dj_database_url", "pymysql", "pytest_django", "xdist")
	if !ok {
		t.Skip("Django, dj-database-url, PyMySQL, pytest-django or pytest-xdist is missing (apt-get install python3-django python3-dj-database-url python3-pymysql python3-pytest-django python3-pytest-xdist)")
	}
	testenv.NeedCommand(t, "mariadb-dump", "scripts/install-deps.sh examples")
	d := startDaemon(t, testenv.StateDir(t))
	cmd := exec.Command("examples/django/run.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "TESTDBD_ADDR="+d.httpAddr, pathWithBinary(), "PYTHON="+py)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "django example: ok") {
		t.Fatalf("examples/django/run.sh: %v\n%s", err, out)
	}
}

// TestDumpToGoose checks examples/shell/dump-to-goose.sh, the way to turn a
// schema that another tool built into goose migrations (when a template
// is to be built without that tool; template ensure --hash-files runs the
// tool itself): run that tool's migrations on a lease of an empty template (here: the example migrations, executed as the
// lease's own user, as `php artisan migrate` would), dump the database with
// mariadb-dump, convert the dump with examples/shell/dump-to-goose.sh, and
// build a template from it. The new template must equal the original.
func TestDumpToGoose(t *testing.T) {
	testenv.NeedFull(t, "the dump-to-goose example")
	testenv.NeedCommand(t, "mariadb-dump", "scripts/install-deps.sh examples")
	d := startDaemon(t, testenv.StateDir(t))
	c, err := client.New(d.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "00001_empty.sql"), []byte("-- +goose Up\nSELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := client.ReadMigrations(empty)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnsureTemplate(ctx, client.EnsureTemplateRequest{Name: "empty", Migrations: files}); err != nil {
		t.Fatal(err)
	}
	scratch, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := client.OpenDB(scratch, func(cfg *mysql.Config) { cfg.MultiStatements = true })
	if err != nil {
		t.Fatal(err)
	}
	migrations, err := client.ReadMigrations(filepath.Join(repoRoot, "examples", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range migrations {
		up, _, _ := strings.Cut(f.Content, "-- +goose Down")
		// One batch: the server's parser finds where each compound
		// statement ends, once goose's end marker is a semicolon.
		up = strings.ReplaceAll(up, "-- +goose StatementEnd", ";")
		if _, err := db.Exec(up); err != nil {
			t.Fatalf("%s as the lease's user: %v", f.Name, err)
		}
	}
	db.Close()

	dump := filepath.Join(t.TempDir(), "dump.sql")
	out, err := exec.Command("mariadb-dump", "-h", scratch.Host, "-P", fmt.Sprint(scratch.Port), "-u", scratch.User, "-p"+scratch.Password,
		"--routines", "--events", "--ignore-table="+scratch.Database+".goose_db_version", "--result-file="+dump, scratch.Database).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, out)
	}
	if _, err := c.ReleaseLease(ctx, scratch.ID); err != nil {
		t.Fatal(err)
	}
	goose, err := exec.Command(filepath.Join(repoRoot, "examples", "shell", "dump-to-goose.sh"), dump).Output()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := c.EnsureTemplate(ctx, client.EnsureTemplateRequest{Name: "from-dump",
		Migrations: []client.MigrationFile{{Name: "00001_schema.sql", Content: string(goose)}}})
	if err != nil {
		t.Fatalf("template from the converted dump: %v", err)
	}
	if tpl.Tables != 6 || tpl.Views != 2 || tpl.Triggers != 2 || tpl.Routines != 2 || tpl.Events != 1 {
		t.Errorf("template from the dump: %d tables, %d views, %d triggers, %d routines, %d events; want 6, 2, 2, 2, 1",
			tpl.Tables, tpl.Views, tpl.Triggers, tpl.Routines, tpl.Events)
	}

	// The rows, the AUTO_INCREMENT counters and the definer-less triggers,
	// view and function work for a lease of the new template.
	l, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "from-dump"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.ReleaseLease(ctx, l.ID) }()
	db, err = client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for query, want := range map[string]int64{
		"SELECT COUNT(*) FROM users":        3,
		"SELECT COUNT(*) FROM audit_log":    2,
		"SELECT COUNT(*) FROM active_users": 2,
		"SELECT post_count(1)":              1,
		"SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'comments'": 3,
	} {
		var got int64
		if err := db.QueryRow(query).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", query, got, err, want)
		}
	}
	if _, err := db.Exec("INSERT INTO posts (user_id, title) VALUES (3, 'Triggered')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT post_count(3)").Scan(&n); err != nil || n != 1 {
		t.Errorf("the trigger did not count the post: %d, %v", n, err)
	}
}
