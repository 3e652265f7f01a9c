package native_test

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestServerRunsUnprivileged: under a root daemon the server runs as the
// server user, which owns its datadir, while the state directory stays the
// daemon's alone.
func TestServerRunsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the daemon is not root: servers run as its own user")
	}
	cfg := testenv.NativeConfig(t)
	p := testenv.NativeWith(t, cfg)
	if p.ServerUser() != native.DefaultServerUser {
		t.Errorf("server user %q, want %s", p.ServerUser(), native.DefaultServerUser)
	}
	u, err := user.Lookup(p.ServerUser())
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	inst := start(t, p)
	info := inst.Info(context.Background())
	uids, err := testenv.ProcessUIDs(info.PID)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range uids {
		if id != uid {
			t.Errorf("server process %d runs with uids %v, want all %d (%s)", info.PID, uids, uid, p.ServerUser())
			break
		}
	}
	_ = filepath.WalkDir(info.Datadir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
			t.Errorf("%s is owned by uid %d, not the server user", path, st.Uid)
			return filepath.SkipAll
		}
		return nil
	})
	for _, dir := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "instances"), filepath.Join(cfg.StateDir, "instances", inst.ID())} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: owner %d, mode %v; want root's alone", dir, st.Uid, fi.Mode())
		}
	}
	if info.Socket == "" || strings.HasPrefix(info.Socket, cfg.StateDir) {
		t.Errorf("socket %q is in the private state directory", info.Socket)
	}
}

// TestHardening: an account with every privilege on one database (a
// lease's) and the admin cannot put files outside the datadir (CREATE TABLE
// ... DATA DIRECTORY) or export rows (SELECT ... INTO OUTFILE), and the
// settings that say so read back as asked.
func TestHardening(t *testing.T) {
	p := testenv.Native(t)
	f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	s, err := f.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range s.Settings {
		if st.Name == "have_symlink" || st.Name == "secure_file_priv" {
			t.Logf("%s: asked %s, runs with %s", st.Name, st.Requested, st.Actual)
			if !st.OK {
				t.Errorf("%s: asked %s, runs with %s", st.Name, st.Requested, st.Actual)
			}
		}
	}
	host, port := s.ClientAddr()
	testenv.CheckConfinement(t, s.DB, host, port, "")
}

// TestDeathReport: a server that aborts or is killed says why, from its
// error log, and the whole log is kept under the state directory after its
// datadir is removed; so does a server that cannot start.
func TestDeathReport(t *testing.T) {
	cfg := testenv.NativeConfig(t)
	p := testenv.NativeWith(t, cfg)
	for _, c := range []struct {
		sig  syscall.Signal
		says string // in the error
	}{
		{syscall.SIGABRT, "got signal 6"},
		{syscall.SIGKILL, "killed by signal 9 (SIGKILL)"},
	} {
		inst := start(t, p)
		info := inst.Info(context.Background())
		if err := syscall.Kill(info.PID, c.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-inst.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: death not noticed within 30 s", c.sig)
		}
		err := inst.Err()
		t.Logf("%v: %v", c.sig, err)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: Err = %v, want it to say %q", c.sig, err, c.says)
		}
		kept := keptLog(t, err, cfg.StateDir)
		if err := inst.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		gone(t, info)
		b, rerr := os.ReadFile(kept)
		if rerr != nil || !strings.Contains(string(b), "ready for connections") {
			t.Errorf("%v: kept log %s lacks the server's start (%v)", c.sig, kept, rerr)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append(instance.Args(p.Engine(), instance.Config{}), "--no-such-option=1")
	_, err := p.Start(ctx, testdbd.StartOptions{Args: args})
	if err == nil {
		t.Fatal("a server with an unknown option started")
	}
	t.Logf("start failure: %v", err)
	if !strings.Contains(err.Error(), "[ERROR]") || !strings.Contains(err.Error(), "no-such-option") {
		t.Errorf("start failure does not say why: %v", err)
	}
	keptLog(t, err, cfg.StateDir)
}

// keptLog returns the kept log an error names, checking it is under the
// state directory's crashes/.
func keptLog(t *testing.T, err error, stateDir string) string {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	i := strings.Index(msg, "kept at ")
	if i < 0 {
		t.Fatalf("the error names no kept log: %v", err)
	}
	path := strings.SplitN(msg[i+len("kept at "):], ";", 2)[0]
	if filepath.Dir(path) != filepath.Join(stateDir, "crashes") {
		t.Errorf("kept log %s not under %s/crashes", path, stateDir)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("kept log: %v", err)
	}
	return path
}
