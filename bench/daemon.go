package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/migrations"
)

// daemon is a `testdbd serve` child process and the SDK's REST client of
// it. The benchmark is the client: a separate process from the daemon,
// talking HTTP over loopback, as a test suite would.
type daemon struct {
	name     string
	cmd      *exec.Cmd
	stateDir string
	started  time.Time // just before the process was started
	serving  time.Duration
	exited   chan struct{}
	http     *http.Client
	api      *client.Client // the daemon's REST API, through http

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
	d := &daemon{name: name, cmd: cmd, stateDir: stateDir, exited: make(chan struct{}), http: newHTTPClient()}
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
		if d.api, err = client.New(addr, client.WithHTTPClient(d.http)); err == nil {
			return d, nil
		}
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
	d.http.CloseIdleConnections()
	return err
}

func (d *daemon) kill() {
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// ensureTemplate builds (or finds) a template of the standard workload,
// plus the extra migration files, and waits for the build.
func (d *daemon) ensureTemplate(ctx context.Context, name string, poolSize int, extra ...client.MigrationFile) (*client.Template, error) {
	return d.ensureOf(ctx, name, poolSize, standardSource(standardTables), extra...)
}

// ensureSource builds (or finds) a template of src alone and waits for the
// build.
func (d *daemon) ensureSource(ctx context.Context, name string, poolSize int, src migrations.Source) error {
	_, err := d.ensureOf(ctx, name, poolSize, src)
	return err
}

func (d *daemon) ensureOf(ctx context.Context, name string, poolSize int, src migrations.Source, extra ...client.MigrationFile) (*client.Template, error) {
	files := make([]client.MigrationFile, 0, len(src.Files)+len(extra))
	for _, f := range src.Files {
		files = append(files, client.MigrationFile{Name: f.Name, Content: string(f.Content)})
	}
	files = append(files, extra...)
	t, err := d.api.EnsureTemplate(ctx, client.EnsureTemplateRequest{
		Name: name, Migrations: files, SeedSQL: src.Seed, PoolSize: int32(poolSize),
	})
	if err == nil && t.State != client.TemplateReady {
		err = fmt.Errorf("template %s is %s: %s", name, t.State, t.Error)
	}
	return t, err
}

// waitPool polls the template every interval until cond holds for its pool
// counts, for at most timeout.
func (d *daemon) waitPool(ctx context.Context, name string, timeout, interval time.Duration, cond func(*client.Template) bool) (*client.Template, error) {
	deadline := time.Now().Add(timeout)
	for {
		t, err := d.api.GetTemplate(ctx, name)
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
	_, err := d.waitPool(ctx, name, 30*time.Second, 2*time.Millisecond, func(t *client.Template) bool {
		return int(t.Pool.Ready) >= want && t.Pool.Resetting == 0 && t.Pool.Creating == 0
	})
	return err
}

// acquire leases a database for an hour, waiting up to 30 s for one; keep
// asks for a lease whose resets leave AUTO_INCREMENT where tests moved it.
func (d *daemon) acquire(ctx context.Context, template string, strategy client.Strategy, worker string, keep bool) (*client.Lease, error) {
	return d.api.AcquireLease(ctx, client.AcquireLeaseRequest{
		Template: template, Strategy: strategy, Worker: worker, TTLSeconds: 3600, WaitTimeoutMs: 30000, KeepAutoIncrement: keep,
	})
}

func (d *daemon) release(ctx context.Context, id string) error {
	_, err := d.api.ReleaseLease(ctx, id)
	return err
}
