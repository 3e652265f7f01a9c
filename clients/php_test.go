package clients_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/testdbd/testdbd/internal/testenv"
)

// phpTools skips the test when PHP, pdo_mysql or PHPUnit is missing and
// returns phpunit.
func phpTools(t *testing.T) string {
	t.Helper()
	testenv.NeedFull(t, "the PHP package's suites")
	lookPath(t, "php", "php-cli")
	if out, err := exec.Command("php", "-m").Output(); err != nil || !strings.Contains(strings.ToLower(string(out)), "pdo_mysql") {
		t.Skip("PHP has no pdo_mysql (Debian package php-mysql); scripts/install-deps.sh clients installs it (make test-all does)")
	}
	return lookPath(t, "phpunit", "Debian package phpunit")
}

// TestPHPPackage runs the PHP package's PHPUnit suite (client, trait,
// Laravel hooks without Laravel) with Debian's phpunit against a daemon,
// then a suite that fails, one killed by SIGTERM and one that calls exit()
// in a test. After each, no lease may be left.
func TestPHPPackage(t *testing.T) {
	phpunit := phpTools(t)
	d := startDaemon(t)
	dir := filepath.Join(repoRoot, "clients", "php")
	env := []string{"TESTDBD_ADDR=" + d.addr}

	t.Run("suite", func(t *testing.T) {
		mustRun(t, dir, env, "OK (", phpunit, "-c", "phpunit.xml.dist")
		d.expectNoLeases(t, "the package's PHPUnit suite")
	})

	for _, c := range []struct{ mode, want string }{
		{"fail", "Failures: 1"},
		{"sigterm", ""},
		{"exit", ""},
	} {
		t.Run("failing/"+c.mode, func(t *testing.T) {
			out, code := runCmd(t, dir, append(env, "TESTDBD_TEST_MODE="+c.mode), phpunit, "-c", "phpunit.xml.dist", "tests/Failing")
			if code == 0 || !strings.Contains(out, c.want) {
				t.Fatalf("phpunit tests/Failing (%s): exit %d:\n%s", c.mode, code, out)
			}
			d.expectNoLeases(t, "phpunit tests/Failing ("+c.mode+")")
		})
	}
}

// TestPHPComposer installs the PHP package into a project from a Composer
// path repository with the network disabled (no Packagist), and runs the
// project's PHPUnit tests, which use the package's trait through
// vendor/autoload.php: once serially, then as three paratest-style
// processes with TEST_TOKEN 1 to 3 at once.
func TestPHPComposer(t *testing.T) {
	phpunit := phpTools(t)
	composer := lookPath(t, "composer", "Debian package composer")
	d := startDaemon(t)
	project := filepath.Join(t.TempDir(), "app")
	copyDir(t, filepath.Join(repoRoot, "clients", "testdata", "php-project"), project)
	home := t.TempDir()
	offline := []string{"COMPOSER_HOME=" + filepath.Join(home, "home"), "COMPOSER_CACHE_DIR=" + filepath.Join(home, "cache"),
		"COMPOSER_DISABLE_NETWORK=1", "COMPOSER_ALLOW_SUPERUSER=1", "COMPOSER_NO_INTERACTION=1"}
	mustRun(t, project, offline, "", composer, "config", "repo.packagist", "false")
	mustRun(t, project, offline, "", composer, "config", "repositories.testdbd", "path", filepath.Join(repoRoot, "clients", "php"))
	mustRun(t, project, offline, "testdbd/testdbd", composer, "require", "--no-progress", "testdbd/testdbd:@dev")

	env := []string{"TESTDBD_ADDR=" + d.addr}
	mustRun(t, project, env, "OK (6 tests", phpunit)
	d.expectNoLeases(t, "the project's PHPUnit run")

	var wg sync.WaitGroup
	outs := make([]string, 3)
	codes := make([]int, 3)
	errs := make([]error, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i], errs[i] = execCmd(project, append(env, fmt.Sprintf("TEST_TOKEN=%d", i+1)), phpunit)
		}()
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || codes[i] != 0 || !strings.Contains(outs[i], "OK (6 tests") {
			t.Errorf("phpunit with TEST_TOKEN=%d: exit %d, %v:\n%s", i+1, codes[i], errs[i], outs[i])
		}
	}
	d.expectNoLeases(t, "three PHPUnit processes at once")
}
