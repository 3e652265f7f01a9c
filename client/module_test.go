package client_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFreshModule creates, in a temporary directory, a module outside the
// repository that depends on this one only (through a replace directive
// to this directory), with docs/go.md's test file as its test, and runs
// `go test` on it: against the package's daemon (TESTDBD_ADDR), with a
// daemon Main starts from PATH, and with none (the tests skip, or fail
// with TESTDBD_REQUIRE=1).
func TestFreshModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a module of its own (-short)")
	}
	source := docsTestFile(t)
	if n := setupLines(source); n >= 15 {
		t.Errorf("docs/go.md's test file has %d lines of setup, want fewer than 15", n)
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/app\n\ngo 1.22\n")
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	write("app_test.go", source)
	migrations, _ := filepath.Glob(filepath.Join(migrationsDir, "*.sql"))
	for _, m := range migrations {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join("migrations", filepath.Base(m)), string(b))
	}

	goTool := func(env []string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Only what is in the module cache: no network.
		cmd.Env = append(os.Environ(), append([]string{"GOFLAGS=-mod=mod", "GOPROXY=off", "TESTDBD_ADDR=", "TESTDBD_REQUIRE="}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// docs/go.md's install line, with this checkout's client/ for ../testdbd/client.
	edit := docsModEdit(t)
	if out, err := goTool(nil, strings.Fields(strings.Replace(edit, "../testdbd/client", here, 1))[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", edit, err, out)
	}
	if out, err := goTool(nil, "mod", "tidy"); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	for _, dep := range regexp.MustCompile(`(?m)^\s+(\S+) v`).FindAllStringSubmatch(string(mod), -1) {
		switch dep[1] {
		case "github.com/testdbd/testdbd/client", "github.com/go-sql-driver/mysql", "filippo.io/edwards25519":
		default:
			t.Errorf("the module needs %s: its go.mod should list the client, the MySQL driver and the driver's dependency only\n%s", dep[1], mod)
		}
	}

	t.Run("a running daemon", func(t *testing.T) {
		out, err := goTool([]string{"TESTDBD_ADDR=" + daemonAddr}, "test", "-race", "-count=1", "-v", ".")
		if err != nil || !strings.Contains(out, "--- PASS: TestUsers/carol") || !strings.Contains(out, "--- PASS: TestPosts") || strings.Contains(out, "SKIP") {
			t.Fatalf("go test: %v\n%s", err, out)
		}
	})
	t.Run("the README's test", func(t *testing.T) {
		write("app_test.go", readmeTestFile(t))
		out, err := goTool([]string{"TESTDBD_ADDR=" + daemonAddr}, "test", "-race", "-count=1", "-v", ".")
		if err != nil || !strings.Contains(out, "--- PASS: TestSignup") {
			t.Fatalf("go test: %v\n%s", err, out)
		}
	})
	t.Run("a daemon started from PATH", func(t *testing.T) {
		// StartAlways: another daemon may answer at the default address on
		// this machine.
		write("app_test.go", strings.Replace(source, "client.MainOptions{}", "client.MainOptions{Start: client.StartAlways}", 1))
		path := "PATH=" + filepath.Dir(daemonBinary) + string(os.PathListSeparator) + os.Getenv("PATH")
		out, err := goTool([]string{path}, "test", "-count=1", "-v", ".")
		if err != nil || !strings.Contains(out, "testdbd: started a daemon for this test binary") || !strings.Contains(out, "--- PASS: TestPosts") {
			t.Fatalf("go test: %v\n%s", err, out)
		}
		// It was stopped, and its state directory removed.
		m := regexp.MustCompile(`\(state and log in (\S+)\)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no state directory in the output:\n%s", out)
		}
		if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
			t.Errorf("the started daemon's state directory %s is still there: %v", m[1], err)
		}
	})
	t.Run("a TESTDBD_ADDR that does not answer", func(t *testing.T) {
		// The tests fail (a CI job that names its daemon must not pass
		// without them), once each, saying what to do.
		write("app_test.go", source)
		for addr, says := range map[string]string{
			closedAddr(t):  "nothing answers at http://",
			daemonGRPCAddr: daemonGRPCAddr + " answers gRPC, not REST",
		} {
			out, err := goTool([]string{"TESTDBD_ADDR=" + addr}, "test", "-count=1", "-v", ".")
			if err == nil || !strings.Contains(out, "--- FAIL: TestUsers") || strings.Contains(out, "SKIP") ||
				!strings.Contains(out, "testdbd: TESTDBD_ADDR="+addr+" names the daemon for these tests, and "+says) ||
				!strings.Contains(out, "the tests fail rather than skip") {
				t.Errorf("TESTDBD_ADDR=%s: %v\n%s", addr, err, out)
			}
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/usr/bin/testdbd"); err == nil {
			t.Skip("/usr/bin/testdbd exists: this case needs a PATH without testdbd")
		}
		path := "PATH=" + filepath.Dir(goBin) + string(os.PathListSeparator) + "/usr/bin:/bin"
		write("app_test.go", strings.Replace(source, "client.MainOptions{}", "client.MainOptions{Start: client.StartAlways}", 1))
		out, err := goTool([]string{path}, "test", "-count=1", "-v", ".")
		if err != nil || !strings.Contains(out, "--- SKIP: TestUsers") || !strings.Contains(out, "no testdbd is in PATH") {
			t.Errorf("without a daemon: %v\n%s", err, out)
		}
		out, err = goTool([]string{path, "TESTDBD_REQUIRE=1"}, "test", "-count=1", ".")
		if err == nil || !strings.Contains(out, "--- FAIL: TestUsers") || !strings.Contains(out, "no testdbd is in PATH") {
			t.Errorf("TESTDBD_REQUIRE=1 without a daemon: %v\n%s", err, out)
		}
	})
}

// readmeTestFile returns the Go test file of the README's "In a Go test",
// which must stay about ten lines of setup.
func readmeTestFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## In a Go test")
	if ok {
		_, rest, ok = strings.Cut(rest, "```go\n")
	}
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 || !strings.HasPrefix(block, "package ") {
		t.Fatal(`README.md has no "In a Go test" section with a Go test file`)
	}
	if n := setupLines(block); n > 10 {
		t.Errorf("the README's test file has %d lines of setup, want at most 10", n)
	}
	return block
}

// docsModEdit returns docs/go.md's `go mod edit` line, which points a
// project at a checkout of the repository.
func docsModEdit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/go.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "go mod edit -require github.com/testdbd/testdbd/client@v0.0.0 -replace ") {
			return line
		}
	}
	t.Fatal("docs/go.md has no `go mod edit -require github.com/testdbd/testdbd/client@v0.0.0 -replace …` line")
	return ""
}

// docsTestFile returns the test file of docs/go.md's "A package's tests".
func docsTestFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/go.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## A package's tests")
	if ok {
		_, rest, ok = strings.Cut(rest, "```go\n")
	}
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 || !strings.HasPrefix(block, "package ") {
		t.Fatal(`docs/go.md has no "A package's tests" section starting with a Go test file`)
	}
	return block
}

// setupLines counts the lines of a test file that are there for testdbd:
// the imports, TestMain, the options and the helper calls.
func setupLines(src string) int {
	n := 0
	inImports := false
	for _, line := range strings.Split(src, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "import ("):
			inImports = true
			n++
		case inImports:
			n++
			inImports = l != ")"
		case strings.Contains(l, "client."):
			n++
		}
	}
	return n
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
