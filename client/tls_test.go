package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
)

// sslCipher returns the session's Ssl_cipher: "" on a plain connection.
func sslCipher(t *testing.T, db *sql.DB) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var name, value string
	err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'Ssl_cipher'").Scan(&name, &value)
	return value, err
}

// otherCA is a CA certificate that signed nothing of the daemon's.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not testdbd"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestLeaseTLS: with go-sql-driver/mysql configured from the lease's CA
// certificate alone (RootCAs, ServerName the lease's host, verification
// on) a client connects to the leased database with TLS, through TLSDSN,
// a tls.Config of its own registered with RegisterTLSConfig, or
// TestOptions.TLS; with another CA it is refused; the lease's own DSN
// stays a plain connection.
func TestLeaseTLS(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	ensureApp(t, c, "tls")
	l, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "tls", Worker: "tls-worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = c.ReleaseLease(ctx, l.ID) }()
	if !strings.HasPrefix(l.CACert, "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("the lease carries no CA certificate: %q", l.CACert)
	}

	// TLSDSN: the DSN any go-sql-driver/mysql user opens.
	dsn, err := l.TLSDSN()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dsn, "tls=testdbd-") {
		t.Errorf("TLSDSN %q does not ask for the registered configuration", dsn)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := sslCipher(t, db); err != nil || got == "" {
		t.Fatalf("TLSDSN: Ssl_cipher %q, %v", got, err)
	} else {
		t.Logf("TLS to %s:%d with %s", l.Host, l.Port, got)
	}

	// What a user writes by hand: RootCAs from ca_cert, ServerName, tls=name.
	connect := func(caPEM []byte) (string, error) {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		if err := mysql.RegisterTLSConfig("tls-test", &tls.Config{RootCAs: roots, ServerName: l.Host}); err != nil {
			t.Fatal(err)
		}
		cfg, err := mysql.ParseDSN(l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLSConfig = "tls-test"
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return sslCipher(t, db)
	}
	if got, err := connect([]byte(l.CACert)); err != nil || got == "" {
		t.Errorf("tls=name with the lease's CA: Ssl_cipher %q, %v", got, err)
	}
	_, err = connect(otherCA(t))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("with another CA: %v; want x509.UnknownAuthorityError", err)
	}

	plain, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got, err := sslCipher(t, plain); err != nil || got != "" {
		t.Errorf("the lease's DSN: Ssl_cipher %q, %v; want a plain connection", got, err)
	}

	tc, err := l.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	viaConfig, err := client.OpenDB(l, func(cfg *mysql.Config) { cfg.TLS = tc })
	if err != nil {
		t.Fatal(err)
	}
	defer viaConfig.Close()
	if got, err := sslCipher(t, viaConfig); err != nil || got == "" {
		t.Errorf("OpenDB with TLSConfig: Ssl_cipher %q, %v", got, err)
	}

	none := client.Lease{ID: "x", DSN: l.DSN}
	if _, err := none.TLSDSN(); err == nil || !strings.Contains(err.Error(), "connect without TLS") {
		t.Errorf("a lease without a CA certificate: %v", err)
	}
}

// TestDBWithTLS: TestOptions.TLS connects TestDB's, TestTx's and
// TestTxDSN's connections with TLS.
func TestDBWithTLS(t *testing.T) {
	opts := helperOptions("tls-helpers")
	opts.TLS = true
	txDSN, err := sql.Open("testdbd", client.TestTxDSN(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	defer txDSN.Close()
	for name, db := range map[string]interface {
		QueryRow(string, ...any) *sql.Row
	}{"TestDB": client.TestDB(t, opts), "TestTx": client.TestTx(t, opts), "TestTxDSN": txDSN} {
		var k, cipher string
		if err := db.QueryRow("SHOW STATUS LIKE 'Ssl_cipher'").Scan(&k, &cipher); err != nil || cipher == "" {
			t.Errorf("%s with TLS: Ssl_cipher %q, %v", name, cipher, err)
		}
	}
}
