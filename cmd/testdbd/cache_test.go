package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/internal/workload"
)

// manyMigrations writes workload.History(n) to a new directory.
func manyMigrations(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range workload.History(n).Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTemplateCache: a template of 300 migrations is built by the first
// daemon, which caches it; a second daemon, with a state directory of its
// own and the same --cache-dir (a CI cache restored between jobs), gets it
// READY from the cache without running a migration. The CLI shows the
// migration a build is on when it runs on a terminal.
func TestTemplateCache(t *testing.T) {
	dir := manyMigrations(t, 300)
	cache := t.TempDir()
	type templateJSON struct {
		State, Source, Hash string
		Tables              int
		Build               struct {
			MigrateMs float64 `json:"migrate_ms"`
			RestoreMs float64 `json:"restore_ms"`
			TotalMs   float64 `json:"total_ms"`
		}
	}
	ensure := func(d *proc) templateJSON {
		var tpl templateJSON
		body := fmt.Sprintf(`{"name":"big","migrations_dir":%q}`, dir)
		if code := d.call(t, "POST", "/v1/templates", body, &tpl); code != 200 || tpl.State != "TEMPLATE_STATE_READY" {
			t.Fatalf("ensure: %d %+v", code, tpl)
		}
		return tpl
	}

	first := startDaemon(t, testenv.StateDir(t), "--cache-dir", cache, "--migrations-root", "/")
	// The CLI on a terminal: script(1) gives it one.
	script := exec.Command("script", "-qec", fmt.Sprintf("%s template ensure --name big --migrations-dir %s", binary, dir), "/dev/null")
	script.Env = append(os.Environ(), "TESTDBD_ADDR="+first.httpAddr)
	out, err := script.CombinedOutput()
	if err != nil {
		t.Fatalf("template ensure on a terminal: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "migrating ") || !strings.Contains(string(out), "_step.sql") || !strings.Contains(string(out), "\r") {
		t.Errorf("template ensure on a terminal showed no live progress line:\n%q", out)
	}
	built := ensure(first)
	if built.Source != "migrations" || built.Build.MigrateMs == 0 {
		t.Errorf("first build: %+v", built)
	}
	file := filepath.Join(cache, built.Hash+".tdbimg")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(file); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the template was not cached in %s", cache)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.exited

	second := startDaemon(t, testenv.StateDir(t), "--cache-dir", cache, "--migrations-root", "/")
	restored := ensure(second)
	if restored.Source != "cache" || restored.Build.MigrateMs != 0 || restored.Build.RestoreMs == 0 ||
		restored.Hash != built.Hash || restored.Tables != built.Tables {
		t.Errorf("second daemon: %+v, want the first's template from the cache", restored)
	}
	t.Logf("300 migrations: built in %.0f ms (migrate %.0f ms); restored from the cache by another daemon in %.0f ms (restore %.0f ms): %.2fx",
		built.Build.TotalMs, built.Build.MigrateMs, restored.Build.TotalMs, restored.Build.RestoreMs, restored.Build.TotalMs/built.Build.TotalMs)

	// A damaged cache entry is not used: the template is built again, and
	// the entry replaced.
	if err := os.WriteFile(file, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := startDaemon(t, testenv.StateDir(t), "--cache-dir", cache, "--migrations-root", "/")
	rebuilt := ensure(third)
	if rebuilt.Source != "migrations" || rebuilt.Hash != built.Hash {
		t.Errorf("with a damaged cache entry: %+v", rebuilt)
	}
}
