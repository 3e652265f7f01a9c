package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestLaravelExample runs examples/laravel, a Laravel 8 application on
// Debian's php-laravel-framework, against a daemon of its own: run.sh builds
// the template with `php artisan migrate --seed` through template ensure
// --hash-files, runs the suite serially with the TestdbdDatabase trait and
// then in four processes through paratest.php, where Laravel's
// ParallelRunner calls testdbd's ParallelTesting hooks (a lease per worker
// token, taken and released by the runner); then again with RefreshDatabase
// and rollback resets (EXAMPLE_RESET=testdbd-rollback). Every run must
// pass, with every lease released. Then a run with a failing test must fail, and one stopped
// by SIGTERM must stop, both releasing their leases too.
func TestLaravelExample(t *testing.T) {
	testenv.NeedFull(t, "the Laravel example")
	needLaravel(t)
	d := startDaemon(t, testenv.StateDir(t))
	c, err := client.New(d.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repoRoot, "examples", "laravel")
	cache := t.TempDir() // Laravel's manifests, out of the tree
	env := []string{"TESTDBD_ADDR=" + d.httpAddr, pathWithBinary(),
		"APP_SERVICES_CACHE=" + filepath.Join(cache, "services.php"), "APP_PACKAGES_CACHE=" + filepath.Join(cache, "packages.php")}
	noLeases := func(t *testing.T, after string) {
		t.Helper()
		leases, err := c.ListLeases(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			t.Errorf("after %s: lease %s (worker %q) was not released", after, l.ID, l.Worker)
		}
	}

	// The default suite (the trait, snapshot resets), then the one that
	// keeps RefreshDatabase and resets by rollback: neither may fail, nor
	// may a rollback reset have had to restore committed tables (the trait
	// reports those on stderr as "...: testdbd: ...").
	for i, reset := range []string{"testdbd", "testdbd-rollback"} {
		out, code := runLaravel(t, dir, append(env, "EXAMPLE_RESET="+reset), nil, "./run.sh", "4")
		serial := regexp.MustCompile(`(?m)^Tests: (\d+), Assertions: \d+, Skipped: (\d+)\.$`).FindStringSubmatch(out)
		parallel := regexp.MustCompile(`(?m)^paratest\.php: (\d+) tests in 4 processes, [\d.]+ s: OK$`).FindStringSubmatch(out)
		switch {
		case code != 0 || !strings.Contains(out, "laravel example: ok"):
			t.Fatalf("EXAMPLE_RESET=%s examples/laravel/run.sh 4: exit %d\n%s", reset, code, out)
		case serial == nil || parallel == nil:
			t.Fatalf("EXAMPLE_RESET=%s run.sh: no PHPUnit summary of the serial run, or no paratest.php summary:\n%s", reset, out)
		case atoi(serial[1]) < 40 || serial[1] != parallel[1]:
			t.Errorf("EXAMPLE_RESET=%s: the serial run ran %s tests, the parallel one %s: want the same, at least 40", reset, serial[1], parallel[1])
		case serial[2] != "3" || strings.Contains(out[strings.Index(out, "paratest.php:"):], "Skipped"):
			// ParallelHooksTest, without the trait, runs only under the hooks.
			t.Errorf("EXAMPLE_RESET=%s: want the 3 tests of ParallelHooksTest skipped serially and run in parallel:\n%s", reset, out)
		case strings.Contains(out, ": testdbd: "):
			t.Errorf("EXAMPLE_RESET=%s: a reset did more than asked:\n%s", reset, out)
		}
		if testing.Verbose() {
			t.Logf("EXAMPLE_RESET=%s examples/laravel/run.sh 4:\n%s", reset, out)
		}
		noLeases(t, "run.sh with EXAMPLE_RESET="+reset)
		stats, err := c.GetStats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(5 * (i + 1)); stats.LeasesAcquired != want {
			t.Errorf("%d leases acquired after EXAMPLE_RESET=%s; want %d: one per serial run and per parallel worker", stats.LeasesAcquired, reset, want)
		}
	}

	// A failing test: paratest.php exits 1, and the runner releases the leases.
	tests := t.TempDir()
	failing := `<?php
namespace Tests\Feature;

class FailingTest extends \Tests\TestCase
{
    public function test_fails(): void
    {
        $this->getJson('/api/users/3')->assertOk(); // there is no user 3
    }

    public function test_waits(): void
    {
        if ($ready = getenv('LARAVEL_EXAMPLE_WAIT')) {
            touch($ready); // the worker runs: time for SIGTERM
            sleep(60);
        }
        $this->assertTrue(true);
    }
}
`
	if err := os.WriteFile(filepath.Join(tests, "FailingTest.php"), []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"paratest.php", "--processes", "2", filepath.Join(tests, "FailingTest.php"), "tests/Feature/LookupApiTest.php"}
	out, code := runLaravel(t, dir, env, nil, "php", args...)
	if code != 1 || !strings.Contains(out, "Tests: 2, Assertions: 2, Failures: 1.") || !strings.Contains(out, ": FAILED") {
		t.Errorf("paratest.php with a failing test: exit %d, want 1 and the failure:\n%s", code, out)
	}
	noLeases(t, "a run with a failing test")

	// SIGTERM while the workers run: they are stopped, the leases released.
	ready := filepath.Join(tests, "ready")
	running := make(chan struct{})
	go func() {
		defer close(running)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(ready); err == nil {
				return
			}
		}
	}()
	out, code = runLaravel(t, dir, append(env, "LARAVEL_EXAMPLE_WAIT="+ready), running, "php", args...)
	if code != 128+int(syscall.SIGTERM) || !strings.Contains(out, "stopped by signal 15") {
		t.Errorf("paratest.php stopped by SIGTERM: exit %d, want %d:\n%s", code, 128+int(syscall.SIGTERM), out)
	}
	noLeases(t, "a run stopped by SIGTERM")
}

// needLaravel skips the test when PHP with pdo_mysql, PHPUnit, Debian's
// Laravel 8 or Faker is missing.
func needLaravel(t *testing.T) {
	t.Helper()
	testenv.NeedCommand(t, "php", "make deps-examples")
	testenv.NeedCommand(t, "phpunit", "make deps-examples")
	if out, err := exec.Command("php", "-m").Output(); err != nil || !regexp.MustCompile(`(?mi)^pdo_mysql$`).Match(out) {
		t.Skip("PHP has no pdo_mysql (Debian package php-mysql): make deps-examples installs it (make test-all does)")
	}
	for file, pkg := range map[string]string{
		"/usr/share/php/Illuminate/Foundation/Application.php": "php-laravel-framework",
		"/usr/share/php/Faker/autoload.php":                    "php-faker",
	} {
		if _, err := os.Stat(file); err != nil {
			t.Skipf("Debian's %s is not installed (no %s): make deps-examples installs it (make test-all does)", pkg, file)
		}
	}
}

// runLaravel runs a command of the Laravel example (10 minutes at most) in
// an environment without the caller's TESTDBD_*, DB_* and parallel-testing
// variables, plus env, and returns its output and exit status. When stop
// is not nil, SIGTERM goes to the command once stop is closed.
func runLaravel(t *testing.T, dir string, env []string, stop <-chan struct{}, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "TESTDBD_") && !strings.HasPrefix(k, "DB_") && !strings.HasPrefix(k, "LARAVEL_") &&
			k != "DATABASE_URL" && k != "TEST_TOKEN" && k != "EXAMPLE_RESET" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-stop:
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
	}
	if err == nil {
		return buf.String(), 0
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, buf.String())
	}
	return buf.String(), exit.ExitCode()
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
