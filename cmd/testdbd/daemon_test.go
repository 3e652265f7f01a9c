package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/internal/testenv"
)

var binary string // the testdbd binary built for these tests

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tdb-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "testdbd")
	if out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	testenv.RemovePristine()
	os.Exit(code)
}

// proc is a daemon process started by a test.
type proc struct {
	cmd      *exec.Cmd
	httpAddr string
	grpcAddr string
	exited   chan struct{}

	mu  sync.Mutex
	log []string // its log, a JSON object a line
}

// logLines returns what the daemon has logged so far.
func (p *proc) logLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// startDaemon runs `testdbd serve` with free ports and waits until it logs
// the addresses it bound. The daemon is killed at the end of the test if it
// still runs.
func startDaemon(t *testing.T, stateDir string, args ...string) *proc {
	t.Helper()
	return startBinary(t, binary, stateDir, args...)
}

// startBinary is startDaemon with another testdbd binary.
func startBinary(t *testing.T, binary, stateDir string, args ...string) *proc {
	t.Helper()
	args = append([]string{"serve", "--state-dir", stateDir, "--http-addr", "127.0.0.1:0",
		"--grpc-addr", "127.0.0.1:0", "--log-format", "json", "--migrations-root", repoRoot}, args...)
	cmd := exec.Command(binary, args...)
	// A test process that is killed (or ended by -timeout, which runs no
	// cleanup) takes its daemons with it; the next test process's
	// testenv.SweepDead removes what they leave.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if testing.Verbose() {
				t.Log(line)
			}
			p.mu.Lock()
			p.log = append(p.log, line)
			p.mu.Unlock()
			var entry struct {
				Msg  string `json:"msg"`
				GRPC string `json:"grpc"`
				HTTP string `json:"http"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" {
				p.httpAddr, p.grpcAddr = entry.HTTP, entry.GRPC
				close(ready)
			}
		}
	}()
	// Wait closes the pipe: read it to its end (the daemon's exit) first.
	go func() { <-read; _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		// A daemon killed with -9 leaves its tmpfs mounts for the next daemon
		// on the state directory to remove; be that next daemon.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if sweeper, err := native.New(ctx, native.Config{StateDir: stateDir, Logger: testenv.Logger(t)}); err == nil {
			_ = sweeper.Close(ctx)
		}
	})
	select {
	case <-ready:
	case <-p.exited:
		t.Fatalf("daemon exited during start-up")
	case <-time.After(2 * time.Minute):
		t.Fatal("daemon did not start serving within 2 minutes")
	}
	return p
}

func (p *proc) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	if code := p.call(t, "GET", path, "", v); code != 200 {
		t.Fatalf("GET %s: %d", path, code)
	}
}

type instanceJSON struct {
	ID             string `json:"id"`
	PID            int    `json:"pid"`
	Datadir        string `json:"datadir"`
	DatadirOnTmpfs bool   `json:"datadir_on_tmpfs"`
	State          string `json:"state"`
	Settings       []struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	} `json:"settings"`
}

func (p *proc) instances(t *testing.T) []instanceJSON {
	var list struct {
		Instances []instanceJSON `json:"instances"`
	}
	p.getJSON(t, "/v1/instances", &list)
	return list.Instances
}

// leftovers lists what remains of a state directory's servers: processes
// whose command line names it, mounts under it or under its servers' run
// base (native.RunBase: their tmpfs mounts), instance directories.
func leftovers(t *testing.T, stateDir string) []string {
	t.Helper()
	var found []string
	runBase, err := native.RunBase(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), stateDir+"/instances") {
			stat, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
			if !strings.Contains(string(stat), ") Z ") {
				found = append(found, "process "+f)
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, " "+stateDir+"/") || strings.Contains(line, " "+runBase+"/") {
			found = append(found, "mount "+line)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(stateDir, "instances"))
	for _, e := range entries {
		found = append(found, "instance dir "+e.Name())
	}
	return found
}

func waitNoLeftovers(t *testing.T, stateDir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := leftovers(t, stateDir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDaemonServesAndStopsCleanly(t *testing.T) {
	state := testenv.StateDir(t)
	d := startDaemon(t, state, "--warm", "1")
	var health struct{ Status string }
	d.getJSON(t, "/healthz", &health)
	if health.Status != "SERVING" {
		t.Errorf("healthz: %+v", health)
	}
	insts := d.instances(t)
	if len(insts) != 1 {
		t.Fatalf("%d instances after --warm 1", len(insts))
	}
	if !insts[0].DatadirOnTmpfs || insts[0].State != "running" || len(insts[0].Settings) == 0 {
		t.Errorf("instance: %+v", insts[0])
	}
	if len(leftovers(t, state)) == 0 {
		t.Fatal("the running server is not visible to the leftover check")
	}

	d.terminate(t, 30*time.Second)
	waitNoLeftovers(t, state)
}

func TestDaemonKilledIsCleanedUpOnRestart(t *testing.T) {
	state := testenv.StateDir(t)
	d := startDaemon(t, state, "--warm", "2")
	old := d.instances(t)
	if len(old) != 2 {
		t.Fatalf("%d instances after --warm 2", len(old))
	}
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited

	d2 := startDaemon(t, state)
	for _, in := range old {
		if err := syscall.Kill(in.PID, 0); err == nil {
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(in.PID) + "/stat")
			if !strings.Contains(string(stat), ") Z ") {
				t.Errorf("server %s (pid %d) of the killed daemon still runs", in.ID, in.PID)
			}
		}
		if _, err := os.Stat(in.Datadir); !os.IsNotExist(err) {
			t.Errorf("datadir %s of the killed daemon still exists", in.Datadir)
		}
	}
	if left := leftovers(t, state); len(left) != 0 {
		t.Errorf("after restart: %v", left)
	}
	if n := len(d2.instances(t)); n != 0 {
		t.Errorf("restarted daemon lists %d instances, want 0", n)
	}
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	<-d2.exited
	waitNoLeftovers(t, state)
}

func TestFlagsFromEnvironment(t *testing.T) {
	t.Setenv("TESTDBD_MAX_INSTANCES", "3")
	t.Setenv("TESTDBD_WARM", "5")
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), []string{"--warm", "1"}); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxInstances != 3 || cfg.Warm != 1 {
		t.Errorf("max-instances=%d warm=%d, want 3 from the environment and 1 from the flag", cfg.MaxInstances, cfg.Warm)
	}
	t.Setenv("TESTDBD_MEMORY_BUDGET", "lots")
	if err := parseFlags(serveFlags(&cfg), nil); err == nil || !strings.Contains(err.Error(), "TESTDBD_MEMORY_BUDGET") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "512M": 512 << 20, "4G": 4 << 30, "4GiB": 4 << 30, "1.5G": 3 << 29, "64k": 64 << 10} {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1G", "12Q"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	ctx := context.Background()
	_, err := openDaemon(ctx, serveConfig{Warm: 3, MaxInstances: 2}, testenv.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "--max-instances") {
		t.Errorf("warm > max: %v", err)
	}
	_, err = openDaemon(ctx, serveConfig{MaxInstances: 1, Provider: "podman", Strategy: "snapshot", StateDir: testenv.StateDir(t),
		HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0"}, testenv.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "auto, native, docker or kubernetes") {
		t.Errorf("bad provider: %v", err)
	}
	_, err = openDaemon(ctx, serveConfig{MaxInstances: 1, Strategy: "vacuum", HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0"}, testenv.Logger(t))
	if err == nil || !strings.Contains(err.Error(), "use truncate, snapshot or rollback") {
		t.Errorf("bad strategy: %v", err)
	}
}

// terminate sends the daemon SIGTERM and waits up to within for it to exit,
// which it must do with status 0.
func (p *proc) terminate(t *testing.T, within time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("daemon did not exit within %v of SIGTERM", within)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
}
