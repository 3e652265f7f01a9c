package clients_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/internal/testenv"
)

// Debian's python3 (a pyenv or virtualenv python3 may come first on PATH):
// Debian's python3-* packages install into it.
const debianPython = "/usr/bin/python3"

var venv struct {
	once   sync.Once
	python string // the virtualenv's python
	src    string // the copy of clients/python it was installed from
	err    error
}

// pythonPackage returns a virtualenv with the testdbd package installed
// the way the docs say for a machine without a package index: `python3 -m
// venv --system-site-packages` (PyMySQL, pytest, pytest-xdist, Django from
// Debian's packages) and `pip install --no-build-isolation --no-index`. It
// installs from a copy of clients/python, since pip builds in the source
// tree. Built once for all tests.
func pythonPackage(t *testing.T) (python, src string) {
	t.Helper()
	testenv.NeedFull(t, "the Python package's suites")
	if _, err := os.Stat(debianPython); err != nil {
		t.Skipf("%s is not installed: scripts/install-deps.sh clients installs it (make test-all does)", debianPython)
	}
	modules := map[string]string{"venv": "python3-venv", "ensurepip": "python3-venv", "setuptools": "python3-setuptools",
		"wheel": "python3-wheel", "pymysql": "python3-pymysql", "pytest": "python3-pytest", "xdist": "python3-pytest-xdist"}
	for module, pkg := range modules {
		if exec.Command(debianPython, "-c", "import "+module).Run() != nil {
			t.Skipf("%s cannot import %s (Debian package %s); scripts/install-deps.sh clients installs it (make test-all does)",
				debianPython, module, pkg)
		}
	}
	venv.once.Do(func() {
		dir := filepath.Join(workDir, "venv")
		venv.src = filepath.Join(workDir, "python-src")
		if err := copyTree(filepath.Join(repoRoot, "clients", "python"), venv.src); err != nil {
			venv.err = err
			return
		}
		if out, err := exec.Command(debianPython, "-m", "venv", "--system-site-packages", dir).CombinedOutput(); err != nil {
			venv.err = fmt.Errorf("python3 -m venv: %v\n%s", err, out)
			return
		}
		pip := exec.Command(filepath.Join(dir, "bin", "pip"), "install", "--no-build-isolation", "--no-index", venv.src)
		pip.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
		if out, err := pip.CombinedOutput(); err != nil {
			venv.err = fmt.Errorf("pip install --no-build-isolation --no-index ./clients/python: %v\n%s", err, out)
			return
		}
		venv.python = filepath.Join(dir, "bin", "python")
	})
	if venv.err != nil {
		t.Fatal(venv.err)
	}
	return venv.python, venv.src
}

// TestPythonPlugin installs the Python package into a fresh virtualenv and
// runs its suites with the installed pytest plugin against a daemon: the
// unit tests, a pytest-xdist suite on 4 workers that must pass, a suite
// that fails, one whose worker is killed, and runs interrupted by SIGINT
// and SIGTERM. After each, no lease may be left.
func TestPythonPlugin(t *testing.T) {
	python, src := pythonPackage(t)
	d := startDaemon(t)
	env := []string{"TESTDBD_ADDR=" + d.addr, "PYTHONDONTWRITEBYTECODE=1"}
	// pytest's temporary files (pytester's, xdist's) go to the test's.
	basetemp := filepath.Join(t.TempDir(), "pytest")
	pytest := []string{"-m", "pytest", "-p", "no:cacheprovider", "--basetemp", basetemp}

	t.Run("unit", func(t *testing.T) {
		mustRun(t, src, env, " passed", python, append(pytest, "-q", "tests/unit")...)
	})

	t.Run("xdist", func(t *testing.T) {
		before := d.acquired(t)
		out := mustRun(t, src, env, "34 passed", python, append(pytest, "-n", "4", "tests/daemon")...)
		if !strings.Contains(out, "plugins: testdbd-") || !strings.Contains(out, "testdbd: daemon "+d.addr+", template py-plugin-suite") {
			t.Errorf("the installed plugin is not in pytest's header:\n%s", out)
		}
		if n := d.acquired(t) - before; n < 1 || n > 4 {
			t.Errorf("the suite acquired %d leases on 4 workers; want one per worker that ran database tests", n)
		}
		d.expectNoLeases(t, "a passing pytest -n 4 run")
	})

	t.Run("failing", func(t *testing.T) {
		out, code := runCmd(t, src, append(env, "TESTDBD_TEST_MODE=fail"), python, append(pytest, "-n", "2", "tests/failing")...)
		if code != 1 || !strings.Contains(out, "5 failed") || !strings.Contains(out, "1 error") {
			t.Fatalf("pytest -n 2 tests/failing: exit %d, want 1 with 5 failed and 1 error:\n%s", code, out)
		}
		d.expectNoLeases(t, "a failing pytest -n 2 run")
	})

	t.Run("worker killed by SIGTERM", func(t *testing.T) {
		out, code := runCmd(t, src, append(env, "TESTDBD_TEST_MODE=sigterm"), python, append(pytest, "-n", "2", "tests/failing")...)
		if code != 1 || !strings.Contains(out, "crashed") {
			t.Fatalf("pytest -n 2 tests/failing with a worker killed: exit %d, want 1 and a crashed worker:\n%s", code, out)
		}
		d.expectNoLeases(t, "a pytest -n 2 run whose worker got SIGTERM")
	})

	for _, c := range []struct {
		sig           syscall.Signal
		name, workers string
	}{{syscall.SIGINT, "SIGINT", "0"}, {syscall.SIGTERM, "SIGTERM", "0"}, {syscall.SIGINT, "SIGINT", "2"}, {syscall.SIGTERM, "SIGTERM", "2"}} {
		name := fmt.Sprintf("%s to pytest -n %s", c.name, c.workers)
		t.Run(name, func(t *testing.T) {
			interrupt(t, d, python, src, env, basetemp, c.sig, c.workers)
			d.expectNoLeases(t, name)
		})
	}
}

// interrupt starts pytest on the hanging test, waits until that test holds
// its lease, sends sig to pytest and waits for it to end.
func interrupt(t *testing.T, d *daemon, python, src string, env []string, basetemp string, sig syscall.Signal, workers string) {
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// SIGINT is ignored in processes started in the background by a
	// non-interactive shell, and that is inherited: undo it, as a terminal's
	// Ctrl-C would find it.
	cmd := command(ctx, src, append(env, "TESTDBD_TEST_MODE=hang", "TESTDBD_TEST_READY="+ready), python, "-c",
		`import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, [sys.executable] + sys.argv[1:])`,
		"-m", "pytest", "-p", "no:cacheprovider", "--basetemp", basetemp, "-n", workers, "tests/failing")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("pytest ended before the hanging test ran: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hanging test did not start within 2 minutes:\n%s", out.String())
		}
	}
	if len(d.leases(t)) == 0 {
		t.Fatal("the hanging test runs, but the daemon lists no lease")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("pytest exited 0 after %v", sig)
		}
		if testing.Verbose() {
			t.Logf("pytest after %v: %v\n%s", sig, err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("pytest did not end within a minute of %v:\n%s", sig, out.String())
	}
}

// TestDjango runs examples/django/run.sh, which uses the package's
// Django test runner (serially and with --parallel 4) and its pytest-django
// integration (pytest -n 4), with the virtualenv's python; then pytest-django
// in one process, whose order puts Django's TransactionTestCase tests before
// tests that need the migrations' rows; then Django's parallel runner on
// tests that fail, on a worker that dies, and interrupted (django_test.go);
// then run.sh with a python whose `manage.py migrate` fails, which must leave
// no lease behind either.
func TestDjango(t *testing.T) {
	python, src := pythonPackage(t)
	for module, pkg := range map[string]string{"django": "python3-django", "dj_database_url": "python3-dj-database-url",
		"pytest_django": "python3-pytest-django", "tblib": "python3-tblib"} {
		if exec.Command(python, "-c", "import "+module).Run() != nil {
			t.Skipf("%s is missing (Debian package %s); scripts/install-deps.sh clients installs it (make test-all does)", module, pkg)
		}
	}
	d := startDaemon(t)
	path := "PATH=" + filepath.Join(workDir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	dir := filepath.Join(repoRoot, "examples", "django")

	t.Run("passes", func(t *testing.T) {
		out := mustRun(t, dir, []string{"TESTDBD_ADDR=" + d.addr, path, "PYTHON=" + python}, "django example: ok", "./run.sh")
		for _, want := range []string{"testdbd: database tdb_", "Ran 13 tests", "26 passed"} {
			if !strings.Contains(out, want) {
				t.Errorf("run.sh's output lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "Ran 13 tests"); n != 2 {
			t.Errorf("run.sh ran manage.py test %d times, want 2 (serially, then --parallel 4):\n%s", n, out)
		}
		parallelLeases(t, out, 4)
		d.expectNoLeases(t, "examples/django/run.sh")
	})

	t.Run("pytest in one process", func(t *testing.T) {
		env := []string{"TESTDBD_ADDR=" + d.addr, "PYTHONDONTWRITEBYTECODE=1"}
		mustRun(t, dir, env, "26 passed", python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
			"--basetemp", filepath.Join(t.TempDir(), "pytest"))
		d.expectNoLeases(t, "pytest on examples/django")
	})

	t.Run("parallel", func(t *testing.T) {
		djangoParallelFailures(t, d, python, filepath.Join(src, "tests", "django"))
	})

	t.Run("fails", func(t *testing.T) {
		failing := filepath.Join(t.TempDir(), "python")
		script := "#!/bin/sh\ncase \"$*\" in *migrate*) echo 'migrate fails on purpose' >&2; exit 3;; esac\nexec " + python + " \"$@\"\n"
		if err := os.WriteFile(failing, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		// A daemon of its own: the first one holds a build of these
		// migrations, so run.sh would not run migrate there.
		fresh := startDaemon(t)
		out, code := runCmd(t, dir, []string{"TESTDBD_ADDR=" + fresh.addr, path, "PYTHON=" + failing}, "./run.sh")
		if code == 0 || !strings.Contains(out, "migrate fails on purpose") || !strings.Contains(out, "the build was aborted") {
			t.Fatalf("run.sh with a failing migrate: exit %d:\n%s", code, out)
		}
		fresh.expectNoLeases(t, "examples/django/run.sh with a failing step")
	})
}
