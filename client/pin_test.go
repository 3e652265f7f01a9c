package client_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/testdbd/testdbd/client"
)

// checkoutDir is a copy of the example migrations plus one of its own,
// which tells its schema apart: a working tree of the project on another
// branch.
func checkoutDir(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(migrationsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(migrationsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	extra := "-- +goose Up\nCREATE TABLE only_" + name + " (id INT PRIMARY KEY);\n"
	if err := os.WriteFile(filepath.Join(dir, "00009_"+name+".sql"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTwoCheckoutsOneName: two checkouts with different migrations under
// one template name, tested in parallel against one daemon through
// TestLease (which ensures each checkout's migrations and pins its leases
// to that build), each get their own schema every time.
func TestTwoCheckoutsOneName(t *testing.T) {
	dirs := map[string]string{"main": checkoutDir(t, "main"), "feature": checkoutDir(t, "feature")}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i := 0; i < 6; i++ {
				t.Run("test", func(t *testing.T) {
					l := client.TestLease(t, client.TestOptions{Addr: daemonAddr, Template: "shared-name", MigrationsDir: dir})
					db, err := client.OpenDB(l, nil)
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					var tables []string
					rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'only\\_%'")
					if err != nil {
						t.Fatal(err)
					}
					for rows.Next() {
						var n string
						rows.Scan(&n)
						tables = append(tables, n)
					}
					rows.Close()
					if got := strings.Join(tables, ","); got != "only_"+name {
						t.Errorf("checkout %s got a database with %q (build %.12s)", name, got, l.TemplateHash)
					}
				})
			}
		})
	}
	t.Cleanup(func() {
		c, err := client.New(daemonAddr)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if ts, err := c.ListTemplates(ctx); err == nil {
			n := 0
			for _, tpl := range ts {
				if tpl.Name == "shared-name" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d live builds of shared-name, want the two checkouts'", n)
			}
		}
	})
}

// TestEnsureTemplateFunc: the caller's own build function runs against the
// scratch database once; a second ensure of the same content finds the
// build and runs nothing. golang-migrate files from an fs.FS build
// through EnsureTemplate.
func TestEnsureTemplateFunc(t *testing.T) {
	c, err := client.New(daemonAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs := 0
	build := func(ctx context.Context, dsn string) error {
		runs++
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, "CREATE TABLE accounts (id INT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(80) UNIQUE); INSERT INTO accounts (email) VALUES ('a@x')")
		return err
	}
	req := client.BeginTemplateBuildRequest{Name: "own-migrator", ContentHash: "v1-" + strings.Repeat("f", 20)}
	for i := 0; i < 2; i++ {
		tpl, err := c.EnsureTemplateFunc(ctx, req, build)
		if err != nil || tpl.State != client.TemplateReady || tpl.Source != "external" || tpl.Tables != 1 {
			t.Fatalf("ensure %d: %+v, %v", i, tpl, err)
		}
	}
	if runs != 1 {
		t.Errorf("the build function ran %d times, want once", runs)
	}
	failing := client.BeginTemplateBuildRequest{Name: "own-migrator", ContentHash: "v2-broken"}
	if _, err := c.EnsureTemplateFunc(ctx, failing, func(context.Context, string) error { return errors.New("migration 7 failed") }); err == nil ||
		!strings.Contains(err.Error(), "migration 7 failed") {
		t.Errorf("a failing build function: %v", err)
	}

	files, err := client.ReadMigrationsFS(fstest.MapFS{
		"db/000001_init.up.sql":   {Data: []byte("CREATE TABLE notes (id INT PRIMARY KEY, body TEXT);")},
		"db/000001_init.down.sql": {Data: []byte("DROP TABLE notes;")},
		"db/README.md":            {Data: []byte("not a migration")},
	}, "db")
	if err != nil || len(files) != 2 {
		t.Fatalf("ReadMigrationsFS: %v %v", files, err)
	}
	tpl, err := c.EnsureTemplate(ctx, client.EnsureTemplateRequest{Name: "golang-migrate", Migrations: files})
	if err != nil || tpl.State != client.TemplateReady || tpl.Tables != 2 { // notes and goose's version table
		t.Errorf("golang-migrate files: %+v, %v", tpl, err)
	}
}
