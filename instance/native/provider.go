//go:build linux

package native

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sync"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
)

// Provider starts native servers. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	log      *slog.Logger
	binary   string
	engine   testdbd.Engine
	lock     *os.File // flock on StateDir/lock
	pristine string   // initialized datadir copied for every server

	mu      sync.Mutex
	servers map[string]*Process
	closed  bool
}

var _ testdbd.Provider = (*Provider)(nil)

// New finds the server binary, detects its flavor and version, takes the
// state directory (refusing one another daemon holds), removes what a killed
// daemon left behind, and initializes the pristine datadir if needed.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.StateDir == "" {
		return nil, testdbd.Errorf(testdbd.EInvalid, "native provider: a state directory is required")
	}
	if cfg.TmpfsBytes == 0 {
		cfg.TmpfsBytes = DefaultTmpfsBytes
	}
	p := &Provider{cfg: cfg, log: cfg.Logger, servers: map[string]*Process{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	var err error
	if p.binary, err = FindBinary(cfg.Binary); err != nil {
		return nil, err
	}
	if p.engine, err = DetectEngine(ctx, p.binary); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	p.cfg.StateDir = abs
	if err := os.MkdirAll(filepath.Join(abs, "instances"), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if p.lock, err = instance.LockStateDir(abs); err != nil {
		return nil, err
	}
	if err := p.sweep(ctx); err != nil {
		p.lock.Close()
		return nil, err
	}
	if p.pristine, err = p.initPristine(ctx); err != nil {
		p.lock.Close()
		return nil, err
	}
	return p, nil
}

// Name returns "native".
func (p *Provider) Name() string { return "native" }

// Engine returns the flavor and version of the server binary.
func (p *Provider) Engine() testdbd.Engine { return p.engine }

// Close stops every server, removes their datadirs and mounts, and releases
// the state directory.
func (p *Provider) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	servers := make([]*Process, 0, len(p.servers))
	for _, s := range p.servers {
		servers = append(servers, s)
	}
	lock := p.lock
	p.lock = nil
	p.mu.Unlock()
	var errs []error
	for _, s := range servers {
		errs = append(errs, s.Stop(ctx))
	}
	if lock != nil {
		errs = append(errs, lock.Close())
	}
	return errors.Join(errs...)
}

// FindBinary returns the server binary to run: the given path, or mariadbd
// or mysqld from PATH, /usr/sbin or /usr/local/mysql/bin.
func FindBinary(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", testdbd.Errorf(testdbd.EInvalid, "server binary %s: %w", path, err)
		}
		return path, nil
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/mysql/bin", "/usr/local/sbin"} {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", testdbd.Errorf(testdbd.EUnavailable,
		"no mariadbd or mysqld found in PATH, /usr/sbin or /usr/local/mysql/bin: install one (apt-get install mariadb-server-core), pass --mysqld, or use --provider docker")
}

// DetectEngine runs `<binary> --version` and parses the flavor and version.
func DetectEngine(ctx context.Context, binary string) (testdbd.Engine, error) {
	out, err := exec.CommandContext(ctx, binary, "--no-defaults", "--version").CombinedOutput()
	if err != nil {
		return testdbd.Engine{}, fmt.Errorf("%s --version: %w: %s", binary, err, out)
	}
	e, err := testdbd.ParseEngine(string(out))
	if err != nil {
		return testdbd.Engine{}, fmt.Errorf("detect engine of %s: %w", binary, err)
	}
	return e, nil
}

func isRoot() bool { return os.Geteuid() == 0 }

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

func (p *Provider) forget(id string) {
	p.mu.Lock()
	delete(p.servers, id)
	p.mu.Unlock()
}
