package native_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"net"
	"os"
	"os/user"
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
	"github.com/testdbd/testdbd/instance/tlsca"
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

// TestServerTLS: every server offers TLS (have_ssl YES) with a certificate
// of its own, signed by the authority kept in the state directory, that
// covers the loopback names and the hosts asked for; its key and
// certificate are the server user's alone (mode 0600, in a 0700 directory
// of its area), and the authority's file is the daemon's alone. A second
// provider on the state directory signs with the same authority.
func TestServerTLS(t *testing.T) {
	cfg := testenv.NativeConfig(t)
	p := testenv.NativeWith(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := p.Start(ctx, testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{}), TLSHosts: []string{"db.example"}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := instance.OpenAdmin(inst.Admin(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vars := map[string]string{}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('have_ssl', 'ssl_cert', 'ssl_key')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		vars[k] = v
	}
	rows.Close()
	if vars["have_ssl"] != "YES" {
		t.Fatalf("have_ssl = %q, want YES (variables %v)", vars["have_ssl"], vars)
	}
	area := filepath.Dir(inst.Info(ctx).Datadir)
	if filepath.Dir(vars["ssl_key"]) != filepath.Join(area, "tls") || filepath.Dir(vars["ssl_cert"]) != filepath.Join(area, "tls") {
		t.Errorf("ssl_cert %q, ssl_key %q: want files in %s/tls", vars["ssl_cert"], vars["ssl_key"], area)
	}
	uid := os.Geteuid()
	if uid == 0 {
		u, err := user.Lookup(p.ServerUser())
		if err != nil {
			t.Fatal(err)
		}
		uid, _ = strconv.Atoi(u.Uid)
	}
	for path, mode := range map[string]os.FileMode{filepath.Join(area, "tls"): 0o700, vars["ssl_cert"]: 0o600, vars["ssl_key"]: 0o600,
		filepath.Join(area, "tls", tlsca.CAFile): 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || fi.Mode().Perm() != mode {
			t.Errorf("%s: owner %d, mode %v; want %d (the server user), %v", path, st.Uid, fi.Mode().Perm(), uid, mode)
		}
	}
	caFile := filepath.Join(cfg.StateDir, "tls", tlsca.FileName)
	if fi, err := os.Stat(caFile); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Errorf("the authority's file %s: %v; want the daemon's, mode 0600", caFile, err)
	}

	// The handshake: the certificate verifies with the lease's CA for each
	// name it covers, and not for another.
	if _, err := db.ExecContext(ctx, "CREATE USER 'tls_probe'@'%'"); err != nil {
		t.Fatal(err)
	}
	host, port := inst.ClientAddr()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	for name, ok := range map[string]bool{"127.0.0.1": true, "localhost": true, "db.example": true, "other.example": false} {
		err := handshake(t, addr, "tls_probe", inst.TLSCA(), name)
		var wrongName x509.HostnameError
		if ok && err != nil || !ok && !errors.As(err, &wrongName) {
			t.Errorf("TLS as %s: %v (want success %v, else x509.HostnameError)", name, err, ok)
		}
	}

	// The authority is kept: another provider of the state directory
	// signs with it.
	ca := inst.TLSCA()
	db.Close()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	again := testenv.NativeWith(t, cfg)
	inst2, err := again.Start(ctx, testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	if string(inst2.TLSCA()) != string(ca) {
		t.Error("a second provider on the state directory made another authority")
	}
}

// handshake connects to addr as user (no password) with TLS, trusting
// caPEM alone and checking name, and says what failed.
func handshake(t *testing.T, addr, user string, caPEM []byte, name string) error {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Timeout = "tcp", addr, user, 10*time.Second
	cfg.TLS = &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var k, cipher string
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&k, &cipher); err != nil {
		return err
	}
	if cipher == "" {
		return errors.New("connected without TLS")
	}
	return nil
}

// TestTLSRenewal: a certificate near its end is replaced on the running
// server (testenv.CheckTLSRenewal).
func TestTLSRenewal(t *testing.T) {
	testenv.CheckTLSRenewal(t, testenv.Native(t))
}
