package native

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
)

// maxSocketPath is the longest Unix socket path Linux accepts.
const maxSocketPath = 107

// Server is one native server process.
type Server struct {
	p       *Provider
	id      string
	dir     string // instances/<id>
	rec     record
	socket  string
	port    int
	cmd     *exec.Cmd
	started time.Time
	startup time.Duration

	done     chan struct{} // closed when the process has exited
	exitErr  error         // why it exited; read after done is closed
	stopOnce sync.Once
	stopErr  error

	mu       sync.Mutex
	stopping bool
}

var _ testdbd.Instance = (*Server)(nil)

// Start starts a server on a copy of the pristine datadir, on a free
// loopback port and a Unix socket, and waits until it answers.
func (p *Provider) Start(ctx context.Context, opts testdbd.StartOptions) (testdbd.Instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, testdbd.Errorf(testdbd.EUnavailable, "native provider is closed")
	}
	p.mu.Unlock()

	id := randomID("n-")
	s := &Server{p: p, id: id, dir: filepath.Join(p.cfg.StateDir, "instances", id), done: make(chan struct{})}
	s.socket = filepath.Join(s.dir, "mysqld.sock")
	if len(s.socket) > maxSocketPath {
		return nil, testdbd.Errorf(testdbd.EInvalid,
			"state directory %s is too long for a Unix socket path (%d > %d bytes): choose a shorter --state-dir",
			p.cfg.StateDir, len(s.socket), maxSocketPath)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create instance directory: %w", err)
	}
	fail := func(err error) (testdbd.Instance, error) {
		s.kill()
		_ = removeInstanceFiles(s.dir, s.rec)
		return nil, fmt.Errorf("start %s server: %w", p.engine.Flavor, err)
	}
	var err error
	if s.rec, err = p.makeRoot(s.dir, id); err != nil {
		return fail(err)
	}
	if err := copyTree(p.pristine, s.datadir()); err != nil {
		return fail(fmt.Errorf("copy pristine datadir: %w", err))
	}
	// A port picked free can be taken before the server binds it; try again
	// with another one.
	for attempt := 0; ; attempt++ {
		err = s.launch(ctx, opts)
		if err == nil || attempt == 2 || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
		s.done = make(chan struct{})
	}
	if err != nil {
		return fail(err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fail(errors.New("provider closed while the server was starting"))
	}
	p.servers[id] = s
	p.mu.Unlock()
	p.log.Info("server started", "instance", id, "engine", p.engine.String(), "port", s.port,
		"datadir", s.datadir(), "startup", s.startup.Round(time.Millisecond))
	return s, nil
}

// launch starts the process and waits until it accepts connections.
func (s *Server) launch(ctx context.Context, opts testdbd.StartOptions) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	_ = os.Remove(s.socket)
	args := []string{
		"--no-defaults",
		"--datadir=" + s.datadir(),
		"--tmpdir=" + filepath.Join(s.rec.Root, "tmp"),
		"--socket=" + s.socket,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(s.dir, "mysqld.pid"),
		"--log-error=" + s.errorLog(),
	}
	if isRoot() {
		args = append(args, "--user=root")
	}
	args = append(args, opts.Args...)
	cmd := exec.Command(s.p.binary, args...)
	// The server dies with the daemon even if the daemon is killed with -9;
	// the next daemon's sweep removes its files. Its own process group keeps
	// a terminal's Ctrl-C from reaching it before the daemon shuts it down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", s.p.binary, err)
	}
	s.cmd = cmd
	s.rec.PID = cmd.Process.Pid
	s.rec.Started = s.started.UTC().Format(time.RFC3339Nano)
	if err := writeRecord(s.dir, s.rec); err != nil {
		return fmt.Errorf("write instance record: %w", err)
	}
	go s.wait()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		<-s.done
		return err
	}
	s.startup = time.Since(s.started)
	return nil
}

func (s *Server) wait() {
	err := s.cmd.Wait()
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if !stopping {
		s.exitErr = fmt.Errorf("server process %d exited unexpectedly (%v); last log lines: %s",
			s.cmd.Process.Pid, err, s.logTail())
	}
	close(s.done)
}

// waitReady polls the socket until the server answers, the process exits or
// ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "unix", s.socket, "root"
	cfg.Timeout = time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if _, err := os.Stat(s.socket); err == nil {
			if err := db.PingContext(ctx); err == nil {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("server exited during start-up: %s", s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("server did not answer within the start-up deadline: %w; last log lines: %s", ctx.Err(), s.logTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ID returns the instance id.
func (s *Server) ID() string { return s.id }

// Engine returns the server's flavor and version.
func (s *Server) Engine() testdbd.Engine { return s.p.engine }

// Admin returns the Unix socket endpoint, as root (socket authentication).
func (s *Server) Admin() testdbd.Endpoint {
	return testdbd.Endpoint{Socket: s.socket, User: "root"}
}

// Client returns the loopback TCP address handed to leases.
func (s *Server) Client() (string, int) { return "127.0.0.1", s.port }

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err says why the server exited unexpectedly; nil after Stop.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.exitErr
	default:
		return nil
	}
}

// Info describes the server, reading its memory and datadir usage now.
func (s *Server) Info(ctx context.Context) testdbd.InstanceInfo {
	onTmpfs, _ := IsTmpfs(s.datadir())
	info := testdbd.InstanceInfo{
		ID: s.id, Provider: "native", Engine: s.p.engine,
		Host: "127.0.0.1", Port: s.port, Socket: s.socket,
		Datadir: s.datadir(), DatadirOnTmpfs: onTmpfs,
		DatadirBytes: usedBytes(s.rec.Root, s.rec.Mounted),
		State:        testdbd.InstanceRunning,
		StartedAt:    s.started, StartupTime: s.startup,
	}
	if s.cmd != nil && s.cmd.Process != nil {
		info.PID = s.cmd.Process.Pid
		info.MemoryBytes = rss(info.PID)
	}
	info.FootprintBytes = info.MemoryBytes
	if onTmpfs {
		info.FootprintBytes += info.DatadirBytes
	}
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	select {
	case <-s.done:
		info.State, info.MemoryBytes = testdbd.InstanceStopped, 0
		if s.exitErr != nil {
			info.State, info.Err = testdbd.InstanceFailed, s.exitErr.Error()
		}
	default:
		if stopping {
			info.State = testdbd.InstanceStopped
		}
	}
	return info
}

// Stop kills the server (its data is disposable), waits for it to exit and
// removes its datadir, mount and record. It is safe to call more than once.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopping = true
		s.mu.Unlock()
		s.kill()
		if s.cmd != nil {
			select {
			case <-s.done:
			case <-ctx.Done():
				s.stopErr = fmt.Errorf("stop instance %s: %w", s.id, ctx.Err())
				return
			}
		}
		s.stopErr = removeInstanceFiles(s.dir, s.rec)
		s.p.forget(s.id)
		s.p.log.Info("server stopped", "instance", s.id)
	})
	return s.stopErr
}

func (s *Server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
	}
}

func (s *Server) datadir() string  { return filepath.Join(s.rec.Root, "data") }
func (s *Server) errorLog() string { return filepath.Join(s.dir, "error.log") }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.errorLog())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// rss returns a process's resident memory in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
