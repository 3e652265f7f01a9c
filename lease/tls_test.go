package lease_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
)

// tlsDSN registers a TLS configuration that trusts caPEM alone, checks
// the server's name (serverName) and the certificate's validity, and
// returns the lease's DSN asking for it.
func tlsDSN(t *testing.T, l lease.LeaseInfo, caPEM []byte, serverName string) string {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the CA certificate holds no PEM certificate: %q", caPEM)
	}
	name := "lease-tls-" + random.Hex(4)
	if err := mysql.RegisterTLSConfig(name, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mysql.DeregisterTLSConfig(name) })
	cfg, err := mysql.ParseDSN(l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = name
	cfg.Timeout = 10 * time.Second
	return cfg.FormatDSN()
}

// cipher connects with dsn and returns the session's Ssl_cipher ("" on a
// plain connection).
func cipher(dsn string) (string, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var name, value string
	err = db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &value)
	return value, err
}

// TestLeaseTLS: a lease carries the certificate of the authority that
// signed its server's, and a client that trusts it alone, with the
// server's name checked (the lease's host), connects with TLS; a client
// trusting another authority, or expecting another name, is refused by its
// own verification; a plain connection works as before.
func TestLeaseTLS(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			e.ensure(t, "app", 1)
			l := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			if l.CACert == "" && p.Kind == "kubernetes" {
				// A pod without a Service is reached at its IP, known only
				// once it runs, after its certificate would have had to
				// be made (docs/security.md, "TLS to the servers").
				t.Skip("the cell's pods have no Service, so no TLS certificate of testdbd's: their leases carry no CA")
			}
			if !strings.HasPrefix(l.CACert, "-----BEGIN CERTIFICATE-----") {
				t.Fatalf("the lease carries no CA certificate: %q", l.CACert)
			}
			got, err := cipher(tlsDSN(t, l, []byte(l.CACert), l.Host))
			if err != nil || got == "" {
				t.Fatalf("a TLS connection verified with the lease's CA: cipher %q, %v", got, err)
			}
			t.Logf("TLS to %s:%d: %s", l.Host, l.Port, got)
			for _, name := range []string{"localhost", "127.0.0.1"} {
				if l.Host == "127.0.0.1" {
					if got, err := cipher(tlsDSN(t, l, []byte(l.CACert), name)); err != nil || got == "" {
						t.Errorf("TLS as %s: cipher %q, %v", name, got, err)
					}
				}
			}

			plain, err := cipher(l.DSN)
			if err != nil || plain != "" {
				t.Errorf("the lease's own DSN: cipher %q, %v; want a plain connection", plain, err)
			}

			other, err := tlsca.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = cipher(tlsDSN(t, l, other.CertPEM(), l.Host))
			var unknown x509.UnknownAuthorityError
			if !errors.As(err, &unknown) {
				t.Errorf("a client trusting another authority: %v; want x509.UnknownAuthorityError", err)
			}
			_, err = cipher(tlsDSN(t, l, []byte(l.CACert), "db.elsewhere.example"))
			var wrongName x509.HostnameError
			if !errors.As(err, &wrongName) {
				t.Errorf("a client expecting another server name: %v; want x509.HostnameError", err)
			}
		})
	}
}
