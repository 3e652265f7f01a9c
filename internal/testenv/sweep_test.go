package testenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	child := exec.Command(exe, "-test.run=^TestSweepDeadChild$", "-test.v", "-test.timeout=10m")
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

	// While the child lives, nothing of it is touched.
	swept, err := testenv.SweepDead(ctx, testenv.Logger(t))
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	for _, d := range dirs {
		if slices.Contains(swept, d) {
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

	swept, err = testenv.SweepDead(ctx, testenv.Logger(t))
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	for _, d := range dirs {
		if !slices.Contains(swept, d) || exists(d) {
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
	if ok, _ := testenv.DockerAvailable(); ok {
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
