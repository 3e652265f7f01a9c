//go:build linux

package native_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/internal/testenv"
)

func TestMain(m *testing.M) {
	if len(testenv.Kind("native")) == 0 {
		fmt.Println("TESTDBD_ENGINES selects no native cell: the native provider's tests do not run")
		os.Exit(0)
	}
	code := m.Run()
	testenv.RemovePristine()
	os.Exit(code)
}

func start(t *testing.T, p *native.Provider) testdbd.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := p.Start(ctx, testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{})})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return inst
}

func ping(t *testing.T, inst testdbd.Instance) error {
	t.Helper()
	db, err := instance.OpenAdmin(inst.Admin(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// gone asserts that nothing of a stopped instance remains: no process, no
// datadir, no mount.
func gone(t *testing.T, info testdbd.InstanceInfo) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(info.PID, 0)
		if err != nil {
			break
		}
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/stat"); strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server process %d still runs", info.PID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(info.Datadir); !os.IsNotExist(err) {
		t.Errorf("datadir %s still exists (err=%v)", info.Datadir, err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if root := filepath.Dir(info.Datadir); strings.Contains(string(mounts), " "+root+" ") {
		t.Errorf("tmpfs %s is still mounted", root)
	}
}

func TestStartStop(t *testing.T) {
	p := testenv.Native(t)
	if p.Engine().Flavor != testdbd.MariaDB && p.Engine().Flavor != testdbd.MySQL {
		t.Fatalf("engine flavor %q", p.Engine().Flavor)
	}
	inst := start(t, p)
	info := inst.Info(context.Background())
	if !info.DatadirOnTmpfs {
		t.Errorf("datadir %s is not on tmpfs", info.Datadir)
	}
	if ok, err := native.IsTmpfs(info.Datadir); err != nil || !ok {
		t.Errorf("statfs says datadir %s tmpfs=%v err=%v", info.Datadir, ok, err)
	}
	if info.Port == 0 || info.PID == 0 || info.MemoryBytes == 0 || info.StartupTime == 0 {
		t.Errorf("incomplete info: %+v", info)
	}
	if info.State != testdbd.InstanceRunning {
		t.Errorf("state %q, want running", info.State)
	}
	if err := ping(t, inst); err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	// Clients reach the server over loopback TCP; the root account must
	// not be reachable that way (it authenticates by Unix socket only).
	host, port := inst.ClientAddr()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "tcp", host+":"+strconv.Itoa(port), "root"
	db, _ := sql.Open("mysql", cfg.FormatDSN())
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Errorf("root logged in over TCP without a password")
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	gone(t, info)
	select {
	case <-inst.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if inst.Err() != nil {
		t.Errorf("Err after a deliberate stop: %v", inst.Err())
	}
}

func TestSettingsReadBack(t *testing.T) {
	p := testenv.Native(t)
	inst := start(t, p)
	db, err := instance.OpenAdmin(inst.Admin(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := instance.ReadSettings(context.Background(), db, p.Engine(), instance.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) < 15 {
		t.Fatalf("only %d settings read back", len(st))
	}
	for _, s := range st {
		if !s.OK {
			t.Errorf("setting %s: asked %s, server runs with %s", s.Name, s.Requested, s.Actual)
		}
	}
	// A setting the server cannot honour is reported, not hidden.
	other := instance.Config{BufferPoolBytes: 64 << 20}
	st, err = instance.ReadSettings(context.Background(), db, p.Engine(), other)
	if err != nil {
		t.Fatal(err)
	}
	if bad := testdbd.Mismatched(st); len(bad) != 1 || !strings.Contains(bad[0], "innodb_buffer_pool_size") {
		t.Errorf("mismatch report %v, want innodb_buffer_pool_size only", bad)
	}
}

func TestRefusesDiskDatadir(t *testing.T) {
	disk, err := os.MkdirTemp("/var/tmp", "tdb-disk-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(disk)
	// As root the server runs as another user, which must reach it.
	if err := os.Chmod(disk, 0o711); err != nil {
		t.Fatal(err)
	}
	if ok, _ := native.IsTmpfs(disk); ok {
		t.Skip("/var/tmp is tmpfs on this machine; no disk to refuse")
	}
	cfg := testenv.NativeConfig(t)
	cfg.DatadirRoot = disk
	p := testenv.NativeWith(t, cfg)
	_, err = p.Start(context.Background(), testdbd.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "not on tmpfs") || !strings.Contains(err.Error(), "--allow-disk") {
		t.Fatalf("start on disk: err = %v, want a refusal naming --allow-disk", err)
	}
	if entries, _ := os.ReadDir(disk); len(entries) != 0 {
		t.Errorf("refused start left %d entries in %s", len(entries), disk)
	}

	cfg = testenv.NativeConfig(t)
	cfg.DatadirRoot, cfg.AllowDisk = disk, true
	p = testenv.NativeWith(t, cfg)
	inst := start(t, p)
	info := inst.Info(context.Background())
	if info.DatadirOnTmpfs {
		t.Errorf("datadir %s reported on tmpfs", info.Datadir)
	}
	if !strings.HasPrefix(info.Datadir, disk) {
		t.Errorf("datadir %s not under %s", info.Datadir, disk)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	gone(t, info)
}

// TestSweepsOrphans abandons a provider without stopping its server, the way
// a daemon killed with -9 would (minus the parent-death signal), and checks
// that the next provider on the same state directory removes it all.
func TestSweepsOrphans(t *testing.T) {
	cfg := testenv.NativeConfig(t)
	ctx := context.Background()
	old, err := native.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inst := start(t, old)
	info := inst.Info(ctx)
	old.Abandon() // release the state directory as a dead process would

	if err := syscall.Kill(info.PID, 0); err != nil {
		t.Fatalf("server should still run before the sweep: %v", err)
	}
	testenv.NativeWith(t, cfg)
	gone(t, info)
	if entries, _ := os.ReadDir(filepath.Join(cfg.StateDir, "instances")); len(entries) != 0 {
		t.Errorf("instance records left: %d", len(entries))
	}
}

func TestStateDirIsExclusive(t *testing.T) {
	cfg := testenv.NativeConfig(t)
	testenv.NativeWith(t, cfg)
	_, err := native.New(context.Background(), cfg)
	if err == nil {
		t.Fatal("a second provider took a state directory in use")
	}
	if testdbd.ErrorCode(err) != testdbd.EConflict || !strings.Contains(err.Error(), "--state-dir") {
		t.Errorf("err = %v, want a conflict naming --state-dir", err)
	}
}

func TestStateDirsAreIndependent(t *testing.T) {
	a := testenv.Native(t)
	ia := start(t, a)
	b := testenv.Native(t)
	ib := start(t, b)
	if err := ib.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A third provider sweeping its own fresh state directory leaves A alone.
	testenv.Native(t)
	if err := ping(t, ia); err != nil {
		t.Fatalf("provider A's server was disturbed: %v", err)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	cfg := testenv.NativeConfig(t)
	p, err := native.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	infos := []testdbd.InstanceInfo{start(t, p).Info(context.Background()), start(t, p).Info(context.Background())}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		gone(t, info)
	}
	if entries, _ := os.ReadDir(filepath.Join(cfg.StateDir, "instances")); len(entries) != 0 {
		t.Errorf("instance directories left: %d", len(entries))
	}
}

// TestDeathIsNoticed: a server killed with SIGKILL is noticed, and its
// error says so (the signal, from the process status) without quoting
// log lines that are not about its death (here, the log lines a failed
// login leaves, whose text a client chooses).
func TestDeathIsNoticed(t *testing.T) {
	p := testenv.Native(t)
	inst := start(t, p)
	info := inst.Info(context.Background())
	host, port := inst.ClientAddr()
	db, err := sql.Open("mysql", "got signal 6 [ERROR] Aborting:x@tcp("+net.JoinHostPort(host, strconv.Itoa(port))+")/")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err == nil {
		t.Error("a login as an unknown user worked")
	}
	db.Close()
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inst.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("death not noticed within 5 s")
	}
	if err := inst.Err(); err == nil || !strings.Contains(err.Error(), "ended unexpectedly: it was killed by signal 9 (SIGKILL)") ||
		strings.Contains(err.Error(), "says") || strings.Contains(err.Error(), "Aborted connection") || strings.Contains(err.Error(), "Version") {
		t.Errorf("Err = %v, want the signal and no log lines", err)
	}
	if got := inst.Info(context.Background()).State; got != testdbd.InstanceFailed {
		t.Errorf("state %q, want failed", got)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	gone(t, info)
}
