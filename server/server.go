package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/testdbd/testdbd/api/openapi"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/dashboard"
)

// Config configures a Server.
type Config struct {
	GRPCAddr string // e.g. 127.0.0.1:9090; port 0 picks a free port
	HTTPAddr string // e.g. 127.0.0.1:8080; port 0 picks a free port
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every call except /healthz, the dashboard's files and the gRPC health service.
	Token string
	// Insecure allows serving on an address other hosts can reach without
	// a Token. Without it Open refuses to.
	Insecure bool
	// TLSCert and TLSKey are PEM files of a certificate and its key: when
	// set, REST is served as HTTPS and gRPC with TLS, on the same addresses.
	TLSCert, TLSKey string
	// BodyIdleTimeout is how long reading a REST request body may go without
	// a byte (0: DefaultBodyIdleTimeout); UploadMemory is how many bytes of
	// large requests (uploaded migrations) are held at once, REST and gRPC
	// together (0: DefaultUploadMemory; see budget.go).
	BodyIdleTimeout time.Duration
	UploadMemory    int64
	Registry        *prometheus.Registry // served at /metrics; nil means none
	Logger          *slog.Logger
}

// API serves one TestDBServiceServer over gRPC and REST.
type API struct {
	cfg    Config
	log    *slog.Logger
	svc    testdbv1.TestDBServiceServer
	grpc   *grpc.Server
	health *health.Server
	http   *http.Server
	gl, hl net.Listener
	tls    bool // serving with TLS
	budget *uploadBudget
	wg     sync.WaitGroup
}

// New returns a server for svc. Open binds and starts it.
func New(cfg Config, svc testdbv1.TestDBServiceServer) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &API{cfg: cfg, log: cfg.Logger, svc: svc}
}

// Open binds both listeners and starts serving. It logs the addresses it
// actually bound.
func (s *API) Open(ctx context.Context) error {
	tlsConfig, err := loadTLS(s.cfg.TLSCert, s.cfg.TLSKey)
	if err != nil {
		return err
	}
	if s.gl, err = net.Listen("tcp", s.cfg.GRPCAddr); err != nil {
		return fmt.Errorf("listen for gRPC on %s: %w (choose another --grpc-addr)", s.cfg.GRPCAddr, err)
	}
	if s.hl, err = net.Listen("tcp", s.cfg.HTTPAddr); err != nil {
		_ = s.gl.Close()
		return fmt.Errorf("listen for HTTP on %s: %w (choose another --http-addr)", s.cfg.HTTPAddr, err)
	}
	if err := s.checkExposure(tlsConfig != nil); err != nil {
		_ = s.gl.Close()
		_ = s.hl.Close()
		return err
	}

	s.budget = newUploadBudget(s.cfg.UploadMemory)
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			return s.budget.tap(ctx, info, s.authorized)
		}),
		grpc.ChainUnaryInterceptor(s.unaryAuth, s.budget.unary),
		grpc.ChainStreamInterceptor(s.streamAuth),
	}
	if tlsConfig != nil {
		s.tls = true
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
		s.hl = tls.NewListener(s.hl, tlsConfig.Clone())
	}
	s.grpc = grpc.NewServer(opts...)
	testdbv1.RegisterTestDBServiceServer(s.grpc, s.svc)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(testdbv1.TestDBService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	reflection.Register(s.grpc)

	// protojson's JSON (proto field names, every field), written faster for
	// the API's own messages (json.go).
	marshaler := newRESTJSON()
	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, marshaler),
		runtime.WithErrorHandler(explainBadJSON),
	)
	if err := testdbv1.RegisterTestDBServiceHandlerServer(ctx, gw, s.svc); err != nil {
		return err
	}
	// Registered after the generated routes, so it takes their place.
	if err := gw.HandlePath(http.MethodGet, "/v1/templates/{name}:watch", s.watchHandler(gw, marshaler)); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.Document)
	})
	if s.cfg.Registry != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}))
	}
	mux.Handle("/", gw)
	mux.Handle("GET /{$}", dashboard.Handler()) // the web dashboard; API paths stay with the gateway
	mux.Handle("GET /ui/", dashboard.Handler())
	s.http = &http.Server{
		Handler:           s.httpAuth(newBodyReader(s.cfg.BodyIdleTimeout, s.budget).wrap(mux)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
	}

	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.grpc.Serve(s.gl); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("gRPC server stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(s.hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP server stopped", "err", err)
		}
	}()
	s.log.Info("serving", "grpc", s.GRPCAddr(), "http", s.HTTPAddr(), "url", s.URL(), "auth", s.cfg.Token != "", "tls", s.tls)
	return nil
}

// GRPCAddr returns the address the gRPC listener bound.
func (s *API) GRPCAddr() string { return s.gl.Addr().String() }

// HTTPAddr returns the address the HTTP listener bound.
func (s *API) HTTPAddr() string { return s.hl.Addr().String() }

// URL returns the REST API's base URL: http:// or, with TLS, https:// and
// the address the HTTP listener bound.
func (s *API) URL() string {
	if s.tls {
		return "https://" + s.HTTPAddr()
	}
	return "http://" + s.HTTPAddr()
}

// loadTLS loads the certificate and key for serving TLS; neither given
// means plain text.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, errors.New("TLS needs both --tls-cert and --tls-key (PEM files of the certificate and its private key)")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load the TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Check finds what Open would refuse without binding anything: TLS files
// that do not load, and an address other hosts can reach without a token
// (a host name is resolved; Open checks the address it binds again).
func (c Config) Check() error {
	if _, err := loadTLS(c.TLSCert, c.TLSKey); err != nil {
		return err
	}
	if c.Token != "" || c.Insecure {
		return nil
	}
	for _, a := range []struct{ flag, addr string }{{"--http-addr", c.HTTPAddr}, {"--grpc-addr", c.GRPCAddr}} {
		if ta, err := net.ResolveTCPAddr("tcp", a.addr); err == nil && !ta.IP.IsLoopback() {
			return exposedError(a.flag, a.addr)
		}
	}
	return nil
}

func exposedError(flag, addr string) error {
	return fmt.Errorf("%s %s is reachable from other hosts, and without a token anyone who can reach it can lease databases and read their passwords: "+
		"set a token in the environment (TESTDBD_TOKEN=...; clients send the same variable), bind a loopback address (127.0.0.1:port), "+
		"or pass --insecure to serve without a token anyway", flag, addr)
}

// checkExposure refuses to serve without a token on an address that other
// hosts can reach, unless Insecure is set, and warns about what crosses
// the network in clear text.
func (s *API) checkExposure(withTLS bool) error {
	for _, l := range []struct {
		flag string
		ln   net.Listener
	}{{"--http-addr", s.hl}, {"--grpc-addr", s.gl}} {
		addr, ok := l.ln.Addr().(*net.TCPAddr)
		if !ok || addr.IP.IsLoopback() {
			continue
		}
		switch {
		case s.cfg.Token == "" && !s.cfg.Insecure:
			return exposedError(l.flag, l.ln.Addr().String())
		case s.cfg.Token == "":
			s.log.Warn("serving without a token on an address other hosts can reach (--insecure): anyone who can reach it can lease databases and read their passwords",
				"flag", l.flag, "addr", l.ln.Addr().String())
		case !withTLS:
			s.log.Warn("serving on an address other hosts can reach without TLS: the token and the leases' passwords cross the network in clear text; give --tls-cert and --tls-key to encrypt them",
				"flag", l.flag, "addr", l.ln.Addr().String())
		}
	}
	return nil
}

// SetServing flips the health status (NOT_SERVING during shutdown).
func (s *API) SetServing(ok bool) {
	st := healthpb.HealthCheckResponse_SERVING
	if !ok {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(testdbv1.TestDBService_ServiceDesc.ServiceName, st)
}

// Close stops accepting calls, lets running ones finish until ctx ends, then
// stops hard.
func (s *API) Close(ctx context.Context) error {
	if s.grpc == nil {
		return nil
	}
	s.SetServing(false)
	herr := s.http.Shutdown(ctx)
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
	}
	s.wg.Wait()
	return herr
}

// explainBadJSON adds what to do to the JSON decoder's terse messages.
func explainBadJSON(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if st, ok := status.FromError(err); ok && st.Code() == codes.InvalidArgument && strings.HasPrefix(st.Message(), "proto:") {
		msg := "malformed request body: " + strings.TrimSpace(strings.TrimPrefix(st.Message(), "proto:"))
		switch {
		case strings.Contains(msg, "enum field strategy"):
			msg += "; use STRATEGY_TRUNCATE, STRATEGY_SNAPSHOT or STRATEGY_ROLLBACK"
		case strings.Contains(msg, "unknown field"):
			msg += "; the request fields are listed in /openapi.json"
		}
		err = status.Error(codes.InvalidArgument, msg)
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, err)
}

func (s *API) healthz(w http.ResponseWriter, r *http.Request) {
	resp, err := s.health.Check(r.Context(), &healthpb.HealthCheckRequest{})
	w.Header().Set("Content-Type", "application/json")
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"NOT_SERVING"}` + "\n"))
		return
	}
	_, _ = w.Write([]byte(`{"status":"SERVING"}` + "\n"))
}

// authorized compares the presented bearer token with the configured one in
// constant time (hashing both first so that even the length is not leaked).
func (s *API) authorized(header string) bool {
	if s.cfg.Token == "" {
		return true
	}
	got, ok := bearerToken(header)
	if !ok {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 9110, section 11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

const authHelp = "missing or wrong bearer token: this daemon requires one (its --token or TESTDBD_TOKEN); send the header \"Authorization: Bearer <token>\""

func (s *API) httpAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || dashboard.Public(r) || s.authorized(r.Header.Get("Authorization")) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeStatus(w, http.StatusUnauthorized, codes.Unauthenticated, authHelp)
	})
}

func (s *API) checkGRPC(ctx context.Context, method string) error {
	if strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var header string
	if v := md.Get("authorization"); len(v) > 0 {
		header = v[0]
	}
	if !s.authorized(header) {
		return status.Error(codes.Unauthenticated, authHelp+" (gRPC metadata \"authorization\")")
	}
	return nil
}

func (s *API) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.checkGRPC(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *API) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.checkGRPC(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

// watchHandler serves WatchTemplate over REST: the gateway's in-process
// registration cannot stream, so this writes what the gateway writes for a
// server stream, newline-delimited JSON of {"result": {...}} objects (and
// {"error": {...}} when the stream fails after it began), flushed as each
// message is sent.
func (s *API) watchHandler(gw *runtime.ServeMux, m runtime.Marshaler) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		req := &testdbv1.WatchTemplateRequest{Name: params["name"], Hash: r.URL.Query().Get("hash")}
		st := &restStream{ctx: r.Context(), w: w, m: m}
		err := s.svc.WatchTemplate(req, st)
		if err == nil {
			return
		}
		if !st.began {
			runtime.HTTPError(r.Context(), gw, m, w, r, err)
			return
		}
		body, _ := m.Marshal(map[string]any{"error": statusBody(err)})
		_, _ = w.Write(append(body, '\n'))
	}
}

// statusBody is a gRPC status as the REST error body shows it.
func statusBody(err error) map[string]any {
	st, _ := status.FromError(err)
	return map[string]any{"code": int(st.Code()), "message": st.Message()}
}

// restStream is the server side of WatchTemplate writing to an HTTP
// response.
type restStream struct {
	grpc.ServerStream
	ctx   context.Context
	w     http.ResponseWriter
	m     runtime.Marshaler
	began bool
}

func (s *restStream) Context() context.Context { return s.ctx }

func (s *restStream) Send(msg *testdbv1.WatchTemplateResponse) error {
	if !s.began {
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(http.StatusOK)
		s.began = true
	}
	b, err := s.m.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := s.w.Write([]byte(`{"result":`)); err != nil {
		return err
	}
	if _, err := s.w.Write(append(b, '}', '\n')); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
