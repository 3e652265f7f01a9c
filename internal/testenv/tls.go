package testenv

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/serverimage"
)

// checkContainerTLS checks a container's TLS, looking through root (the
// server process's /proc/<pid>/root): the server runs with TLS (have_ssl
// YES where the engine still has it) on the certificate and key its provider issued, written by the
// start script into serverimage.TLSDir, a directory of the mysql user's
// (uid mysqlUID) alone with files of mode 0600, and the variables that
// carried them are not in the server's environment. A Kubernetes pod
// without a Service has no certificate of testdbd's (its IP is known too
// late) and is skipped.
func checkContainerTLS(t *testing.T, s *instance.Member, pid, mysqlUID int, root string) {
	t.Helper()
	if s.TLSCA() == nil {
		if s.Info(context.Background()).Provider == "kubernetes" {
			t.Log("a pod without a Service has no TLS certificate of testdbd's")
			return
		}
		t.Fatal("the server has no TLS certificate: its leases would carry no CA certificate")
	}
	vars, err := tlsVariables(s.DB)
	if err != nil {
		t.Fatal(err)
	}
	// MySQL 8.4 and later have no have_ssl (TestLeaseTLS connects).
	if have, ok := vars["have_ssl"]; ok && have != "YES" || filepath.Dir(vars["ssl_key"]) != serverimage.TLSDir || filepath.Dir(vars["ssl_cert"]) != serverimage.TLSDir {
		t.Fatalf("the server's TLS variables %v: want have_ssl YES and the files in %s", vars, serverimage.TLSDir)
	}
	for path, mode := range map[string]os.FileMode{serverimage.TLSDir: 0o700, vars["ssl_cert"]: 0o600, vars["ssl_key"]: 0o600} {
		fi, err := os.Lstat(root + path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != mysqlUID || fi.Mode().Perm() != mode {
			t.Errorf("%s: owner %d, mode %v; want %d (mysql), %v", path, st.Uid, fi.Mode().Perm(), mysqlUID, mode)
		}
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if strings.HasPrefix(kv, serverimage.TLSKeyEnv+"=") || strings.HasPrefix(kv, serverimage.TLSCertEnv+"=") {
			t.Errorf("the server's environment holds %s", strings.SplitN(kv, "=", 2)[0])
		}
	}
}

// tlsVariables reads the server's have_ssl, ssl_cert and ssl_key.
func tlsVariables(db *sql.DB) (map[string]string, error) {
	rows, err := db.Query("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('have_ssl', 'ssl_cert', 'ssl_key')")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vars := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		vars[k] = v
	}
	return vars, rows.Err()
}
