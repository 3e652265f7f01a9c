package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultAddr is the daemon's default REST address (testdbd serve
// --http-addr).
const DefaultAddr = "127.0.0.1:8080"

// maxResponseBytes caps a response body read from the daemon.
const maxResponseBytes = 64 << 20

// Client calls one testdbd daemon over its REST API. It is safe for
// concurrent use; share one per daemon so that connections are reused.
type Client struct {
	base  *url.URL     // scheme and host of the daemon
	token string       // bearer token, or ""
	http  *http.Client // does the calls

	caFile    string      // WithCAFile
	tlsConfig *tls.Config // WithTLSConfig
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer <token>" with every call, as a
// daemon started with --token requires.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the client call through hc instead of its own
// (for a proxy in front of the daemon, or TLS settings of your own).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithCAFile trusts the CA certificates in a PEM file (besides the
// system's) for the daemon's TLS certificate: a daemon started with
// --tls-cert whose certificate is self-signed or from a private CA. An
// address without a scheme then means https://.
func WithCAFile(path string) Option { return func(c *Client) { c.caFile = path } }

// WithTLSConfig uses cfg for the TLS connections to the daemon. An address
// without a scheme then means https://.
func WithTLSConfig(cfg *tls.Config) Option { return func(c *Client) { c.tlsConfig = cfg } }

// New returns a client of the daemon at addr: "host:port" (plain HTTP, or
// HTTPS with WithCAFile or WithTLSConfig), "http://host:port" or
// "https://host:port". An empty addr means DefaultAddr. New does not
// connect; the first call does.
func New(addr string, opts ...Option) (*Client, error) {
	c := &Client{}
	for _, o := range opts {
		o(c)
	}
	withTLS := c.caFile != "" || c.tlsConfig != nil
	if withTLS && !strings.Contains(addr, "://") {
		addr = "https://" + cmp.Or(strings.TrimSpace(addr), DefaultAddr)
	}
	base, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	c.base = base
	switch {
	case withTLS && c.http != nil:
		return nil, errors.New("testdbd client: WithHTTPClient and WithCAFile or WithTLSConfig: give the TLS settings in your http.Client's transport")
	case c.http != nil:
		return c, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64 // parallel tests call at once
	if withTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.tlsConfig != nil {
			cfg = c.tlsConfig.Clone()
		}
		if c.caFile != "" {
			if cfg.RootCAs, err = loadCAs(c.caFile); err != nil {
				return nil, err
			}
		}
		t.TLSClientConfig = cfg
	}
	c.http = &http.Client{Transport: t}
	return c, nil
}

// loadCAs returns the system's certificate pool with the PEM file's
// certificates added.
func loadCAs(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the daemon's CA certificate: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("the daemon's CA certificate %s holds no PEM certificate", path)
	}
	return pool, nil
}

// ParseAddr turns "host:port", "http://host:port" or "https://host:port"
// into the daemon's base URL. An empty addr means DefaultAddr.
func ParseAddr(addr string) (*url.URL, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		addr = DefaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("daemon address %q: want host:port, http://host:port or https://host:port (the daemon's --http-addr)", addr)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// Addr returns the daemon's base URL, e.g. "http://127.0.0.1:8080".
func (c *Client) Addr() string { return c.base.String() }

// Health reports whether the daemon is serving (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	var out struct {
		Status string `json:"status"`
	}
	if err := c.do(ctx, http.MethodGet, "/healthz", nil, &out); err != nil {
		return err
	}
	if out.Status != "SERVING" {
		return &Error{Code: CodeUnavailable, Status: http.StatusServiceUnavailable, Message: "the daemon is " + out.Status}
	}
	return nil
}

// EnsureTemplate builds a template, or finds the one already built from
// the same content (POST /v1/templates). Concurrent callers for the same
// content share one build. Unless req.Async is set it returns when the
// build has finished; a failed build is an error naming the failing file.
func (c *Client) EnsureTemplate(ctx context.Context, req EnsureTemplateRequest) (*Template, error) {
	var t Template
	if err := c.do(ctx, http.MethodPost, "/v1/templates", req, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// GetTemplate returns a template's state, hash, build timings and pool
// counts (GET /v1/templates/{name}).
func (c *Client) GetTemplate(ctx context.Context, name string) (*Template, error) {
	var t Template
	if err := c.do(ctx, http.MethodGet, "/v1/templates/"+url.PathEscape(name), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListTemplates lists the daemon's templates (GET /v1/templates).
func (c *Client) ListTemplates(ctx context.Context) ([]Template, error) {
	var out struct {
		Templates []Template `json:"templates"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/templates", nil, &out); err != nil {
		return nil, err
	}
	return out.Templates, nil
}

// DeleteTemplate drops a template and its worker databases (DELETE
// /v1/templates/{name}). The daemon refuses while leases are held unless
// force is set, which ends those leases.
func (c *Client) DeleteTemplate(ctx context.Context, name string, force bool) (*Template, error) {
	path := "/v1/templates/" + url.PathEscape(name)
	if force {
		path += "?force=true"
	}
	var out struct {
		Template Template `json:"template"`
	}
	if err := c.do(ctx, http.MethodDelete, path, nil, &out); err != nil {
		return nil, err
	}
	return &out.Template, nil
}

// AcquireLease leases a worker database of a template (POST /v1/leases),
// waiting in FIFO order when none is free. It fails with CodeResourceExhausted
// when none became free within the wait timeout.
func (c *Client) AcquireLease(ctx context.Context, req AcquireLeaseRequest) (*Lease, error) {
	var l Lease
	if err := c.do(ctx, http.MethodPost, "/v1/leases", req, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// GetLease returns a lease, active or recently ended (GET /v1/leases/{id}).
func (c *Client) GetLease(ctx context.Context, id string) (*Lease, error) {
	var l Lease
	if err := c.do(ctx, http.MethodGet, "/v1/leases/"+url.PathEscape(id), nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListLeases lists the active leases, of one template when template is not
// empty (GET /v1/leases).
func (c *Client) ListLeases(ctx context.Context, template string) ([]Lease, error) {
	path := "/v1/leases"
	if template != "" {
		path += "?template=" + url.QueryEscape(template)
	}
	var out struct {
		Leases []Lease `json:"leases"`
	}
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return out.Leases, nil
}

// RenewLease extends a lease's time to live to ttl from now; 0 means the
// lease's own TTL (POST /v1/leases/{id}:renew). ttl is rounded up to whole
// seconds.
func (c *Client) RenewLease(ctx context.Context, id string, ttl time.Duration) (*Lease, error) {
	body := struct {
		TTLSeconds int32 `json:"ttl_seconds"`
	}{seconds(ttl)}
	var l Lease
	if err := c.do(ctx, http.MethodPost, "/v1/leases/"+url.PathEscape(id)+":renew", body, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ResetLease brings the leased database back to its template now and
// returns the report (POST /v1/leases/{id}:reset). StrategyUnspecified runs
// the lease's own strategy.
func (c *Client) ResetLease(ctx context.Context, id string, s Strategy) (*ResetReport, error) {
	body := struct {
		Strategy Strategy `json:"strategy,omitempty"`
	}{s}
	var r ResetReport
	if err := c.do(ctx, http.MethodPost, "/v1/leases/"+url.PathEscape(id)+":reset", body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReleaseLease gives a lease back (DELETE /v1/leases/{id}) and returns at
// once. In the background the daemon ends the lease's sessions, drops its
// MySQL user and resets the database, all before the database goes to
// another lease. Releasing a released lease is not an error.
func (c *Client) ReleaseLease(ctx context.Context, id string) (*Lease, error) {
	var l Lease
	if err := c.do(ctx, http.MethodDelete, "/v1/leases/"+url.PathEscape(id), nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListInstances lists the server instances with the settings read back
// from each (GET /v1/instances).
func (c *Client) ListInstances(ctx context.Context) ([]Instance, error) {
	var out struct {
		Instances []Instance `json:"instances"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/instances", nil, &out); err != nil {
		return nil, err
	}
	return out.Instances, nil
}

// GetStats returns the daemon's counters and latency percentiles (GET
// /v1/stats).
func (c *Client) GetStats(ctx context.Context) (*Stats, error) {
	var s Stats
	if err := c.do(ctx, http.MethodGet, "/v1/stats", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// do sends one call and decodes the JSON answer into out. A daemon error
// comes back as *Error, a daemon that cannot be reached as
// *UnreachableError.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return c.unreachable(err)
	}
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(b, []byte("HTTP request to an HTTPS server")) {
		return &Error{Code: CodeUnavailable, Status: resp.StatusCode, Message: fmt.Sprintf(
			"the daemon at %s serves HTTPS: give its address as https://%s", c.base, c.base.Host)}
	}
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the daemon's answer is not the JSON expected (%w); is %s a testdbd daemon's REST address?", method, path, err, c.base)
	}
	return nil
}

// Code is the gRPC status code of a daemon error (the "code" of the REST
// error body).
type Code int

// The codes the daemon uses.
const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
	CodeUnauthenticated    Code = 16
)

var codeNames = map[Code]string{
	CodeOK: "OK", CodeCanceled: "Canceled", CodeUnknown: "Unknown", CodeInvalidArgument: "InvalidArgument",
	CodeDeadlineExceeded: "DeadlineExceeded", CodeNotFound: "NotFound", CodeResourceExhausted: "ResourceExhausted",
	CodeFailedPrecondition: "FailedPrecondition", CodeUnimplemented: "Unimplemented", CodeInternal: "Internal",
	CodeUnavailable: "Unavailable", CodeUnauthenticated: "Unauthenticated",
}

// String returns the code's gRPC name, e.g. "NotFound".
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Error is an error answered by the daemon. Its message is the daemon's,
// written for people: it says what went wrong and what to do.
type Error struct {
	Code    Code   // gRPC status code
	Status  int    // HTTP status
	Message string // the daemon's message, as it wrote it
}

// Error returns the daemon's message, with the fixes it names in the REST
// API's terms (EnsureTemplate (POST /v1/templates), wait_timeout_ms, ...)
// named in this package's.
func (e *Error) Error() string { return goHints.Replace(e.Message) }

// goHints rewrite the daemon's REST hints as this package's.
var goHints = strings.NewReplacer(
	"create it with EnsureTemplate (POST /v1/templates)", "create it with Client.EnsureTemplate, or give TestOptions.MigrationsDir",
	"acquire one with AcquireLease (POST /v1/leases)", "acquire one with Client.AcquireLease",
	"call EnsureTemplate again", "call Client.EnsureTemplate again",
	"wait for EnsureTemplate to return", "wait for Client.EnsureTemplate to return",
	"or wait longer (wait_timeout_ms)", "or wait longer (AcquireLeaseRequest.WaitTimeoutMs, TestOptions.WaitTimeout)",
	"or delete with force (which ends them)", "or delete with force, DeleteTemplate(ctx, name, true) (which ends them)",
	`upload the files in "migrations" for a remote daemon`, "upload the files (EnsureTemplateRequest.Migrations; ReadMigrations reads them) for a remote daemon",
	"give migrations_dir (a directory on the daemon's host) instead of uploading the files", "give EnsureTemplateRequest.MigrationsDir (a directory on the daemon's host) instead of uploading the files",
	`send the header "Authorization: Bearer <token>"`, "pass it with WithToken (the test helpers read TESTDBD_TOKEN)",
)

// ErrorCode returns the code of the *Error in err's chain: CodeOK for nil,
// CodeUnavailable for an *UnreachableError, CodeUnknown for anything else.
func ErrorCode(err error) Code {
	var e *Error
	var u *UnreachableError
	switch {
	case err == nil:
		return CodeOK
	case errors.As(err, &e):
		return e.Code
	case errors.As(err, &u):
		return CodeUnavailable
	}
	return CodeUnknown
}

func decodeError(status int, body []byte) error {
	var st struct {
		Code    *Code  `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &st); err == nil && st.Code != nil && st.Message != "" {
		return &Error{Code: *st.Code, Status: status, Message: st.Message}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return &Error{Code: codeForStatus(status), Status: status, Message: fmt.Sprintf("HTTP %d from the daemon: %s", status, text)}
}

// codeForStatus maps an HTTP status without a status body (e.g. from a
// proxy) to the nearest code.
func codeForStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalidArgument
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusTooManyRequests:
		return CodeResourceExhausted
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return CodeUnavailable
	case http.StatusGatewayTimeout:
		return CodeDeadlineExceeded
	}
	return CodeUnknown
}

// UnreachableError says that the daemon could not be reached at all.
type UnreachableError struct {
	Addr string // the daemon's base URL
	Err  error  // the transport's error
	grpc bool   // a gRPC (HTTP/2) server answered there
}

// unreachable is the error of a request that got no HTTP answer. When a
// connection was made, it finds out whether a gRPC server answered (the
// daemon's --grpc-addr given for its REST address): net/http reports one
// as a malformed response, or, when the server's first bytes come before
// the request is written, only as a closed connection.
func (c *Client) unreachable(err error) *UnreachableError {
	u := &UnreachableError{Addr: c.base.String(), Err: err}
	var op *net.OpError
	if c.base.Scheme == "http" && !(errors.As(err, &op) && op.Op == "dial") {
		u.grpc = answersHTTP2(err) || sendsHTTP2Settings(c.base.Host)
	}
	return u
}

// Error says which daemon could not be reached, why, and what to do.
func (e *UnreachableError) Error() string {
	if why := e.answeredWrong(); why != "" {
		return why
	}
	return fmt.Sprintf("cannot reach the testdbd daemon at %s (%s): is it running? Start it with `testdbd serve`, or give its REST address%s", e.Addr, e.reason(), addrWhere)
}

// answeredWrong says what to do when something answered at the address
// but not as the daemon's REST API does: "" when nothing answered.
func (e *UnreachableError) answeredWrong() string {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var notTLS tls.RecordHeaderError
	switch {
	case errors.As(e.Err, &unknownCA):
		return fmt.Sprintf("cannot reach the testdbd daemon at %s: its TLS certificate is signed by an authority this client does not trust: "+
			"give the CA certificate that signed it (WithCAFile; TESTDBD_TLS_CA for the test helpers)", e.Addr)
	case errors.As(e.Err, &hostname):
		return fmt.Sprintf("cannot reach the testdbd daemon at %s: %v: use an address its certificate names, or a certificate for this one", e.Addr, hostname)
	case errors.As(e.Err, &notTLS) || strings.Contains(e.Err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("cannot reach the testdbd daemon at %s: it does not speak TLS there: give its address as http://%s", e.Addr, strings.TrimPrefix(e.Addr, "https://"))
	case e.grpc || answersHTTP2(e.Err):
		return fmt.Sprintf("%s answers gRPC, not REST: give the daemon's REST address instead%s, by default %s (testdbd serve --http-addr)",
			e.hostPort(), addrWhere, DefaultAddr)
	}
	return ""
}

// addrWhere says where this package takes the daemon's address; the
// testdbd command line replaces it with its own flag.
const addrWhere = " (TESTDBD_ADDR for the test helpers, New's addr otherwise)"

// hostPort is the daemon's address without its scheme.
func (e *UnreachableError) hostPort() string {
	if u, err := url.Parse(e.Addr); err == nil && u.Host != "" {
		return u.Host
	}
	return e.Addr
}

// answersHTTP2 reports whether the transport error is net/http's reading
// an HTTP/2 frame as an HTTP/1 status line: the address is a gRPC port,
// whose first bytes are a SETTINGS frame.
func answersHTTP2(err error) bool {
	const marker = "malformed HTTP response "
	msg := err.Error()
	i := strings.Index(msg, marker)
	if i < 0 {
		return false
	}
	quoted, _ := strconv.QuotedPrefix(msg[i+len(marker):])
	line, uerr := strconv.Unquote(quoted)
	return uerr == nil && settingsFrame(line)
}

// sendsHTTP2Settings reports whether the server at hostport, connected to
// and asked nothing, sends an HTTP/2 SETTINGS frame within a second, as a
// gRPC server does (an HTTP/1 server waits for the request).
func sendsHTTP2Settings(hostport string) bool {
	conn, err := net.DialTimeout("tcp", hostport, time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	b := make([]byte, 9)
	if _, err := io.ReadFull(conn, b); err != nil {
		return false
	}
	return settingsFrame(string(b))
}

// settingsFrame reports whether b starts with the header of an HTTP/2
// SETTINGS frame: a 3-byte length, type 4, flags, stream 0.
func settingsFrame(b string) bool {
	return len(b) >= 9 && b[3] == 0x04 && b[5:9] == "\x00\x00\x00\x00"
}

// Unwrap returns the transport's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// reason is the transport error without Go's request prefix.
func (e *UnreachableError) reason() string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(e.Err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(e.Err, &dns):
		return "unknown host " + dns.Name
	case errors.As(e.Err, &ne) && ne.Timeout():
		return "timed out"
	}
	var ue *url.Error
	if errors.As(e.Err, &ue) {
		return ue.Err.Error()
	}
	return e.Err.Error()
}

// seconds rounds d up to whole seconds for the API's ttl_seconds.
func seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32((d + time.Second - 1) / time.Second)
}
