// Package tlsca is the certificate authority that signs the TLS
// certificates of the database servers testdbd provisions.
//
// One authority per state directory: its certificate and private key live
// together in <dir>/ca.pem (mode 0600, written atomically), created the
// first time and replaced when less than RenewBefore of its validity is
// left. Every server gets a certificate and key of its own, made when it
// starts (an ECDSA P-256 key takes well under a millisecond), with the
// names and addresses its clients use; leases carry the authority's
// certificate, so that a client can verify the server. The authority's key
// never leaves the daemon's machine; a server's key goes where the server
// runs (its tmpfs area, or its container's).
//
// It imports the standard library only.
package tlsca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The validities. The authority is replaced when less than RenewBefore of
// its year is left, so that it outlives every server certificate it signs.
const (
	CAValidity     = 365 * 24 * time.Hour
	ServerValidity = 30 * 24 * time.Hour
	RenewBefore    = ServerValidity + 7*24*time.Hour
	// backdate is how far before now certificates start: clocks of the
	// client's host may run behind.
	backdate = time.Hour
)

// FileName is the authority's file in its directory: the certificate, then
// the private key, both PEM.
const FileName = "ca.pem"

// Authority signs server certificates. It is safe for concurrent use.
type Authority struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// Open loads the authority kept in dir, creating dir (mode 0700) and the
// authority when there is none, or replacing it when it is unreadable or
// has less than RenewBefore left.
func Open(dir string) (*Authority, error) {
	return open(dir, time.Now)
}

func open(dir string, now func() time.Time) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the TLS authority's directory: %w", err)
	}
	a := &Authority{path: filepath.Join(dir, FileName), now: now}
	if err := a.load(); err == nil && a.fresh() {
		return a, nil
	}
	if err := a.renew(); err != nil {
		return nil, err
	}
	return a, nil
}

// load reads the authority's file; it fails when the file is missing or
// malformed, or its key does not match its certificate.
func (a *Authority) load() error {
	b, err := os.ReadFile(a.path)
	if err != nil {
		return err
	}
	var cert *x509.Certificate
	var key *ecdsa.PrivateKey
	var certPEM []byte
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			if cert, err = x509.ParseCertificate(blk.Bytes); err != nil {
				return err
			}
			certPEM = pem.EncodeToMemory(blk)
		case "EC PRIVATE KEY":
			if key, err = x509.ParseECPrivateKey(blk.Bytes); err != nil {
				return err
			}
		}
	}
	if cert == nil || key == nil || !key.PublicKey.Equal(cert.PublicKey) || !cert.IsCA {
		return errors.New("not a certificate authority with its key")
	}
	a.cert, a.key, a.certPEM = cert, key, certPEM
	return nil
}

// fresh reports whether the authority has RenewBefore left.
func (a *Authority) fresh() bool {
	return a.cert != nil && a.now().Add(RenewBefore).Before(a.cert.NotAfter)
}

// renew makes a new authority and writes it (atomically, mode 0600).
func (a *Authority) renew() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := a.now()
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"testdbd"}, CommonName: "testdbd database servers CA " + host + " " + now.UTC().Format("2006-01-02")},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("create the TLS authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	file := append(append([]byte{}, certPEM...), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if err := writeAtomic(a.path, file); err != nil {
		return fmt.Errorf("write the TLS authority: %w", err)
	}
	a.cert, a.key, a.certPEM = cert, key, certPEM
	return nil
}

// writeAtomic writes b to path through a temporary file (mode 0600) and a
// rename, so that a reader sees the old content or the new, whole.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".ca-*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// CertPEM returns the authority's certificate, PEM.
func (a *Authority) CertPEM() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return bytes.Clone(a.certPEM)
}

// Server is a server's certificate and key, PEM, with the certificate of
// the authority that signed it.
type Server struct {
	CertPEM  []byte
	KeyPEM   []byte
	CAPEM    []byte
	NotAfter time.Time
	// Hosts are the names and addresses the certificate covers.
	Hosts []string
}

// LoopbackHosts are the names and addresses every server certificate
// covers.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// Issue makes a key and a certificate valid for ServerValidity that cover
// LoopbackHosts and hosts (DNS names or IP addresses; empty ones and
// duplicates are left out). An authority with less than RenewBefore left is
// replaced first.
func (a *Authority) Issue(hosts ...string) (*Server, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.fresh() {
		if err := a.renew(); err != nil {
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := a.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"testdbd"}, CommonName: "testdbd database server"},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(ServerValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	var all []string
	for _, h := range append(slices.Clone(LoopbackHosts), hosts...) {
		h = strings.TrimSuffix(strings.Trim(strings.TrimSpace(h), "[]"), ".")
		if h == "" || slices.Contains(all, h) {
			continue
		}
		all = append(all, h)
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("sign a server certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Server{
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		CAPEM:    bytes.Clone(a.certPEM),
		NotAfter: tmpl.NotAfter,
		Hosts:    all,
	}, nil
}

// Server file names, as WriteFiles writes them. The server is given the
// authority's certificate too (ssl_ca): MySQL reloads its certificate
// (ALTER INSTANCE RELOAD TLS) only when it can verify it.
const (
	CertFile = "server-cert.pem"
	KeyFile  = "server-key.pem"
	CAFile   = "ca.pem"
)

// WriteFiles writes the certificate, key and the authority's certificate
// into dir (which must exist) as CertFile, KeyFile and CAFile, mode 0600,
// owned by uid and gid when they are not -1 (the user the server runs
// as), replacing what is there (a server's renewed certificate). Each is
// written to a new file first, then renamed into place: nothing in dir is
// followed or opened.
func (s *Server) WriteFiles(dir string, uid, gid int) error {
	for name, b := range map[string][]byte{CertFile: s.CertPEM, KeyFile: s.KeyPEM, CAFile: s.CAPEM} {
		if err := writeOwned(filepath.Join(dir, name), b, uid, gid); err != nil {
			return fmt.Errorf("write the server's TLS files: %w", err)
		}
	}
	return nil
}

// writeOwned writes b to a new file beside path (mode 0600, given to
// uid:gid first), then renames it to path.
func writeOwned(path string, b []byte, uid, gid int) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	err = f.Chmod(0o600)
	if err == nil && (uid != -1 || gid != -1) {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		_, err = f.Write(b)
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n.Add(n, big.NewInt(1))
}
