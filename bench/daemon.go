package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemon is a `testdbd serve` child process and a REST client for it. The
// benchmark is the client: a separate process from the daemon, talking HTTP
// over loopback, as a test suite would.
type daemon struct {
	name     string
	cmd      *exec.Cmd
	base     string // http://host:port
	stateDir string
	started  time.Time // just before the process was started
	serving  time.Duration
	exited   chan struct{}
	client   *http.Client

	mu   sync.Mutex
	tail []string // last log lines, for error messages
}

// startDaemon runs `testdbd serve` on free loopback ports with a state
// directory of its own and waits until it logs the address it serves on.
func startDaemon(ctx context.Context, bin, name, stateDir string, args ...string) (*daemon, error) {
	args = append([]string{"serve", "--state-dir", stateDir, "--http-addr", "127.0.0.1:0",
		"--grpc-addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-timeout", "10s"}, args...)
	cmd := exec.Command(bin, args...)
	// Its own process group keeps a terminal's Ctrl-C for the benchmark,
	// which then stops the daemon in order; if the benchmark dies, so does
	// the daemon (and its servers with it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	d := &daemon{name: name, cmd: cmd, stateDir: stateDir, exited: make(chan struct{}), client: newHTTPClient()}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	ready := make(chan string, 1)
	go d.readLog(stderr, ready)
	go func() { _ = cmd.Wait(); close(d.exited) }()
	select {
	case addr := <-ready:
		d.serving = time.Since(d.started)
		d.base = "http://" + addr
		return d, nil
	case <-d.exited:
		err = fmt.Errorf("daemon %s exited during start-up: %s", name, d.lastLines())
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(3 * time.Minute):
		err = fmt.Errorf("daemon %s did not serve within 3 minutes: %s", name, d.lastLines())
	}
	d.kill()
	return nil, err
}

func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: 5 * time.Minute,
		DisableCompression: true,
	}}
}

// readLog scans the daemon's JSON log for the "serving" line and keeps the
// last lines for error messages.
func (d *daemon) readLog(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		d.mu.Lock()
		d.tail = append(d.tail, line)
		if len(d.tail) > 40 {
			d.tail = d.tail[len(d.tail)-40:]
		}
		d.mu.Unlock()
		var entry struct {
			Msg  string `json:"msg"`
			HTTP string `json:"http"`
		}
		if !sent && json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" && entry.HTTP != "" {
			ready <- entry.HTTP
			sent = true
		}
	}
}

func (d *daemon) lastLines() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.tail)
	if n > 8 {
		n = 8
	}
	return strings.Join(d.tail[len(d.tail)-n:], "\n")
}

// stop sends SIGTERM (the daemon stops its servers and removes their
// datadirs and mounts) and waits for the exit. The state directory stays.
func (d *daemon) stop() error {
	if d == nil {
		return nil
	}
	var err error
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if code := d.cmd.ProcessState.ExitCode(); code != 0 {
			err = fmt.Errorf("daemon %s exited with %d: %s", d.name, code, d.lastLines())
		}
	case <-time.After(60 * time.Second):
		d.kill()
		err = fmt.Errorf("daemon %s did not stop within 60 s of SIGTERM; killed", d.name)
	}
	d.client.CloseIdleConnections()
	return err
}

func (d *daemon) kill() {
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// apiError is a REST call that did not return 200.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message) }

// call sends a REST request with an optional JSON body and decodes the JSON
// answer into out (when not nil).
func (d *daemon) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var st struct {
			Message string `json:"message"`
		}
		msg := string(b)
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return fmt.Errorf("%s %s: %w", method, path, &apiError{Status: resp.StatusCode, Message: msg})
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode %q: %w", method, path, truncate(string(b), 200), err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// The REST API's objects, as far as the benchmark reads them. JSON names are
// the proto field names; int64 values arrive as strings.

type apiTemplate struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error"`
	// Tables is the number of base tables.
	Tables int          `json:"tables"`
	Build  BuildTimings `json:"build"`
	Pool   struct {
		Ready     int `json:"ready"`
		Leased    int `json:"leased"`
		Resetting int `json:"resetting"`
		Creating  int `json:"creating"`
		Target    int `json:"target"`
	} `json:"pool"`
}

type apiLease struct {
	ID       string  `json:"id"`
	DSN      string  `json:"dsn"`
	Database string  `json:"database"`
	WaitedMs float64 `json:"waited_ms"`
}

type apiReport struct {
	Strategy       string  `json:"strategy"`
	FallbackReason string  `json:"fallback_reason"`
	TotalMs        float64 `json:"total_ms"`
	Phases         struct {
		SessionsMs float64 `json:"sessions_ms"`
		DetectMs   float64 `json:"detect_ms"`
		VerifyMs   float64 `json:"verify_ms"`
		RestoreMs  float64 `json:"restore_ms"`
		SchemaMs   float64 `json:"schema_ms"`
	} `json:"phases"`
	TablesReset []string `json:"tables_reset"`
}

type apiInstance struct {
	ID             string  `json:"id"`
	Version        string  `json:"version"`
	MemoryBytes    int64s  `json:"memory_bytes"`
	DatadirBytes   int64s  `json:"datadir_bytes"`
	DatadirOnTmpfs bool    `json:"datadir_on_tmpfs"`
	Databases      int     `json:"databases"`
	StartupMs      float64 `json:"startup_ms"`
	Settings       []struct {
		Name   string `json:"name"`
		Actual string `json:"actual"`
	} `json:"settings"`
}

// int64s is an int64 that JSON may carry as a string (proto3 JSON) or a
// number.
type int64s int64

func (n *int64s) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	*n = int64s(v)
	return err
}

// ensureTemplate builds (or finds) a template of the standard workload and
// waits for the build.
func (d *daemon) ensureTemplate(ctx context.Context, name string, tables, poolSize int) (apiTemplate, error) {
	src := standardSource(tables)
	files := make([]map[string]string, len(src.Files))
	for i, f := range src.Files {
		files[i] = map[string]string{"name": f.Name, "content": string(f.Content)}
	}
	var t apiTemplate
	err := d.call(ctx, http.MethodPost, "/v1/templates", map[string]any{
		"name": name, "migrations": files, "seed_sql": src.Seed, "pool_size": poolSize,
	}, &t)
	if err == nil && t.State != "TEMPLATE_STATE_READY" {
		err = fmt.Errorf("template %s is %s: %s", name, t.State, t.Error)
	}
	return t, err
}

func (d *daemon) template(ctx context.Context, name string) (apiTemplate, error) {
	var t apiTemplate
	err := d.call(ctx, http.MethodGet, "/v1/templates/"+name, nil, &t)
	return t, err
}

// waitPool polls the template every interval until cond holds for its pool
// counts, for at most timeout.
func (d *daemon) waitPool(ctx context.Context, name string, timeout, interval time.Duration, cond func(apiTemplate) bool) (apiTemplate, error) {
	deadline := time.Now().Add(timeout)
	for {
		t, err := d.template(ctx, name)
		if err != nil {
			return t, err
		}
		if cond(t) {
			return t, nil
		}
		if time.Now().After(deadline) {
			return t, fmt.Errorf("template %s: pool %+v did not reach the wanted state within %s", name, t.Pool, timeout)
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// waitIdle waits until no database of the template is being reset or
// created and at least want are ready.
func (d *daemon) waitIdle(ctx context.Context, name string, want int) error {
	_, err := d.waitPool(ctx, name, 30*time.Second, 2*time.Millisecond, func(t apiTemplate) bool {
		return t.Pool.Ready >= want && t.Pool.Resetting == 0 && t.Pool.Creating == 0
	})
	return err
}

func (d *daemon) acquire(ctx context.Context, template, strategy, worker string) (apiLease, error) {
	var l apiLease
	err := d.call(ctx, http.MethodPost, "/v1/leases", map[string]any{
		"template": template, "strategy": strategy, "worker": worker,
		"ttl_seconds": 3600, "wait_timeout_ms": 30000,
	}, &l)
	return l, err
}

func (d *daemon) reset(ctx context.Context, id string) (apiReport, error) {
	var r apiReport
	err := d.call(ctx, http.MethodPost, "/v1/leases/"+id+":reset", struct{}{}, &r)
	return r, err
}

func (d *daemon) release(ctx context.Context, id string) error {
	return d.call(ctx, http.MethodDelete, "/v1/leases/"+id, nil, nil)
}

func (d *daemon) instances(ctx context.Context) ([]apiInstance, error) {
	var list struct {
		Instances []apiInstance `json:"instances"`
	}
	err := d.call(ctx, http.MethodGet, "/v1/instances", nil, &list)
	return list.Instances, err
}

func (d *daemon) stats(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := d.call(ctx, http.MethodGet, "/v1/stats", nil, &raw)
	return raw, err
}
