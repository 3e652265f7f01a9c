package client

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TLSConfig returns a TLS configuration for the lease's server: it trusts
// the lease's CACert alone (the authority the daemon signs its servers'
// certificates with) and checks that the server's certificate names the
// lease's host. Verification stays on. Use it as mysql.Config.TLS, or let
// TLSDSN register it. It fails for a lease without CACert: a daemon
// before TLS on its servers, or a server that offers no certificate
// clients can verify (a Kubernetes pod without a Service).
func (l *Lease) TLSConfig() (*tls.Config, error) {
	if l.CACert == "" {
		return nil, errors.New("lease " + l.ID + " carries no CA certificate (ca_cert): its daemon predates TLS on its servers, " +
			"or the server offers no certificate clients can verify (a Kubernetes pod without a Service); connect without TLS")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(l.CACert)) {
		return nil, fmt.Errorf("lease %s: its ca_cert holds no PEM certificate", l.ID)
	}
	return &tls.Config{RootCAs: roots, ServerName: l.Host, MinVersion: tls.VersionTLS12}, nil
}

// TLSDSN returns the lease's DSN asking for TLS (tls=<name>), with the
// lease's TLSConfig registered under that name with
// mysql.RegisterTLSConfig: a name of the CA certificate and host, so that
// the leases of one server share it. Any code that opens a DSN with
// go-sql-driver/mysql then connects with TLS and verifies the server.
func (l *Lease) TLSDSN() (string, error) {
	tc, err := l.TLSConfig()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(l.CACert + "\x00" + l.Host))
	name := "testdbd-" + hex.EncodeToString(sum[:8])
	if err := mysql.RegisterTLSConfig(name, tc); err != nil {
		return "", err
	}
	cfg, err := mysql.ParseDSN(l.DSN)
	if err != nil {
		return "", fmt.Errorf("the lease's DSN: %w", err)
	}
	cfg.TLSConfig = name
	return cfg.FormatDSN(), nil
}

// driverConfig is opts.Config, preceded with TestOptions.TLS by the
// lease's TLS configuration; an error fails tb.
func (o TestOptions) driverConfig(tb testing.TB, l *Lease) func(*mysql.Config) {
	tb.Helper()
	if !o.TLS {
		return o.Config
	}
	tc, err := l.TLSConfig()
	if err != nil {
		tb.Fatalf("testdbd: TestOptions.TLS: %v", err)
	}
	return func(c *mysql.Config) {
		c.TLS = tc
		if o.Config != nil {
			o.Config(c)
		}
	}
}
