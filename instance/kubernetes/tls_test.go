package kubernetes_test

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/testdbd/testdbd/instance/kubernetes"
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/instance/tlsca"
)

// TestPodTLS: a server with a Service gets a certificate for the
// Service's names, signed by the provider's authority, and its pod hands
// it (with its key) to the start script in the environment; its leases
// carry the authority's certificate. A server without a Service gets no
// certificate and its leases no CA (its IP is known only once it runs).
// No cluster needed: the pod's spec is checked.
func TestPodTLS(t *testing.T) {
	ca, err := tlsca.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, pod, err := kubernetes.SpecWithTLS(ca, true, "ci", "testdbd-k-1")
	if err != nil {
		t.Fatal(err)
	}
	if string(s.TLSCA()) != string(ca.CertPEM()) {
		t.Fatal("a server with a Service does not carry the authority's certificate")
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if !strings.Contains(env[serverimage.TLSKeyEnv], "PRIVATE KEY") {
		t.Fatalf("the pod's environment has no TLS key: %v", pod.Spec.Containers[0].Env)
	}
	blk, _ := pem.Decode([]byte(env[serverimage.TLSCertEnv]))
	if blk == nil {
		t.Fatal("the pod's environment has no TLS certificate")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	for _, name := range []string{"testdbd-k-1.ci.svc", "testdbd-k-1.ci.svc.cluster.local", "testdbd-k-1.ci", "testdbd-k-1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("the certificate for %s: %v", name, err)
		}
	}

	s, pod, err = kubernetes.SpecWithTLS(ca, false, "ci", "testdbd-k-2")
	if err != nil {
		t.Fatal(err)
	}
	if s.TLSCA() != nil {
		t.Error("a server without a Service carries a CA certificate")
	}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == serverimage.TLSCertEnv || e.Name == serverimage.TLSKeyEnv {
			t.Errorf("a server without a Service gets %s", e.Name)
		}
	}
}
