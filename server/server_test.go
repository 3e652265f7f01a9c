package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/testdbd/testdbd"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/server"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// startServer serves a Service over one real server on free ports.
func startServer(t *testing.T, token string) *server.API {
	t.Helper()
	fleet := testenv.Fleet(t, 1)
	if _, err := fleet.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	m := lease.New(lease.Config{Fleet: fleet, Logger: testenv.Logger(t)})
	m.Open()
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	srv := server.New(server.Config{
		GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Token: token, Registry: reg, Logger: testenv.Logger(t),
	}, &server.Service{Manager: m, DefaultStrategy: testdbd.StrategySnapshot})
	if err := srv.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return srv
}

func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestREST(t *testing.T) {
	srv := startServer(t, "")
	base := "http://" + srv.HTTPAddr()

	code, body := get(t, base+"/healthz", "")
	if code != 200 || !strings.Contains(string(body), "SERVING") {
		t.Errorf("/healthz: %d %s", code, body)
	}

	code, body = get(t, base+"/v1/instances", "")
	if code != 200 {
		t.Fatalf("/v1/instances: %d %s", code, body)
	}
	var list struct {
		Instances []map[string]any `json:"instances"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Instances) != 1 {
		t.Fatalf("%d instances, want 1: %s", len(list.Instances), body)
	}
	in := list.Instances[0]
	// Proto field names, unpopulated fields emitted.
	for _, field := range []string{"datadir_on_tmpfs", "memory_bytes", "startup_ms", "settings", "container_id", "settings_mismatched"} {
		if _, ok := in[field]; !ok {
			t.Errorf("instance JSON lacks %q: %s", field, body)
		}
	}
	if in["datadir_on_tmpfs"] != true || in["state"] != "running" || in["provider"] != "native" {
		t.Errorf("instance: %s", body)
	}
	// Counts and sizes are JSON numbers, not protojson's strings of 64-bit integers.
	for _, field := range []string{"memory_bytes", "datadir_bytes", "port", "databases"} {
		if _, ok := in[field].(float64); !ok {
			t.Errorf("instance %s is %T %v, want a JSON number", field, in[field], in[field])
		}
	}
	code, body = get(t, base+"/v1/stats", "")
	var st map[string]any
	if err := json.Unmarshal(body, &st); code != 200 || err != nil {
		t.Fatalf("/v1/stats: %d %v %s", code, err, body)
	}
	for _, field := range []string{"leases_active", "leases_acquired", "leases_expired", "acquire_exhausted"} {
		if _, ok := st[field].(float64); !ok {
			t.Errorf("stats %s is %T %v, want a JSON number", field, st[field], st[field])
		}
	}
	if lat, _ := st["acquire"].(map[string]any); lat == nil || fmt.Sprintf("%T", lat["count"]) != "float64" {
		t.Errorf("acquire.count: %v", st["acquire"])
	}
	if settings, _ := in["settings"].([]any); len(settings) < 15 {
		t.Errorf("settings: %v", in["settings"])
	}

	code, body = get(t, base+"/openapi.json", "")
	if code != 200 || !strings.Contains(string(body), `"/v1/leases/{id}:reset"`) {
		t.Errorf("/openapi.json: %d %.200s", code, body)
	}
	code, body = get(t, base+"/metrics", "")
	if code != 200 || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("/metrics: %d %.200s", code, body)
	}
	code, body = get(t, base+"/v1/nothing-here", "")
	if code != 404 {
		t.Errorf("unknown route: %d %s", code, body)
	}
}

func TestTokenREST(t *testing.T) {
	srv := startServer(t, "s3cret")
	base := "http://" + srv.HTTPAddr()
	if code, body := get(t, base+"/healthz", ""); code != 200 {
		t.Errorf("/healthz needs no token, got %d %s", code, body)
	}
	for _, path := range []string{"/v1/instances", "/metrics", "/openapi.json", "/v1/leases"} {
		code, body := get(t, base+path, "")
		if code != 401 || !strings.Contains(string(body), "Bearer") {
			t.Errorf("%s without token: %d %s", path, code, body)
		}
		if code, _ := get(t, base+path, "wrong"); code != 401 {
			t.Errorf("%s with a wrong token: %d", path, code)
		}
	}
	if code, body := get(t, base+"/v1/instances", "s3cret"); code != 200 {
		t.Errorf("with token: %d %s", code, body)
	}
}

func TestGRPC(t *testing.T) {
	srv := startServer(t, "s3cret")
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()

	// Health needs no token.
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "testdb.v1.TestDBService"})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}

	api := testdbv1.NewTestDBServiceClient(conn)
	_, err = api.ListInstances(ctx, &testdbv1.ListInstancesRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("without token: %v", err)
	}
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret")
	resp, err := api.ListInstances(authed, &testdbv1.ListInstancesRequest{})
	if err != nil || len(resp.Instances) != 1 {
		t.Fatalf("with token: %v %v", resp, err)
	}

	// Reflection lists the service.
	stream, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(authed)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "testdb.v1.TestDBService") {
		t.Errorf("reflection lists %v", names)
	}
}
