package grpcclient_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/testdbd/testdbd"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/grpcclient"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testcert"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/server"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestLeaseOverGRPC builds a template, leases a database, writes, resets and
// releases through the typed gRPC client, against a daemon's server with a
// token.
func TestLeaseOverGRPC(t *testing.T) {
	fleet := instance.NewFleet(testenv.Native(t), instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
	m := lease.New(lease.Config{Fleet: fleet, Logger: testenv.Logger(t), MigrationsRoot: "../.."})
	m.Open()
	srv := server.New(server.Config{GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Token: "tok", Logger: testenv.Logger(t)},
		&server.Service{Manager: m, DefaultStrategy: testdbd.StrategySnapshot})
	if err := srv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Close(ctx)
		_ = m.Close(ctx)
		_ = fleet.Close(ctx)
	})
	ctx := context.Background()

	anon, err := grpcclient.Dial(srv.GRPCAddr(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.ListTemplates(ctx, &testdbv1.ListTemplatesRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("without the token: %v", err)
	}

	c, err := grpcclient.Dial(srv.GRPCAddr(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir, _ := filepath.Abs(filepath.Join("..", "examples", "migrations"))
	tpl, err := c.EnsureTemplate(ctx, &testdbv1.EnsureTemplateRequest{Name: "app", MigrationsDir: dir})
	if err != nil || tpl.Template.State != testdbv1.TemplateState_TEMPLATE_STATE_READY {
		t.Fatalf("ensure: %v %v", tpl, err)
	}
	l, err := c.AcquireLease(ctx, &testdbv1.AcquireLeaseRequest{Template: "app", Strategy: testdbv1.Strategy_STRATEGY_ROLLBACK})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", l.Lease.Dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO users (email, name) VALUES ('g@rpc', 'g')"); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	rep, err := c.ResetLease(ctx, &testdbv1.ResetLeaseRequest{Id: l.Lease.Id})
	if err != nil || rep.Report.Strategy != testdbv1.Strategy_STRATEGY_ROLLBACK || len(rep.Report.TablesReset) != 1 {
		t.Fatalf("reset: %v %v", rep, err)
	}
	if _, err := c.ReleaseLease(ctx, &testdbv1.ReleaseLeaseRequest{Id: l.Lease.Id}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTemplate(ctx, &testdbv1.GetTemplateRequest{Name: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown template: %v", err)
	}
}

// TestDialTLS: credentials given as a dial option replace the plain-text
// default, against a daemon's server serving TLS.
func TestDialTLS(t *testing.T) {
	cert := testcert.Write(t)
	srv := server.New(server.Config{GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", TLSCert: cert.Cert, TLSKey: cert.Key, Token: "tok", Logger: testenv.Logger(t)},
		testdbv1.UnimplementedTestDBServiceServer{})
	if err := srv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	c, err := grpcclient.Dial(srv.GRPCAddr(), "tok", grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: cert.Pool(t)})))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The service answers (Unimplemented: this server has none behind it),
	// so the TLS connection and the token got through.
	if _, err := c.ListTemplates(context.Background(), &testdbv1.ListTemplatesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("over TLS: %v", err)
	}
}
