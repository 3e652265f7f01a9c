package testenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestSweepDead kills a test process while its native server and Docker
// container run, the way go test's -timeout ends one (no cleanup runs),
// and checks that SweepDead leaves everything alone while the process
// lives and afterwards removes the server's mount and datadir, the
// container and the process's directories.
func TestSweepDead(t *testing.T) {
	if os.Getenv("TESTDBD_SWEEP_CHILD") != "" {
		t.Skip("the child process runs TestSweepDeadChild only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The child is in the parent's tier: in the quick one it starts no
	// container.
	child := exec.Command(exe, "-test.run=^TestSweepDeadChild$", "-test.v", "-test.timeout=10m", fmt.Sprintf("-test.short=%t", testing.Short()))
	child.Env = append(os.Environ(), "TESTDBD_SWEEP_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = child.Stdout
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	var datadir, owner, container, log string
	var serverPID int
	lines := bufio.NewScanner(out)
read:
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		log += lines.Text() + "\n"
		switch {
		case len(f) == 3 && f[0] == "native":
			datadir = f[1]
			serverPID, _ = strconv.Atoi(f[2])
		case len(f) == 3 && f[0] == "docker":
			owner, container = f[1], f[2]
		case len(f) == 1 && f[0] == "ready":
			break read
		}
	}
	if datadir == "" {
		t.Fatalf("the child started no server:\n%s", log)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("tdb%d.*", child.Process.Pid)))
	if len(dirs) == 0 {
		t.Fatalf("no temporary directory of the child (tdb%d.*)", child.Process.Pid)
	}

	// While the child lives, nothing of it is touched. (Errors are logged
	// only: they may concern other processes' leftovers; what matters is
	// checked below.)
	if _, err := testenv.SweepDead(ctx, testenv.Logger(t)); err != nil {
		t.Logf("sweep: %v", err)
	}
	for _, d := range dirs {
		if !exists(d) {
			t.Errorf("swept %s of a live test process", d)
		}
	}
	if !instanceMounted(datadir) && !exists(datadir) {
		t.Fatalf("the live child's datadir %s is gone", datadir)
	}

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if !instanceMounted(datadir) && !exists(datadir) {
		t.Fatalf("nothing was left to sweep: the test proves nothing (datadir %s)", datadir)
	}
	if container != "" && len(testenv.Containers(ctx, owner)) == 0 {
		t.Fatalf("the killed child's container %s is gone before the sweep: the test proves nothing", container)
	}

	// Another test process starting now may sweep them first: what is
	// checked is that they are gone.
	swept, err := testenv.SweepDead(ctx, testenv.Logger(t))
	if err != nil {
		t.Logf("sweep: %v", err)
	}
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("%s of the dead child not swept (swept: %v)", d, swept)
		}
	}
	if instanceMounted(datadir) || exists(datadir) {
		t.Errorf("the dead child's datadir %s (or its mount) is still there", datadir)
	}
	if !gone(serverPID) {
		t.Errorf("the dead child's server (pid %d) still runs", serverPID)
	}
	if container != "" {
		if left := testenv.Containers(ctx, owner); len(left) > 0 {
			t.Errorf("the dead child's containers still exist: %v", left)
		}
	}
}

// TestSweepDeadChild is TestSweepDead's child: it starts a native server
// and, where Docker runs, a container, says where they are and waits to be
// killed.
func TestSweepDeadChild(t *testing.T) {
	if os.Getenv("TESTDBD_SWEEP_CHILD") == "" {
		t.Skip("run by TestSweepDead")
	}
	ctx := context.Background()
	s := testenv.ServerOf(t, testenv.Kind("native")[0])
	fmt.Printf("native %s %d\n", s.Datadir, s.Info(ctx).PID)
	// Where the image is missing (or in the quick tier) the child starts
	// no container: a skip here would end the child before it is killed.
	if ok, _ := testenv.ImageUsable(testenv.DockerImages[0].Image); ok && !testing.Short() {
		p := testenv.Docker(t, testenv.DockerImages[0].Image)
		f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
		c, err := f.Start(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("docker %s %s\n", p.Owner(), c.Info(ctx).ContainerID)
	}
	fmt.Println("ready")
	time.Sleep(5 * time.Minute)
	t.Error("not killed")
}

// instanceMounted reports whether a mount of testdbd's own holds path.
func instanceMounted(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.Contains(f[4], "testdbd") && (path == f[4] || strings.HasPrefix(path, f[4]+"/")) {
			return true
		}
	}
	return false
}

// gone waits up to half a minute for a process to end (a zombie has).
func gone(pid int) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestSweepDeadLeavesOthersAlone: in a temporary directory anyone can
// write to, only directories as a test process makes them are swept: not
// a file, a link, a directory under another name, one that is not private,
// or one of another user, whatever their names and records say.
func TestSweepDeadLeavesOthersAlone(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	dead, _ := strconv.Atoi(strings.TrimSpace(string(b))) // no process has it
	dead++
	name := func(kind string) string { dead++; return filepath.Join(tmp, fmt.Sprintf("tdb%d.%s", dead, kind)) }
	victim := filepath.Join(tmp, "victim")
	if err := os.MkdirAll(filepath.Join(victim, "keep"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A state directory whose record says to remove the victim.
	planted := func(dir string, mode os.FileMode) string {
		rec := filepath.Join(dir, "instances", "n-1")
		if err := os.MkdirAll(rec, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rec, "record.json"), []byte(`{"id":"n-1","root":"`+victim+`","outside":true}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	keep := []string{planted(name("s1"), 0o755), name("s2"), name("cache"), name("s3")}
	if err := os.WriteFile(keep[1], nil, 0o600); err != nil { // a file
		t.Fatal(err)
	}
	if err := os.Mkdir(keep[2], 0o700); err != nil { // another name
		t.Fatal(err)
	}
	if err := os.Symlink(planted(filepath.Join(tmp, "target"), 0o700), keep[3]); err != nil { // a link
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		other := planted(name("s4"), 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, other)
	}
	swept := []string{name("s5"), name("p6")}
	for _, p := range swept {
		if err := os.MkdirAll(filepath.Join(p, "instances"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	got, err := testenv.SweepDead(context.Background(), testenv.Logger(t))
	if err != nil {
		t.Errorf("sweep: %v", err)
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if !exists(filepath.Join(victim, "keep")) {
		t.Error("a planted record's path was removed")
	}
	for _, p := range swept {
		if exists(p) {
			t.Errorf("%s, a dead test process's, was not swept (swept %v)", p, got)
		}
	}
}
