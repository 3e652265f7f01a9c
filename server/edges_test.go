package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/internal/testcert"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/server"
)

// echoService answers EnsureTemplate with the name and the number of files
// it was sent, and ListTemplates with nothing: enough of the API to test
// the HTTP and gRPC edges (bodies, auth, TLS) without a database server.
type echoService struct {
	testdbv1.UnimplementedTestDBServiceServer
}

func (echoService) EnsureTemplate(_ context.Context, req *testdbv1.EnsureTemplateRequest) (*testdbv1.EnsureTemplateResponse, error) {
	return &testdbv1.EnsureTemplateResponse{Template: &testdbv1.Template{Name: req.Name, Tables: int32(len(req.Migrations))}}, nil
}

func (echoService) ListTemplates(context.Context, *testdbv1.ListTemplatesRequest) (*testdbv1.ListTemplatesResponse, error) {
	return &testdbv1.ListTemplatesResponse{}, nil
}

// openEdge serves echoService with cfg (free loopback ports unless set).
func openEdge(t *testing.T, cfg server.Config) (*server.API, error) {
	t.Helper()
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = "127.0.0.1:0"
	}
	cfg.Logger = testenv.Logger(t)
	srv := server.New(cfg, echoService{})
	if err := srv.Open(context.Background()); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return srv, nil
}

func mustOpenEdge(t *testing.T, cfg server.Config) *server.API {
	t.Helper()
	srv, err := openEdge(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

type apiStatus struct {
	Code    codes.Code `json:"code"`
	Message string     `json:"message"`
}

func post(t *testing.T, c *http.Client, url string, body io.Reader, header map[string]string) (int, apiStatus, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var st apiStatus
	_ = json.Unmarshal(b, &st)
	return resp.StatusCode, st, b
}

// TestBodyTooLarge: a body over the limit is 413 with a message saying what
// to do, whether its size is declared or only found out while reading.
func TestBodyTooLarge(t *testing.T) {
	srv := mustOpenEdge(t, server.Config{})
	url := srv.URL() + "/v1/templates"
	t.Run("declared", func(t *testing.T) {
		// The length alone is enough: the answer comes before any body.
		conn, err := net.Dial("tcp", srv.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/templates HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", server.MaxRequestBytes+1)
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var st apiStatus
		_ = json.Unmarshal(raw, &st)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || st.Code != codes.ResourceExhausted || !strings.Contains(st.Message, "migrations_dir") {
			t.Errorf("got %d %.300s; want 413 saying what to do", resp.StatusCode, raw)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		// No length given: found out while reading.
		big := `{"name":"app","seed_sql":"` + strings.Repeat("x", server.MaxRequestBytes) + `"}`
		code, st, raw := post(t, http.DefaultClient, url, io.MultiReader(strings.NewReader(big)), nil)
		if code != http.StatusRequestEntityTooLarge || st.Code != codes.ResourceExhausted || !strings.Contains(st.Message, "migrations_dir") {
			t.Errorf("got %d %.300s; want 413 saying what to do", code, raw)
		}
	})
	// Just under the limit still works.
	code, _, raw := post(t, http.DefaultClient, url, strings.NewReader(`{"name":"ok","migrations":[{"name":"1.sql","content":"`+strings.Repeat("x", 2<<20)+`"}]}`), nil)
	if code != http.StatusOK || !strings.Contains(string(raw), `"name":"ok"`) {
		t.Errorf("a 2 MiB body: %d %.300s", code, raw)
	}
}

// TestBodyStalls: a client that stops sending its body is answered 408 once
// nothing has arrived for the idle timeout.
func TestBodyStalls(t *testing.T) {
	srv := mustOpenEdge(t, server.Config{BodyIdleTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", srv.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/templates HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":")
	// Nothing more is sent; the answer must come anyway.
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "stalled") {
		t.Errorf("got %d %s; want 408 saying the body stalled", resp.StatusCode, b)
	}
}

// TestSlowBodyIsRead: a body that keeps arriving, however slowly, is read.
func TestSlowBodyIsRead(t *testing.T) {
	srv := mustOpenEdge(t, server.Config{BodyIdleTimeout: 5 * time.Second})
	pr, pw := io.Pipe()
	go func() {
		for _, part := range []string{`{"name":`, `"slow"`, `}`} {
			_, _ = pw.Write([]byte(part))
			time.Sleep(50 * time.Millisecond)
		}
		pw.Close()
	}()
	code, _, raw := post(t, http.DefaultClient, srv.URL()+"/v1/templates", pr, nil)
	if code != http.StatusOK || !strings.Contains(string(raw), `"slow"`) {
		t.Errorf("got %d %s", code, raw)
	}
}

// TestBearerSchemeIsCaseInsensitive follows RFC 9110: the scheme's case
// does not matter, the token's does.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	srv := mustOpenEdge(t, server.Config{Token: "s3cret"})
	for header, want := range map[string]int{
		"Bearer s3cret": 200, "bearer s3cret": 200, "BEARER s3cret": 200, "Bearer  s3cret ": 200,
		"Bearer S3CRET": 401, "Basic s3cret": 401, "s3cret": 401, "Bearer": 401, "": 401,
	} {
		code, st, _ := post(t, http.DefaultClient, srv.URL()+"/v1/templates", strings.NewReader(`{"name":"a"}`), map[string]string{"Authorization": header})
		if code != want {
			t.Errorf("Authorization %q: %d, want %d", header, code, want)
		}
		if code == 401 && !strings.Contains(st.Message, "TESTDBD_TOKEN") {
			t.Errorf("401 message %q", st.Message)
		}
	}
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "bearer s3cret")
	if _, err := testdbv1.NewTestDBServiceClient(conn).ListTemplates(ctx, &testdbv1.ListTemplatesRequest{}); err != nil {
		t.Errorf("gRPC with a lower-case scheme: %v", err)
	}
}

// TestExposedAddressNeedsToken: an address other hosts can reach is
// refused without a token, unless Insecure says so.
func TestExposedAddressNeedsToken(t *testing.T) {
	_, err := openEdge(t, server.Config{HTTPAddr: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "--insecure") || !strings.Contains(err.Error(), "TESTDBD_TOKEN") || !strings.Contains(err.Error(), "--http-addr") {
		t.Errorf("0.0.0.0 without a token: %v", err)
	}
	_, err = openEdge(t, server.Config{GRPCAddr: "[::]:0"})
	if err == nil || !strings.Contains(err.Error(), "--grpc-addr") {
		t.Errorf(":: without a token: %v", err)
	}
	if _, err := openEdge(t, server.Config{HTTPAddr: "0.0.0.0:0", Token: "t"}); err != nil {
		t.Errorf("with a token: %v", err)
	}
	if _, err := openEdge(t, server.Config{HTTPAddr: "0.0.0.0:0", Insecure: true}); err != nil {
		t.Errorf("with Insecure: %v", err)
	}
	if _, err := openEdge(t, server.Config{HTTPAddr: "localhost:0"}); err != nil {
		t.Errorf("localhost: %v", err)
	}
}

// TestTLS serves REST and gRPC with a self-signed certificate made here.
func TestTLS(t *testing.T) {
	cert := testcert.Write(t)
	srv := mustOpenEdge(t, server.Config{TLSCert: cert.Cert, TLSKey: cert.Key, Token: "tok"})
	if !strings.HasPrefix(srv.URL(), "https://") {
		t.Fatalf("URL %s", srv.URL())
	}
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool(t)}}}
	defer tlsClient.CloseIdleConnections()
	code, _, raw := post(t, tlsClient, srv.URL()+"/v1/templates", strings.NewReader(`{"name":"over-tls"}`), map[string]string{"Authorization": "Bearer tok"})
	if code != 200 || !strings.Contains(string(raw), "over-tls") {
		t.Errorf("HTTPS: %d %s", code, raw)
	}
	// Plain HTTP to the TLS port is not served.
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200 on the TLS port")
		}
	}
	// A client that does not trust the certificate fails.
	if resp, err := http.Get(srv.URL() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("a client without the CA connected")
	}

	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: cert.Pool(t)})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health over TLS: %v %v", h, err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer tok")
	if _, err := testdbv1.NewTestDBServiceClient(conn).ListTemplates(ctx, &testdbv1.ListTemplatesRequest{}); err != nil {
		t.Errorf("gRPC call over TLS: %v", err)
	}
	plain, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(plain).Check(cctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("plain-text gRPC to the TLS port: %v", err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	cert := testcert.Write(t)
	for _, tc := range []struct {
		cfg  server.Config
		says string
	}{
		{server.Config{TLSCert: cert.Cert}, "--tls-key"},
		{server.Config{TLSKey: cert.Key}, "--tls-cert"},
		{server.Config{TLSCert: cert.Key, TLSKey: cert.Cert}, "load the TLS certificate"},
		{server.Config{TLSCert: "/nonexistent.pem", TLSKey: cert.Key}, "/nonexistent.pem"},
	} {
		if _, err := openEdge(t, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v, want an error mentioning %s", tc.cfg, err, tc.says)
		}
	}
}
