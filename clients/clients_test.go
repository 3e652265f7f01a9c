package clients_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	repoRoot string // the repository, absolute
	workDir  string // the testdbd binary built for these tests, the virtualenv, copies
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run() // every test skips in the quick tier: nothing to build
	}
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root
	workDir, err = os.MkdirTemp("", "tdb-clients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	build := exec.Command("go", "build", "-o", filepath.Join(workDir, "bin", "testdbd"), "./cmd/testdbd")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/testdbd: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// daemon is a `testdbd serve` started by a test, on free ports and a state
// directory of its own.
type daemon struct {
	addr     string // REST, host:port
	stateDir string
	cmd      *exec.Cmd
	exited   chan struct{}
}

func startDaemon(t *testing.T) *daemon {
	t.Helper()
	stateDir, err := os.MkdirTemp("", "tdb") // short: server sockets live under it
	if err != nil {
		t.Fatal(err)
	}
	d, err := serve(stateDir)
	if err != nil {
		os.RemoveAll(stateDir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !d.stop(time.Minute) {
			t.Errorf("the daemon did not stop within a minute of SIGTERM; killed it")
			// The next daemon on a state directory removes what a killed
			// one left (servers, tmpfs mounts): be that daemon.
			if again, err := serve(stateDir); err == nil {
				again.stop(time.Minute)
			}
		}
		os.RemoveAll(stateDir)
	})
	return d
}

func serve(stateDir string) (*daemon, error) {
	cmd := exec.Command(filepath.Join(workDir, "bin", "testdbd"), "serve", "--state-dir", stateDir, "--provider", "native",
		"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{stateDir: stateDir, cmd: cmd, exited: make(chan struct{})}
	ready := make(chan string, 1)
	var mu sync.Mutex
	var logTail []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			if logTail = append(logTail, line); len(logTail) > 30 {
				logTail = logTail[1:]
			}
			mu.Unlock()
			var entry struct{ Msg, HTTP string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" {
				ready <- entry.HTTP
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(d.exited) }()
	select {
	case d.addr = <-ready:
		return d, nil
	case <-d.exited:
	case <-time.After(2 * time.Minute):
		d.stop(time.Minute)
	}
	mu.Lock()
	defer mu.Unlock()
	return nil, fmt.Errorf("testdbd serve did not start serving:\n%s", strings.Join(logTail, "\n"))
}

// stop sends SIGTERM and waits; it kills the daemon and reports false when
// it does not stop in time.
func (d *daemon) stop(timeout time.Duration) bool {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return true
	case <-time.After(timeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
		return false
	}
}

func (d *daemon) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

type lease struct {
	ID, Worker, Template string
}

func (d *daemon) leases(t *testing.T) []lease {
	var list struct{ Leases []lease }
	d.get(t, "/v1/leases", &list)
	return list.Leases
}

// acquired is the number of leases the daemon handed out so far.
func (d *daemon) acquired(t *testing.T) int {
	var stats struct {
		LeasesAcquired json.Number `json:"leases_acquired"` // an int64: a JSON string or number
	}
	d.get(t, "/v1/stats", &stats)
	n, err := strconv.Atoi(stats.LeasesAcquired.String())
	if err != nil {
		t.Fatalf("leases_acquired %q: %v", stats.LeasesAcquired, err)
	}
	return n
}

// expectNoLeases fails the test for every lease still held after what.
// Clients release before their process ends; the short wait only absorbs
// the order in which a test runner's processes exit.
func (d *daemon) expectNoLeases(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := d.leases(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				t.Errorf("after %s: lease %s (worker %q, template %q) was not released", what, l.ID, l.Worker, l.Template)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// command is a process to run for a test: its environment is the test's
// without TESTDBD_*, PYTEST_* and DB_* variables, plus env.
func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "TESTDBD_") && !strings.HasPrefix(k, "PYTEST_") &&
			!strings.HasPrefix(k, "DB_") && k != "DATABASE_URL" && k != "TEST_TOKEN" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// runCmd runs a command to its end (10 minutes at most) and returns its
// output and exit code (-1 when a signal ended it).
func runCmd(t *testing.T, dir string, env []string, name string, args ...string) (string, int) {
	t.Helper()
	out, code, err := execCmd(dir, env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out, code
}

// execCmd is runCmd for goroutines: it returns the error of a command that
// could not run.
func execCmd(dir string, env []string, name string, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := command(ctx, dir, env, name, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0, nil
	case errors.As(err, &exit):
		return string(out), exit.ExitCode(), nil
	default:
		return string(out), 0, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// mustRun runs a command that must succeed and print want.
func mustRun(t *testing.T, dir string, env []string, want string, name string, args ...string) string {
	t.Helper()
	out, code := runCmd(t, dir, env, name, args...)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("%s %s (in %s): exit %d, want %q in the output:\n%s", name, strings.Join(args, " "), dir, code, want, out)
	}
	if testing.Verbose() {
		t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	}
	return out
}

// copyDir copies a source tree, leaving out build products.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := copyTree(from, to); err != nil {
		t.Fatal(err)
	}
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		switch name := e.Name(); {
		case e.IsDir() && (name == "__pycache__" || name == "build" || name == "vendor" || name == ".pytest_cache" ||
			strings.HasSuffix(name, ".egg-info")):
			return filepath.SkipDir
		case e.IsDir():
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, info.Mode().Perm())
	})
}

func lookPath(t *testing.T, tool, why string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s is not installed (%s); scripts/install-deps.sh clients installs it (make test-all does)", tool, why)
	}
	return p
}
