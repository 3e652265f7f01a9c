package client_test

import (
	"context"
	"database/sql"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd/client"
)

// ensureApp builds (or finds) the example template under name. The seed
// (a statement that does nothing) makes its content, and so its hash, its
// own: templates of equal content under two names share their databases on
// the server, and this test deletes its template.
func ensureApp(t *testing.T, c *client.Client, name string) *client.Template {
	t.Helper()
	files, err := client.ReadMigrations(migrationsDir)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := c.EnsureTemplate(context.Background(), client.EnsureTemplateRequest{Name: name, Migrations: files, SeedSQL: "DO 1"})
	if err != nil {
		t.Fatalf("EnsureTemplate: %v", err)
	}
	return tpl
}

func count(t *testing.T, db interface {
	QueryRow(string, ...any) *sql.Row
}, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestLeaseLifecycle walks every call of a lease's life against the daemon.
func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	tpl := ensureApp(t, c, "lifecycle")
	if tpl.State != client.TemplateReady || tpl.Tables != 6 || tpl.Version != 3 || tpl.Views != 2 || len(tpl.Migrations) != 3 {
		t.Errorf("template: %+v", tpl)
	}
	if got, err := c.GetTemplate(ctx, "lifecycle"); err != nil || got.Hash != tpl.Hash {
		t.Errorf("GetTemplate: %+v, %v", got, err)
	}

	l, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "lifecycle", Strategy: client.StrategyTruncate,
		TTLSeconds: 120, Worker: "lifecycle-worker", WaitTimeoutMs: 5000})
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	if l.Strategy != client.StrategyTruncate || l.Worker != "lifecycle-worker" || l.TTLSeconds != 120 || l.State != "active" ||
		l.DSN == "" || !strings.HasPrefix(l.URL, "mysql://") || time.Until(l.ExpiresAt) < time.Minute {
		t.Errorf("lease: %+v", l)
	}
	db, err := client.OpenDB(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO users (email, name) VALUES ('new@example.com', 'New')"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 4 {
		t.Fatalf("%d users after the insert", n)
	}

	rep, err := c.ResetLease(ctx, l.ID, client.StrategyUnspecified)
	if err != nil {
		t.Fatalf("ResetLease: %v", err)
	}
	if rep.LeaseID != l.ID || rep.Strategy != client.StrategyTruncate || !slices.Contains(rep.TablesReset, "users") || rep.TotalMs <= 0 {
		t.Errorf("report: %+v", rep)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM users"); n != 3 {
		t.Errorf("%d users after the reset, want the template's 3", n)
	}

	leases, err := c.ListLeases(ctx, "lifecycle")
	if err != nil || len(leases) != 1 || leases[0].ID != l.ID {
		t.Errorf("ListLeases: %+v, %v", leases, err)
	}
	renewed, err := c.RenewLease(ctx, l.ID, 5*time.Minute)
	if err != nil || renewed.TTLSeconds != 300 || !renewed.ExpiresAt.After(l.ExpiresAt) {
		t.Errorf("RenewLease: %+v, %v", renewed, err)
	}
	if got, err := c.GetLease(ctx, l.ID); err != nil || got.Resets != 1 {
		t.Errorf("GetLease: %+v, %v", got, err)
	}
	released, err := c.ReleaseLease(ctx, l.ID)
	if err != nil || released.State != "released" {
		t.Fatalf("ReleaseLease: %+v, %v", released, err)
	}
	if _, err := c.ReleaseLease(ctx, l.ID); err != nil {
		t.Errorf("releasing twice: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := db.Exec("SELECT 1"); err != nil {
			break // revoked: the daemon ends the sessions and drops the user in the background
		}
		if time.Now().After(deadline) {
			t.Fatal("the released lease's credentials still work after 10 s")
		}
	}
	_, err = c.ResetLease(ctx, l.ID, client.StrategyUnspecified)
	if code := client.ErrorCode(err); code != client.CodeFailedPrecondition || !strings.Contains(err.Error(), "released") {
		t.Errorf("reset after release: %v (%v)", err, code)
	}

	insts, err := c.ListInstances(ctx)
	if err != nil || len(insts) == 0 || !insts[0].DatadirOnTmpfs || len(insts[0].Settings) == 0 {
		t.Errorf("ListInstances: %+v, %v", insts, err)
	}
	stats, err := c.GetStats(ctx)
	if err != nil || stats.LeasesAcquired < 1 || stats.Templates < 1 || len(stats.Resets) != 3 {
		t.Errorf("GetStats: %+v, %v", stats, err)
	}
	tpls, err := c.ListTemplates(ctx)
	if err != nil || !slices.ContainsFunc(tpls, func(x client.Template) bool { return x.Name == "lifecycle" }) {
		t.Errorf("ListTemplates: %+v, %v", tpls, err)
	}
	// The daemon counts a released lease as held until its database has
	// been recycled in the background.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		del, err := c.DeleteTemplate(ctx, "lifecycle", false)
		if client.ErrorCode(err) == client.CodeFailedPrecondition && time.Now().Before(deadline) {
			continue
		}
		if err != nil || del.Name != "lifecycle" {
			t.Errorf("DeleteTemplate: %+v, %v", del, err)
		}
		break
	}
}

// TestDaemonErrors checks that the daemon's errors arrive as *Error with
// its code and message.
func TestDaemonErrors(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	for _, tc := range []struct {
		name   string
		call   func() error
		code   client.Code
		status int
		says   string
	}{
		{"unknown template", func() error { _, err := c.GetTemplate(ctx, "no-such-template"); return err },
			client.CodeNotFound, 404, "Client.EnsureTemplate, or give TestOptions.MigrationsDir"},
		{"lease of unknown template", func() error {
			_, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "no-such-template"})
			return err
		}, client.CodeNotFound, 404, "no template"},
		{"bad strategy", func() error {
			_, err := c.AcquireLease(ctx, client.AcquireLeaseRequest{Template: "x", Strategy: "STRATEGY_FAST"})
			return err
		}, client.CodeInvalidArgument, 400, "strategy"},
		{"unknown lease", func() error { _, err := c.ResetLease(ctx, "l-nope", client.StrategyUnspecified); return err },
			client.CodeNotFound, 404, "acquire one with Client.AcquireLease"},
		{"broken migration", func() error {
			_, err := c.EnsureTemplate(ctx, client.EnsureTemplateRequest{Name: "broken", Migrations: []client.MigrationFile{
				{Name: "00001_broken.sql", Content: "-- +goose Up\nCREATE TABLE t (id INT PRIMARY KEY;\n"}}})
			return err
		}, client.CodeFailedPrecondition, 400, "00001_broken.sql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *client.Error", err, err)
			}
			if e.Code != tc.code || e.Status != tc.status || !strings.Contains(e.Error(), tc.says) {
				t.Errorf("got code %v, HTTP %d, %q; want %v, %d, mentioning %q", e.Code, e.Status, e.Error(), tc.code, tc.status, tc.says)
			}
			if strings.Contains(e.Error(), "/v1/") {
				t.Errorf("Error() = %q names the REST API's way to fix it, not the Go client's", e.Error())
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close() // nothing listens there now
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetStats(context.Background())
	var u *client.UnreachableError
	if !errors.As(err, &u) || client.ErrorCode(err) != client.CodeUnavailable {
		t.Fatalf("got %T %v", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "connection refused") || !strings.Contains(msg, "testdbd serve") || strings.Contains(msg, "dial tcp") ||
		!strings.HasSuffix(msg, "or give its REST address (TESTDBD_ADDR for the test helpers, New's addr otherwise)") {
		t.Errorf("message %q: want the reason and what to do, where to give the address included, without Go's wrapping", msg)
	}
}

// TestGRPCAddress: the daemon's gRPC port, given as the REST address,
// is named for what it is, with the way to the REST one.
func TestGRPCAddress(t *testing.T) {
	c, err := client.New(daemonGRPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetStats(context.Background())
	want := daemonGRPCAddr + " answers gRPC, not REST: give the daemon's REST address instead (TESTDBD_ADDR for the test helpers, New's addr otherwise), by default 127.0.0.1:8080"
	var u *client.UnreachableError
	if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("GetStats at the gRPC address: %T %v\nwant %s", err, err, want)
	}
}

// TestNotTheDaemon covers answers that are not the daemon's JSON: a proxy's
// error page, a bearer token sent, a server that is something else.
func TestNotTheDaemon(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/v1/stats":
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		default:
			_, _ = w.Write([]byte("hello"))
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetStats(context.Background())
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization header %q", gotAuth)
	}
	if client.ErrorCode(err) != client.CodeUnavailable || !strings.Contains(err.Error(), "HTTP 502") || !strings.Contains(err.Error(), "bad gateway") {
		t.Errorf("proxy error: %v", err)
	}
	_, err = c.ListTemplates(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is "+srv.URL+" a testdbd daemon") {
		t.Errorf("non-JSON answer: %v", err)
	}
}

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "http://127.0.0.1:8080",
		"127.0.0.1:9000":         "http://127.0.0.1:9000",
		"http://db.test:8080":    "http://db.test:8080",
		"https://db.test":        "https://db.test",
		" http://[::1]:8080/ ":   "http://[::1]:8080",
		"localhost:8080":         "http://localhost:8080",
		"http://127.0.0.1:8080/": "http://127.0.0.1:8080",
	} {
		u, err := client.ParseAddr(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"ftp://x:1", "http://", "http://x:1/api", "grpc://127.0.0.1:9090"} {
		if _, err := client.ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) accepted", bad)
		}
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]client.Strategy{
		"": client.StrategyUnspecified, "default": client.StrategyUnspecified, "truncate": client.StrategyTruncate,
		"Snapshot": client.StrategySnapshot, "STRATEGY_ROLLBACK": client.StrategyRollback, "rollback": client.StrategyRollback,
	} {
		if got, err := client.ParseStrategy(in); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := client.ParseStrategy("fast"); err == nil || !strings.Contains(err.Error(), "truncate, snapshot or rollback") {
		t.Errorf("ParseStrategy(fast): %v", err)
	}
	if s := client.StrategyRollback.Short(); s != "rollback" {
		t.Errorf("Short() = %q", s)
	}
}

// TestTLS: WithCAFile trusts a daemon's own CA, makes https the default
// scheme, and the errors of a wrong scheme or an untrusted certificate say
// what to do.
func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status":"SERVING"}`))
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	ctx := context.Background()
	for _, addr := range []string{srv.URL, host} {
		c, err := client.New(addr, client.WithCAFile(caFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Health(ctx); err != nil || c.Addr() != srv.URL {
			t.Errorf("%s with the CA: %v (%s)", addr, err, c.Addr())
		}
	}
	c, _ := client.New(srv.URL)
	if err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "WithCAFile") {
		t.Errorf("without the CA: %v", err)
	}
	c, _ = client.New("http://" + host)
	if err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "serves HTTPS: give its address as https://"+host) {
		t.Errorf("http:// to an HTTPS daemon: %v", err)
	}
	if _, err := client.New(host, client.WithCAFile(filepath.Join(t.TempDir(), "missing.pem"))); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("a missing CA file: %v", err)
	}
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	c, _ = client.New("https://"+strings.TrimPrefix(plain.URL, "http://"), client.WithCAFile(caFile))
	if err := c.Health(ctx); err == nil || !strings.Contains(err.Error(), "does not speak TLS") {
		t.Errorf("https:// to a plain daemon: %v", err)
	}
}
