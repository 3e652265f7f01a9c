package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/random"
)

// CheckConfinement checks a server's hardening the way a lease meets it.
// An account with every privilege on one database only (what a lease gets)
// and the admin account (every privilege, FILE included) both try to put
// table files outside the datadir with CREATE TABLE ... DATA DIRECTORY
// (InnoDB and MyISAM) and to write files with SELECT ... INTO OUTFILE; the
// test fails if any file appears outside the datadir or an export
// succeeds. fsRoot is where the server's file system is seen from this
// process: "" for a native server, /proc/<pid>/root for a container's.
func CheckConfinement(t *testing.T, admin *sql.DB, host string, port int, fsRoot string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := "conf_" + random.Hex(4)
	pw := random.Hex(12)
	if _, err := admin.ExecContext(ctx, fmt.Sprintf("CREATE DATABASE %s; CREATE USER '%s'@'%%' IDENTIFIED BY '%s'; GRANT ALL PRIVILEGES ON %s.* TO '%s'@'%%'",
		name, name, pw, name, name)); err != nil {
		t.Fatalf("create a lease-like account: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'; DROP DATABASE IF EXISTS %s", name, name))
	})
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", net.JoinHostPort(host, strconv.Itoa(port)), name, pw, name
	cfg.Timeout = 10 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lease := sql.OpenDB(connector)
	defer lease.Close()

	// A directory outside the datadir that anyone may write to: only the
	// server's refusal keeps files out of it.
	outside := "/tmp/tdb-outside-" + random.Hex(4)
	seen := fsRoot + outside
	if err := os.MkdirAll(seen, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(seen, 0o777)
	defer os.RemoveAll(seen)
	empty := func(after string) {
		t.Helper()
		var files []string
		_ = filepath.WalkDir(seen, func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != seen {
				files = append(files, strings.TrimPrefix(p, fsRoot))
			}
			return nil
		})
		if len(files) > 0 {
			t.Errorf("after %s, the server wrote outside its datadir: %v", after, files)
		}
	}

	for _, c := range []struct {
		who string
		db  *sql.DB
	}{{"the lease account", lease}, {"the admin", admin}} {
		tables := []string{
			fmt.Sprintf("CREATE TABLE %s.t_%s (a INT) DATA DIRECTORY = '%s'", name, random.Hex(3), outside),
			fmt.Sprintf("CREATE TABLE %s.m_%s (a INT) ENGINE = MyISAM DATA DIRECTORY = '%s' INDEX DIRECTORY = '%s'", name, random.Hex(3), outside, outside),
		}
		for _, q := range tables {
			_, err := c.db.ExecContext(ctx, q)
			t.Logf("%s: %s: %v", c.who, q, errOrOK(err))
			empty(c.who + "'s " + q)
		}
		out := fmt.Sprintf("SELECT 1 INTO OUTFILE '%s/out-%s.txt'", outside, random.Hex(3))
		if _, err := c.db.ExecContext(ctx, out); err == nil {
			t.Errorf("%s: %s succeeded", c.who, out)
		} else {
			t.Logf("%s: %s: %v", c.who, out, err)
		}
		empty(c.who + "'s INTO OUTFILE")
	}
	// Where the admin may export (MariaDB: secure_file_priv is an empty
	// directory of the server's own), the server cannot write either.
	var priv sql.NullString
	if err := admin.QueryRowContext(ctx, "SELECT @@GLOBAL.secure_file_priv").Scan(&priv); err != nil {
		t.Fatal(err)
	}
	if !priv.Valid || priv.String == "NULL" {
		return // MySQL's NULL: no import or export anywhere
	}
	if priv.String == "" {
		t.Fatalf("secure_file_priv is empty: file import and export are unrestricted")
	}
	q := fmt.Sprintf("SELECT 1 INTO OUTFILE '%s'", filepath.Join(priv.String, "x-"+random.Hex(3)))
	if _, err := admin.ExecContext(ctx, q); err == nil {
		t.Errorf("the admin: %s succeeded", q)
	}
	entries, err := os.ReadDir(fsRoot + priv.String)
	if err != nil || len(entries) != 0 {
		t.Errorf("secure_file_priv %s: %d entries, %v; want an empty directory", priv.String, len(entries), err)
	}
}

func errOrOK(err error) string {
	if err == nil {
		return "ok (nothing may appear outside the datadir)"
	}
	return err.Error()
}

// ProcessUIDs returns the real, effective, saved and file-system user ids of
// a process, from /proc/<pid>/status.
func ProcessUIDs(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			var ids []int
			for _, f := range strings.Fields(rest) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return nil, err
				}
				ids = append(ids, n)
			}
			return ids, nil
		}
	}
	return nil, fmt.Errorf("no Uid line in /proc/%d/status", pid)
}

// CheckContainerHardening checks a server running in a container on this
// host: its process runs as the image's mysql user, not root; the
// hardening settings read back as asked; its TLS key is the mysql user's
// alone (checkContainerTLS); and CheckConfinement holds,
// looking at the container's files through /proc/<pid>/root. It skips
// without root (the container's processes and files are seen through
// /proc) or when the server's process is not visible from here.
func CheckContainerHardening(t *testing.T, s *instance.Member) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("looking into the container's processes and files through /proc needs root")
	}
	info := s.Info(context.Background())
	if info.PID == 0 {
		t.Skip("the server's process is not visible from this host")
	}
	uids, err := ProcessUIDs(info.PID)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("/proc", strconv.Itoa(info.PID), "root")
	want := passwdUID(t, filepath.Join(root, "etc", "passwd"), "mysql")
	for _, u := range uids {
		if u == 0 || u != want {
			t.Errorf("server process %d runs with uids %v, want all %d (mysql)", info.PID, uids, want)
			break
		}
	}
	for _, st := range info.Settings {
		if st.Name == "have_symlink" || st.Name == "secure_file_priv" {
			t.Logf("%s: asked %s, runs with %s", st.Name, st.Requested, st.Actual)
			if !st.OK {
				t.Errorf("%s: asked %s, runs with %s", st.Name, st.Requested, st.Actual)
			}
		}
	}
	checkContainerTLS(t, s, info.PID, want, root)
	host, port := s.ClientAddr()
	CheckConfinement(t, s.DB, host, port, root)
}

// passwdUID returns user's uid from a passwd file.
func passwdUID(t *testing.T, path, user string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) > 2 && fields[0] == user {
			n, err := strconv.Atoi(fields[2])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no user %s in %s", user, path)
	return -1
}
