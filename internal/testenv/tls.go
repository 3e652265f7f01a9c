package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/internal/random"
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
	for path, mode := range map[string]os.FileMode{serverimage.TLSDir: 0o700, vars["ssl_cert"]: 0o600, vars["ssl_key"]: 0o600,
		serverimage.TLSDir + "/ca.pem": 0o600} {
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
		if name, _, _ := strings.Cut(kv, "="); name == serverimage.TLSKeyEnv || name == serverimage.TLSCertEnv || name == serverimage.TLSCAEnv {
			t.Errorf("the server's environment holds %s", name)
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

// CheckTLSRenewal starts a server of p in a fleet that renews every
// certificate with less than 31 days left (so, every one) every 200 ms,
// and checks that the server soon presents another certificate, verified
// with the server's CA for the host leases carry, without a restart.
func CheckTLSRenewal(t *testing.T, p testdbd.Provider) {
	t.Helper()
	s := startMember(t, p, instance.FleetConfig{MaxInstances: 1, Logger: Logger(t),
		TLSRenewBefore: 31 * 24 * time.Hour, TLSCheckEvery: 200 * time.Millisecond}, p.Name())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	user := "tls_" + random.Hex(4)
	if _, err := s.DB.ExecContext(ctx, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'x'", user)); err != nil {
		t.Fatal(err)
	}
	first, err := servedSerial(s, user)
	if err != nil {
		t.Fatalf("TLS to the server: %v", err)
	}
	started := s.Info(ctx).StartedAt
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		serial, err := servedSerial(s, user)
		if err != nil {
			t.Fatalf("TLS to the server while its certificate is renewed: %v", err)
		}
		if serial != first {
			t.Logf("the server presents a renewed certificate (serial %s, was %s)", serial, first)
			if info := s.Info(ctx); !info.StartedAt.Equal(started) || info.State != testdbd.InstanceRunning {
				t.Errorf("the server was restarted or stopped for its new certificate: started %v, was %v; %s", info.StartedAt, started, info.State)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still presents its first certificate 30 s after renewals began")
		}
	}
}

// servedSerial connects to s's client address as user with TLS, verified
// with its CA for the host leases carry, and returns the serial number of
// the certificate it presented.
func servedSerial(s *instance.Member, user string) (string, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.TLSCA())
	host, port := s.ClientAddr()
	var serial string
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.Timeout = "tcp", net.JoinHostPort(host, strconv.Itoa(port)), user, "x", 10*time.Second
	cfg.TLS = &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			serial = cs.PeerCertificates[0].SerialNumber.String()
			return nil
		}}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return "", err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if err := db.Ping(); err != nil {
		return "", err
	}
	return serial, nil
}
