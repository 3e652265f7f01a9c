package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/testenv"
)

// freePortRange finds n consecutive ports nothing listens on, and holds
// the first one with a listener of the test's (so that a server must skip
// it); the listener closes with the test.
func freePortRange(t *testing.T, n int) (first, last int) {
	return portRangeFor(t, n, true)
}

// portRangeFor finds n consecutive free ports; holdFirst keeps the first
// one listened on until the test ends.
func portRangeFor(t *testing.T, n int, holdFirst bool) (first, last int) {
	t.Helper()
	for range 200 {
		first = 20000 + rand.IntN(30000)
		ok := true
		var held []net.Listener
		for p := first; p < first+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", p))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		keep := 0
		if ok && holdFirst {
			keep = 1
		}
		for _, l := range held[keep:] {
			l.Close()
		}
		if ok {
			if keep == 1 {
				t.Cleanup(func() { held[0].Close() })
			}
			return first, first + n - 1
		}
	}
	t.Fatal("no free port range")
	return 0, 0
}

// TestServerPortsAndAdvertiseHost: the servers take ports of the range
// (skipping one another program holds), and leases carry the advertised
// host, through which the database answers.
func TestServerPortsAndAdvertiseHost(t *testing.T) {
	first, last := freePortRange(t, 4)
	d := startDaemon(t, testenv.StateDir(t), "--warm", "2", "--max-instances", "2",
		"--server-ports", fmt.Sprintf("%d-%d", first, last), "--advertise-host", "localhost")
	c, err := client.New(d.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	insts, err := c.ListInstances(ctx)
	if err != nil || len(insts) != 2 {
		t.Fatalf("instances: %v, %v", insts, err)
	}
	ports := map[int32]bool{}
	for _, in := range insts {
		ports[in.Port] = true
		if in.Host != "localhost" {
			t.Errorf("instance host %q, want the advertised localhost", in.Host)
		}
	}
	if !ports[int32(first+1)] || !ports[int32(first+2)] {
		t.Errorf("ports %v: want %d and %d (%d is held by another program)", ports, first+1, first+2, first)
	}
	files, err := client.ReadMigrations("../../examples/migrations")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnsureTemplate(ctx, client.EnsureTemplateRequest{Name: "app", Migrations: files}); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Host != "localhost" || !strings.Contains(l.DSN, "@tcp(localhost:") || !ports[l.Port] {
		t.Errorf("lease %s:%d, DSN %s: want the advertised host and a port of the range", l.Host, l.Port, l.DSN)
	}
	db, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatalf("connect through the advertised host: %v", err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n != 3 {
		t.Errorf("users: %d, %v", n, err)
	}
	db.Close()
	// TLS through the advertised host: its name is in the certificate.
	dsn, err := l.TLSDSN()
	if err != nil {
		t.Fatal(err)
	}
	tlsDB, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	var k, cipher string
	if err := tlsDB.QueryRow("SHOW STATUS LIKE 'Ssl_cipher'").Scan(&k, &cipher); err != nil || cipher == "" {
		t.Errorf("TLS through the advertised host: Ssl_cipher %q, %v", cipher, err)
	}
	tlsDB.Close()
	if _, err := c.ReleaseLease(ctx, l.ID); err != nil {
		t.Error(err)
	}
}

// startOpts is a provider that records what it is asked to start with.
type startOpts struct {
	testdbd.Provider
	got testdbd.StartOptions
}

func (p *startOpts) Name() string { return "native" }

func (p *startOpts) Start(_ context.Context, opts testdbd.StartOptions) (testdbd.Instance, error) {
	p.got = opts
	return nil, errors.New("not started")
}

// TestAdvertiseHostIsInTheCertificate: the servers of a daemon with
// --advertise-host listen on every interface and their TLS certificates
// name the advertised host, which leases carry.
func TestAdvertiseHostIsInTheCertificate(t *testing.T) {
	rec := &startOpts{}
	p, err := reachProvider(rec, reachConfig{AdvertiseHost: "db.ci.example"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Start(context.Background(), testdbd.StartOptions{})
	if rec.got.BindAddress != "0.0.0.0" || !slices.Contains(rec.got.TLSHosts, "db.ci.example") {
		t.Errorf("start options %+v: want every interface and the advertised host in TLSHosts", rec.got)
	}
}

func TestReachFlags(t *testing.T) {
	var r portRange
	for in, want := range map[string]portRange{"33060-33099": {33060, 33099}, "4000": {4000, 4000}, " 1 - 2 ": {1, 2}} {
		if err := r.Set(in); err != nil || r != want {
			t.Errorf("%q: %v, %v", in, r, err)
		}
	}
	for _, bad := range []string{"x", "5-4", "0-10", "1-70000", "a-b"} {
		if err := r.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var stdout, stderr strings.Builder
	code := run([]string{"serve", "--state-dir", t.TempDir(), "--server-ports", "40000-40001", "--max-instances", "3", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "widen the range or lower --max-instances") {
		t.Errorf("a range smaller than --max-instances: %d %s", code, stderr.String())
	}
}
