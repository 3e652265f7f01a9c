package tlsca

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// verify checks the server certificate against the authority for name.
func verify(t *testing.T, s *Server, caPEM []byte, name string, at time.Time) error {
	t.Helper()
	pair, err := tls.X509KeyPair(s.CertPEM, s.KeyPEM)
	if err != nil {
		t.Fatalf("the certificate and key do not make a pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA PEM holds no certificate")
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

func TestIssueCoversHosts(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(filepath.Join(dir, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Issue("db.example", "10.1.2.3", "", "127.0.0.1", "[fd00::1]")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"localhost", "127.0.0.1", "::1", "db.example", "10.1.2.3", "fd00::1"}
	if !slices.Equal(s.Hosts, want) {
		t.Errorf("hosts %q, want %q", s.Hosts, want)
	}
	for _, name := range want {
		if err := verify(t, s, a.CertPEM(), name, time.Now()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := verify(t, s, a.CertPEM(), "other.example", time.Now()); err == nil {
		t.Error("the certificate verifies for a name it does not cover")
	}
	if err := verify(t, s, a.CertPEM(), "localhost", time.Now().Add(ServerValidity+time.Hour)); err == nil {
		t.Error("the certificate verifies after its validity")
	}
	// Another authority's certificate does not verify it.
	b, err := Open(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(t, s, b.CertPEM(), "localhost", time.Now()); err == nil {
		t.Error("the certificate verifies against another authority")
	}
	fi, err := os.Stat(filepath.Join(dir, "tls", FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the authority's file: %v, mode %v; want 0600", err, fi.Mode())
	}
}

func TestOpenKeepsAndRenews(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	clock := func() time.Time { return now }
	a, err := open(dir, clock)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(dir, clock)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.CertPEM()) != string(b.CertPEM()) {
		t.Fatal("a second Open made a new authority instead of loading the kept one")
	}
	s, err := b.Issue()
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(t, s, a.CertPEM(), "127.0.0.1", now); err != nil {
		t.Fatalf("a certificate of the loaded authority: %v", err)
	}

	// Near its end, the authority is replaced, on Open and on Issue.
	late := now.Add(CAValidity - RenewBefore + time.Hour)
	c, err := open(dir, func() time.Time { return late })
	if err != nil {
		t.Fatal(err)
	}
	if string(c.CertPEM()) == string(a.CertPEM()) {
		t.Fatal("Open kept an authority with less than RenewBefore left")
	}
	now = late
	s, err = a.Issue()
	if err != nil {
		t.Fatal(err)
	}
	if string(s.CAPEM) == string(b.CertPEM()) {
		t.Fatal("Issue signed with an authority with less than RenewBefore left")
	}
	if err := verify(t, s, s.CAPEM, "localhost", late.Add(ServerValidity-time.Hour)); err != nil {
		t.Fatalf("the renewed authority's certificate near its end: %v", err)
	}

	// A damaged file is replaced.
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := open(dir, clock); err != nil {
		t.Fatalf("Open over a damaged file: %v", err)
	}
}

func TestWriteFiles(t *testing.T) {
	a, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Issue()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := s.WriteFiles(dir, -1, -1); err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	for _, p := range []string{certPath, keyPath, filepath.Join(dir, CAFile)} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", p, err, fi.Mode())
		}
	}
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		t.Fatal(err)
	}
	// A link in the way (planted by the server user, say) is replaced,
	// not followed: its target is left alone.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, keyPath); err != nil {
		t.Fatal(err)
	}
	renewed, err := a.Issue()
	if err != nil {
		t.Fatal(err)
	}
	if err := renewed.WriteFiles(dir, -1, -1); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was overwritten: %q", b)
	}
	if b, _ := os.ReadFile(keyPath); string(b) != string(renewed.KeyPEM) {
		t.Error("the renewed key is not in place")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d files in the directory, want the certificate, the key and the CA", len(entries))
	}
}
