package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/internal/testenv"
)

// buildDaemonImage builds (or finds up to date) the all-in-one image, or
// skips the test without a Docker engine.
func buildDaemonImage(t *testing.T) {
	t.Helper()
	testenv.NeedFull(t, "the all-in-one image")
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no Docker engine reachable (docker info: %v): the all-in-one image cannot run here", err)
	}
	cmd := exec.Command("scripts/build-daemon-image.sh")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-daemon-image.sh: %v\n%s", err, out)
	}
}

// removeContainers removes the containers whose name starts with prefix.
func removeContainers(prefix string) {
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "name=^"+prefix).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
	}
}

// waitHealthy waits until the daemon at base answers /healthz.
func waitHealthy(t *testing.T, base string, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve within 3 minutes: %v\n%s", base, err, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readmeDockerRun returns docs/docker.md's `docker run` of the all-in-one
// image, its ports moved to free ones: the REST port, and a server range
// published with the same numbers (TESTDBD_SERVER_PORTS).
func readmeDockerRun(t *testing.T, name string, httpPort, grpcPort, first, last int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "docker.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Docker, Compose and CI")
	if ok {
		_, rest, ok = strings.Cut(rest, "```sh\n")
	}
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 || !strings.HasPrefix(block, "docker run") {
		t.Fatal(`docs/docker.md's "Docker, Compose and CI" has no docker run block`)
	}
	for _, want := range []string{"--tmpfs /testdbd/data", "-p 127.0.0.1:18080:8080", "-p 127.0.0.1:19090:9090", "-p 127.0.0.1:33060-33099:33060-33099", "--name testdbd "} {
		if !strings.Contains(block, want) {
			t.Fatalf("docs/docker.md's docker run lacks %q:\n%s", want, block)
		}
	}
	ports := fmt.Sprintf("%d-%d", first, last)
	return strings.NewReplacer(
		"--name testdbd ", "--name "+name+" -e TESTDBD_SERVER_PORTS="+ports+" ",
		"127.0.0.1:18080:8080", fmt.Sprintf("127.0.0.1:%d:8080", httpPort),
		"127.0.0.1:19090:9090", fmt.Sprintf("127.0.0.1:%d:9090", grpcPort),
		"TESTDBD_ADDR=127.0.0.1:18080", fmt.Sprintf("TESTDBD_ADDR=127.0.0.1:%d", httpPort),
		"127.0.0.1:33060-33099:33060-33099", "127.0.0.1:"+ports+":"+ports,
	).Replace(block)
}

// TestImage runs the all-in-one image as docs/docker.md says, with the
// Quickstart's calls from the host; then the CI recipe and compose.yaml.
func TestImage(t *testing.T) {
	buildDaemonImage(t)
	prefix := "tdbtest-" + random.Hex(3)
	t.Cleanup(func() { removeContainers(prefix) })

	t.Run("docker run and the quickstart", func(t *testing.T) {
		httpPort, _ := portRangeFor(t, 1, false)
		grpcPort, _ := portRangeFor(t, 1, false)
		first, last := portRangeFor(t, 4, false)
		name := prefix + "-run"
		run := readmeDockerRun(t, name, httpPort, grpcPort, first, last)
		cmd := exec.Command("bash", "-c", run)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", run, err, out)
		}
		logs := func() string { out, _ := exec.Command("docker", "logs", name).CombinedOutput(); return string(out) }
		base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
		waitHealthy(t, base, logs)
		quickstartFromHost(t, base, first, last)

		// docker stop: SIGTERM stops the servers and the daemon, at once.
		if out, err := exec.Command("docker", "stop", name).CombinedOutput(); err != nil {
			t.Errorf("docker stop: %v %s", err, out)
		}
	})

	t.Run("the CI recipe", func(t *testing.T) {
		httpPort, _ := portRangeFor(t, 1, false)
		first, last := portRangeFor(t, 4, false)
		cmd := exec.Command("examples/ci/testdbd-ci.sh", "examples/shell/demo.sh")
		cmd.Dir = t.TempDir() // the recipe's working directory: the project's, mounted into the container
		if err := os.Symlink(filepath.Join(mustAbs(t, repoRoot), "examples"), filepath.Join(cmd.Dir, "examples")); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), pathWithBinary(), "TESTDBD_ADDR=", "TESTDBD_TOKEN=",
			fmt.Sprintf("TESTDBD_HTTP_PORT=%d", httpPort), fmt.Sprintf("TESTDBD_SERVER_PORTS=%d-%d", first, last))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "shell example: ok") {
			t.Fatalf("examples/ci/testdbd-ci.sh examples/shell/demo.sh: %v\n%s", err, out)
		}
		if log, err := os.ReadFile(filepath.Join(cmd.Dir, "testdbd.log")); err != nil || !strings.Contains(string(log), "serving") {
			t.Errorf("testdbd.log: %v\n%s", err, log)
		}
		if ps, _ := exec.Command("docker", "ps", "-aq", "--filter", "name=^testdbd-ci-").Output(); len(strings.TrimSpace(string(ps))) > 0 {
			t.Errorf("the recipe left containers: %s", ps)
		}
		// The command's exit status is the recipe's.
		fail := exec.Command("examples/ci/testdbd-ci.sh", "sh", "-c", "exit 3")
		fail.Dir = cmd.Dir
		fail.Env = cmd.Env
		if err := fail.Run(); fail.ProcessState.ExitCode() != 3 {
			t.Errorf("a failing command: %v, want exit status 3", err)
		}
	})

	t.Run("compose", func(t *testing.T) {
		compose, err := exec.LookPath("docker-compose")
		args := []string{}
		if err != nil {
			if exec.Command("docker", "compose", "version").Run() != nil {
				t.Skip("neither docker-compose nor docker compose is installed")
			}
			compose, args = "docker", []string{"compose"}
		}
		httpPort, _ := portRangeFor(t, 1, false)
		grpcPort, _ := portRangeFor(t, 1, false)
		first, last := portRangeFor(t, 4, false)
		project := prefix + "-compose"
		env := append(os.Environ(), fmt.Sprintf("TESTDBD_HTTP_PORT=%d", httpPort), fmt.Sprintf("TESTDBD_GRPC_PORT=%d", grpcPort),
			fmt.Sprintf("TESTDBD_SERVER_PORTS=%d-%d", first, last), "TESTDBD_TOKEN=")
		dc := func(sub ...string) ([]byte, error) {
			cmd := exec.Command(compose, append(append(append([]string{}, args...), "-p", project, "-f", "compose.yaml"), sub...)...)
			cmd.Dir = repoRoot
			cmd.Env = env
			return cmd.CombinedOutput()
		}
		t.Cleanup(func() { _, _ = dc("down", "--volumes", "--timeout", "30") })
		if out, err := dc("up", "-d"); err != nil {
			t.Fatalf("up: %v\n%s", err, out)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
		waitHealthy(t, base, func() string { out, _ := dc("logs"); return string(out) })
		quickstartFromHost(t, base, first, last)
		if out, err := dc("down", "--timeout", "30"); err != nil {
			t.Errorf("down: %v\n%s", err, out)
		}
	})
}

// quickstartFromHost runs the README Quickstart's calls against the
// daemon at base, and checks that the leased database answers from the
// host at the address the lease carries, a port of the published range.
func quickstartFromHost(t *testing.T, base string, first, last int) {
	t.Helper()
	call := func(method, path, body string, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, b)
			}
		}
	}
	var tpl client.Template
	call("POST", "/v1/templates", `{"name":"app","migrations_dir":"./examples/migrations"}`, &tpl)
	if tpl.State != client.TemplateReady || tpl.Tables != 6 {
		t.Fatalf("template: %+v", tpl)
	}
	var l client.Lease
	call("POST", "/v1/leases", `{"template":"app","strategy":"STRATEGY_SNAPSHOT","worker":"w1"}`, &l)
	if l.Host != "127.0.0.1" || int(l.Port) < first || int(l.Port) > last {
		t.Errorf("lease at %s:%d: want 127.0.0.1 and a port of %d-%d", l.Host, l.Port, first, last)
	}
	db, err := client.OpenDB(&l, nil)
	if err != nil {
		t.Fatalf("connect from the host to %s: %v", l.DSN, err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO users (email, name) VALUES ('host@example.com', 'Host')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var rep client.ResetReport
	call("POST", "/v1/leases/"+l.ID+":reset", `{}`, &rep)
	if len(rep.TablesReset) == 0 {
		t.Errorf("reset: %+v", rep)
	}
	db2, err := client.OpenDB(&l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if n := countRows(t, db2, "users"); n != 3 {
		t.Errorf("%d users after the reset, want 3", n)
	}
	db2.Close()
	call("DELETE", "/v1/leases/"+l.ID, "", nil)
	var insts struct{ Instances []client.Instance }
	call("GET", "/v1/instances", "", &insts)
	if len(insts.Instances) == 0 || !insts.Instances[0].DatadirOnTmpfs || insts.Instances[0].Provider != "native" {
		t.Errorf("instances: %+v", insts.Instances)
	}
	for _, path := range []string{"/v1/stats", "/healthz", "/openapi.json", "/metrics"} {
		call("GET", path, "", nil)
	}
}

func countRows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
