//go:build linux

package native

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/random"
)

// maxSocketPath is the longest Unix socket path Linux accepts.
const maxSocketPath = 107

// Process is one native server process.
type Process struct {
	p       *Provider
	id      string
	dir     string // instances/<id>
	rec     record
	socket  string
	port    int
	cmd     *exec.Cmd
	started time.Time
	startup time.Duration
	tls     atomic.Pointer[tlsca.Server] // its certificate; the files are in its area's tls/

	life *instance.Lifecycle // of the current launch
}

var _ testdbd.Instance = (*Process)(nil)

// Start starts a server on a copy of the pristine datadir, on a free
// loopback port and a Unix socket, and waits until it answers.
func (p *Provider) Start(ctx context.Context, opts testdbd.StartOptions) (testdbd.Instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, testdbd.Errorf(testdbd.EUnavailable, "native provider is closed")
	}
	p.mu.Unlock()

	id := "n-" + random.Hex(4)
	s := &Process{p: p, id: id, dir: filepath.Join(p.cfg.StateDir, "instances", id), life: instance.NewLifecycle()}
	root, _ := p.rootOf(id)
	s.socket = filepath.Join(root, "mysqld.sock")
	if len(s.socket) > maxSocketPath {
		return nil, testdbd.Errorf(testdbd.EInvalid,
			"datadir directory %s is too long for a Unix socket path (%d > %d bytes): choose a shorter --datadir-root",
			filepath.Dir(root), len(s.socket), maxSocketPath)
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
	if err := copyTree(p.pristine, s.datadir(), p.cred); err != nil {
		return fail(fmt.Errorf("copy pristine datadir: %w", err))
	}
	if err := s.writeTLS(opts.TLSHosts); err != nil {
		return fail(err)
	}
	// A port picked free can be taken before the server binds it; try again
	// with another one.
	for attempt := 0; ; attempt++ {
		err = s.launch(ctx, opts)
		if err == nil || attempt == 2 || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
		s.life = instance.NewLifecycle()
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
func (s *Process) launch(ctx context.Context, opts testdbd.StartOptions) error {
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = instance.FreePort(); err != nil {
			return err
		}
	}
	s.port = port
	_ = os.Remove(s.socket)
	args := []string{
		"--no-defaults",
		"--datadir=" + s.datadir(),
		"--tmpdir=" + filepath.Join(s.rec.Root, "tmp"),
		"--socket=" + s.socket,
		"--port=" + strconv.Itoa(port),
		"--bind-address=" + cmp.Or(opts.BindAddress, "127.0.0.1"),
		"--pid-file=" + filepath.Join(s.rec.Root, "mysqld.pid"),
		"--log-error=" + s.errorLog(),
		"--ssl-cert=" + filepath.Join(s.rec.Root, "tls", tlsca.CertFile),
		"--ssl-key=" + filepath.Join(s.rec.Root, "tls", tlsca.KeyFile),
		"--ssl-ca=" + filepath.Join(s.rec.Root, "tls", tlsca.CAFile),
	}
	args = append(args, opts.Args...)
	args = append(args, instance.Hardening(s.p.engine, filepath.Join(s.rec.Root, "files"))...)
	cmd := exec.Command(s.p.binary, args...)
	cmd.Dir = s.rec.Root
	// The server runs as the server user (never as root). It dies with the
	// daemon even if the daemon is killed with -9; the next daemon's sweep
	// removes its files. Its own process group keeps a terminal's Ctrl-C
	// from reaching it before the daemon shuts it down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.p.cred}
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
	go s.wait(cmd, s.life)
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		<-s.life.Done()
		return err
	}
	s.startup = time.Since(s.started)
	return nil
}

func (s *Process) wait(cmd *exec.Cmd, life *instance.Lifecycle) {
	_ = cmd.Wait()
	life.Exited(func() error { return s.death(cmd.Process.Pid, instance.ExitOf(cmd.ProcessState)) })
}

// death says why the server exited, from how it ended and what its error
// log says about that (instance.DeathCause), and keeps the log under the
// state directory before the datadir area (where it lives) is removed.
func (s *Process) death(pid int, exit instance.Exit) error {
	log := s.readErrorLog()
	kept := "its error log was not kept"
	if path, err := instance.KeepCrashLog(s.p.cfg.StateDir, s.id, log); err == nil {
		kept = "error log kept at " + path
	} else {
		kept += ": " + err.Error()
	}
	return fmt.Errorf("server process %d ended unexpectedly: it %s; %s",
		pid, instance.DeathCause(exit, string(log)), kept)
}

// waitReady pings the server on its socket until it answers, the process
// exits or the start-up deadline passes.
func (s *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return instance.WaitReady(ctx, s.Admin(), s.life, s.logTail)
}

// writeTLS issues the server's certificate (for the loopback addresses and
// hosts) and writes it with its key into the area's tls/, a directory of
// the server user's, mode 0700, the files mode 0600.
func (s *Process) writeTLS(hosts []string) error {
	dir := filepath.Join(s.rec.Root, "tls")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create the server's TLS directory: %w", err)
	}
	if err := s.p.own(dir); err != nil {
		return err
	}
	return s.issueTLS(hosts)
}

// issueTLS issues a certificate for hosts and writes it and its key into
// the area's tls/ (replacing what is there).
func (s *Process) issueTLS(hosts []string) error {
	srv, err := s.p.ca.Issue(hosts...)
	if err != nil {
		return err
	}
	uid, gid := -1, -1
	if c := s.p.cred; c != nil {
		uid, gid = int(c.Uid), int(c.Gid)
	}
	if err := srv.WriteFiles(filepath.Join(s.rec.Root, "tls"), uid, gid); err != nil {
		return err
	}
	s.tls.Store(srv)
	return nil
}

// TLSCA returns the certificate of the authority that signed the server's.
func (s *Process) TLSCA() []byte { return s.tls.Load().CAPEM }

// TLSNotAfter returns when the server's certificate expires.
func (s *Process) TLSNotAfter() time.Time { return s.tls.Load().NotAfter }

// RenewTLS writes a new certificate for the same hosts and its key over
// the server's; FLUSH SSL (ALTER INSTANCE RELOAD TLS) makes it use them.
func (s *Process) RenewTLS(context.Context) error { return s.issueTLS(s.tls.Load().Hosts) }

// ID returns the instance id.
func (s *Process) ID() string { return s.id }

// Engine returns the server's flavor and version.
func (s *Process) Engine() testdbd.Engine { return s.p.engine }

// Admin returns the Unix socket endpoint: MariaDB's account named after the
// daemon's operating-system user (socket authentication: root when the
// daemon runs as root), MySQL's root (no password, socket only).
func (s *Process) Admin() testdbd.Endpoint {
	user := "root"
	if s.p.engine.Flavor == testdbd.MariaDB {
		user = currentUser()
	}
	return testdbd.Endpoint{Socket: s.socket, User: user}
}

// ClientAddr returns the loopback TCP address handed to leases.
func (s *Process) ClientAddr() (string, int) { return "127.0.0.1", s.port }

// Done is closed when the server process has exited.
func (s *Process) Done() <-chan struct{} { return s.life.Done() }

// Err says why the server exited unexpectedly; nil after Stop.
func (s *Process) Err() error { return s.life.Err() }

// Info describes the server, reading its memory and datadir usage now.
func (s *Process) Info(ctx context.Context) testdbd.InstanceInfo {
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
	info.State, info.Err = s.life.State()
	if info.State != testdbd.InstanceRunning {
		info.MemoryBytes = 0
	}
	return info
}

// Stop kills the server (its data is disposable), waits for it to exit and
// removes its datadir, mount and record. It is safe to call more than once.
// A server that has not exited when ctx ends (it was sent SIGKILL, so it
// is on its way) has its files removed all the same: the mount is detached
// at once and its memory freed when the process is gone, and its record
// kept for the next provider's sweep. Stop then returns ctx's error.
func (s *Process) Stop(ctx context.Context) error {
	return s.life.Stop(func() error {
		s.kill()
		var late error
		if s.cmd != nil {
			select {
			case <-s.life.Done():
			case <-ctx.Done():
				late = fmt.Errorf("stop instance %s: it had not exited when the deadline passed (its files were removed): %w", s.id, ctx.Err())
			}
		}
		var err error
		if late == nil {
			err = removeInstanceFiles(s.dir, s.rec)
		} else {
			// The record stays, so that the next provider on this state
			// directory kills the process if it still runs.
			err = removeInstanceData(s.rec)
		}
		s.p.forget(s.id)
		s.p.log.Info("server stopped", "instance", s.id)
		return errors.Join(late, err)
	})
}

func (s *Process) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
	}
}

func (s *Process) datadir() string  { return filepath.Join(s.rec.Root, "data") }
func (s *Process) errorLog() string { return filepath.Join(s.rec.Root, "error.log") }

// LocalDatadir returns the datadir: the daemon started the process on its
// own filesystem.
func (s *Process) LocalDatadir() string { return s.datadir() }

// readErrorLog returns the end of the error log (at most
// instance.MaxCrashLogBytes). It lives in a directory the server user owns,
// so it is opened without following a symbolic link.
func (s *Process) readErrorLog() []byte {
	f, err := os.OpenFile(s.errorLog(), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return []byte(fmt.Sprintf("(no error log: %v)", err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > instance.MaxCrashLogBytes {
		_, _ = f.Seek(fi.Size()-instance.MaxCrashLogBytes, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, instance.MaxCrashLogBytes))
	return b
}

// logTail says what the error log says so far (see instance.Explain).
func (s *Process) logTail() string { return instance.Explain(string(s.readErrorLog())) }

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
