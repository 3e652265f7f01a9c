package dashboard_test

// What the browser tests need of a daemon: the testdbd binary, built once,
// run as `testdbd serve` on free ports with a state directory of its own,
// stopped (and its servers, mounts and datadirs checked gone) at the end of
// the test, even when it fails.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	binary    string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// testdbdBinary builds cmd/testdbd once for the package's tests.
func testdbdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "tdb-dash-bin-"); buildErr != nil {
			return
		}
		binary = filepath.Join(binDir, "testdbd")
		out, err := exec.Command("go", "build", "-o", binary, "../cmd/testdbd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ../cmd/testdbd: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// daemon is a `testdbd serve` process started by a test.
type daemon struct {
	t        *testing.T
	cmd      *exec.Cmd
	addr     string // host:port of the REST API
	token    string
	stateDir string
	exited   chan struct{}

	mu  sync.Mutex
	log []string // every line the daemon wrote to stderr
}

// startDaemon runs `testdbd serve --provider native` with free ports and
// waits until it logs the address it bound.
func startDaemon(t *testing.T, token string) *daemon {
	t.Helper()
	if _, err := exec.LookPath("mariadbd"); err != nil {
		if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
			t.Fatal("no mariadbd: run scripts/install-deps.sh server (make test does)")
		}
	}
	// Short: a server's Unix socket path must stay under 108 bytes.
	state, err := os.MkdirTemp("", "tdb")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0", "--state-dir", state,
		"--provider", "native", "--log-format", "json", "--max-instances", "1", "--migrations-root", ".."}
	if token != "" {
		args = append(args, "--token", token)
	}
	d := &daemon{t: t, token: token, stateDir: state, exited: make(chan struct{})}
	d.cmd = exec.Command(testdbdBinary(t), args...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.log = append(d.log, line)
			d.mu.Unlock()
			var entry struct{ Msg, HTTP string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" {
				ready <- entry.HTTP
			}
		}
	}()
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(d.stop)
	select {
	case d.addr = <-ready:
	case <-d.exited:
		t.Fatalf("the daemon exited during start-up:\n%s", d.logText())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the daemon did not start serving within 2 minutes:\n%s", d.logText())
	}
	return d
}

func (d *daemon) logText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.log, "\n")
}

// stop ends the daemon with SIGTERM (SIGKILL after a minute, then a second
// daemon on the same state directory removes what the first left) and
// checks that no server process, mount or datadir of it remains.
func (d *daemon) stop() {
	t := d.t
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		t.Errorf("the daemon did not stop within a minute of SIGTERM; killing it")
		_ = d.cmd.Process.Kill()
		<-d.exited
		sweep(t, d.stateDir)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("daemon log:\n%s", d.logText())
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := leftovers(d.stateDir)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the daemon left behind: %v", left)
			sweep(t, d.stateDir)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	os.RemoveAll(d.stateDir)
}

// sweep starts and stops a daemon on stateDir: at start it removes what a
// killed daemon left there (processes, mounts, datadirs).
func sweep(t *testing.T, stateDir string) {
	cmd := exec.Command(binary, "serve", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--state-dir", stateDir, "--provider", "native", "--log-format", "json")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Errorf("sweep %s: %v", stateDir, err)
		return
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"msg":"serving"`) {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_, _ = io.Copy(io.Discard, stderr)
	_ = cmd.Wait()
}

// leftovers lists the processes whose command line names stateDir and the
// mounts under it.
func leftovers(stateDir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(stateDir+"/")) {
			stat, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
			if !bytes.Contains(stat, []byte(") Z ")) {
				found = append(found, "process "+filepath.Dir(f))
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, " "+stateDir+"/") {
			found = append(found, "mount "+line)
		}
	}
	return found
}

// call sends a request to the daemon's REST API (with the daemon's token,
// unless withToken is false), decodes a JSON answer into out when it is not
// nil, and returns the HTTP status.
func (d *daemon) call(method, path, body string, out any) int {
	d.t.Helper()
	return d.request(method, path, body, true, out)
}

func (d *daemon) request(method, path, body string, withToken bool, out any) int {
	d.t.Helper()
	req, err := http.NewRequest(method, "http://"+d.addr+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if withToken && d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			d.t.Fatalf("%s %s: %d: %v: %s", method, path, resp.StatusCode, err, b)
		}
	}
	return resp.StatusCode
}

// mustCall is call that fails the test unless the status is want.
func (d *daemon) mustCall(want int, method, path, body string, out any) {
	d.t.Helper()
	var raw json.RawMessage
	if code := d.call(method, path, body, &raw); code != want {
		d.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			d.t.Fatal(err)
		}
	}
}

type leaseJSON struct {
	ID       string `json:"id"`
	Template string `json:"template"`
	Worker   string `json:"worker"`
	Database string `json:"database"`
	DSN      string `json:"dsn"`
	State    string `json:"state"`
}

func (d *daemon) acquire(template, strategy, worker string) leaseJSON {
	d.t.Helper()
	var l leaseJSON
	d.mustCall(200, "POST", "/v1/leases",
		fmt.Sprintf(`{"template":%q,"strategy":%q,"worker":%q,"ttl_seconds":900}`, template, strategy, worker), &l)
	return l
}

func (d *daemon) activeLeases() map[string]leaseJSON {
	d.t.Helper()
	var list struct{ Leases []leaseJSON }
	d.mustCall(200, "GET", "/v1/leases", "", &list)
	out := map[string]leaseJSON{}
	for _, l := range list.Leases {
		out[l.ID] = l
	}
	return out
}
