package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/testdbd/testdbd"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/server"
)

// bigUpload is an EnsureTemplate request of four migrations of 15 MB each:
// 60 MB of uploaded files, over the 48 MB a template may have (refused
// once read).
func bigUpload() *testdbv1.EnsureTemplateRequest {
	req := &testdbv1.EnsureTemplateRequest{Name: "big"}
	for i := range 4 {
		req.Migrations = append(req.Migrations, &testdbv1.MigrationFile{
			Name:    "0000" + string(rune('1'+i)) + "_big.sql",
			Content: "-- +goose Up\n" + strings.Repeat("x", 15<<20),
		})
	}
	return req
}

// TestUploadsWithinBudget: eight uploads of 60 MB at once, four over REST
// and four over gRPC, never hold more than the upload budget
// (--upload-memory): REST requests beyond it wait their turn, gRPC calls
// beyond it are refused with ResourceExhausted naming the flag; each is
// answered, and the budget is whole again afterwards.
func TestUploadsWithinBudget(t *testing.T) {
	fleet := testenv.Fleet(t, 1)
	m := lease.New(lease.Config{Fleet: fleet, Logger: testenv.Logger(t)})
	m.Open()
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	const budget = 2 * server.MaxRequestBytes
	srv := server.New(server.Config{GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", UploadMemory: budget,
		Registry: prometheus.NewRegistry(), Logger: testenv.Logger(t)},
		&server.Service{Manager: m, DefaultStrategy: testdbd.StrategySnapshot})
	if err := srv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(server.MaxRequestBytes)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := testdbv1.NewTestDBServiceClient(conn)

	req := bigUpload()
	body, err := json.Marshal(map[string]any{"name": req.Name, "migrations": req.Migrations})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan string, 8)
	for range 4 {
		wg.Go(func() {
			resp, err := http.Post("http://"+srv.HTTPAddr()+"/v1/templates", "application/json", bytes.NewReader(body))
			if err != nil {
				results <- "REST: " + err.Error()
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				results <- "REST: " + resp.Status + ", want 400 (over 48 MB in all)"
			}
		})
		wg.Go(func() {
			_, err := api.EnsureTemplate(context.Background(), req)
			switch st := status.Convert(err); {
			case st.Code() == codes.InvalidArgument && strings.Contains(st.Message(), "in all"):
			case st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "--upload-memory=128M"):
			default:
				results <- "gRPC: " + err.Error()
			}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		t.Error(r)
	}
	held, peak := srv.UploadBytes()
	t.Logf("the uploads held at most %d MiB at once (budget %d MiB)", peak>>20, budget>>20)
	if peak > budget || peak < 60<<20 {
		t.Errorf("the uploads held at most %d bytes at once; the budget is %d", peak, budget)
	}
	if held != 0 {
		t.Errorf("%d bytes are still held after every upload was answered", held)
	}
}
