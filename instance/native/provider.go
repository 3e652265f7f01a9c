//go:build linux

package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/tlsca"
)

// Provider starts native servers. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	log      *slog.Logger
	binary   string
	engine   testdbd.Engine
	lock     *os.File // flock on StateDir/lock
	pristine string   // initialized datadir copied for every server
	ca       *tlsca.Authority
	// cred is the server user's, when the daemon runs as root; nil
	// otherwise (servers run as the daemon's user).
	cred     *syscall.Credential
	userName string // the user servers run as
	// runBase holds the instances' areas (datadir, tmpdir, socket, error
	// log) unless DatadirRoot is set: /run/testdbd/<hash> as root (one tmpfs
	// mount per instance, reachable by the server user while the state
	// directory stays private), /dev/shm/testdbd-<hash> otherwise.
	runBase string

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
	if p.ca = cfg.CA; p.ca == nil {
		if p.ca, err = tlsca.Open(filepath.Join(abs, "tls")); err != nil {
			p.lock.Close()
			return nil, err
		}
	}
	if err := p.setUp(ctx); err != nil {
		p.lock.Close()
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

// setUp chooses the user servers run as and creates the run base.
func (p *Provider) setUp(ctx context.Context) error {
	p.runBase = runBaseOf(p.cfg.StateDir)
	p.userName = currentUser()
	if !isRoot() {
		return os.MkdirAll(p.runBase, 0o700)
	}
	var err error
	if p.cred, p.userName, err = serverUser(ctx, p.cfg.ServerUser, p.log); err != nil {
		return err
	}
	// Searchable by the server user (it must reach its own area), listable
	// by root only.
	if err := os.MkdirAll(p.runBase, 0o711); err != nil {
		return fmt.Errorf("create %s: %w", p.runBase, err)
	}
	for _, d := range []string{filepath.Dir(p.runBase), p.runBase} {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	if p.cfg.DatadirRoot != "" {
		if err := searchable(p.cfg.DatadirRoot, p.cred.Uid, p.cred.Gid); err != nil {
			return testdbd.Errorf(testdbd.EInvalid,
				"--datadir-root %s: servers run as user %s, which cannot reach it: %v; make it searchable (chmod o+x) or choose another directory",
				p.cfg.DatadirRoot, p.userName, err)
		}
	}
	return nil
}

// RunBase is where the servers of the state directory stateDir have their
// areas (datadir, tmpdir, socket, error log): /run/testdbd/<hash> as root,
// each a tmpfs mount of its own, /dev/shm/testdbd-<hash> otherwise (unless
// Config.DatadirRoot says otherwise).
func RunBase(stateDir string) (string, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", err
	}
	return runBaseOf(abs), nil
}

// runBaseOf is RunBase of stateDir, an absolute path.
func runBaseOf(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	hash := hex.EncodeToString(sum[:4])
	if !isRoot() {
		return filepath.Join("/dev/shm", "testdbd-"+hash)
	}
	return filepath.Join("/run", "testdbd", hash)
}

// serverUser looks up the user servers run as under a root daemon, creating
// DefaultServerUser (a system user with a group of its own, no home, no
// login shell) when name is empty and it does not exist yet.
func serverUser(ctx context.Context, name string, log *slog.Logger) (*syscall.Credential, string, error) {
	create := name == ""
	if name == "" {
		name = DefaultServerUser
	}
	u, err := user.Lookup(name)
	if err != nil && create {
		useradd, lerr := exec.LookPath("useradd")
		if lerr != nil {
			useradd = "/usr/sbin/useradd"
		}
		out, aerr := exec.CommandContext(ctx, useradd, "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "--comment", "testdbd database servers", name).CombinedOutput()
		// Another daemon may have created it at the same moment: look again.
		if u, err = user.Lookup(name); err != nil {
			return nil, "", testdbd.Errorf(testdbd.EUnavailable,
				"create the system user %s that database servers run as: %v %s: create it (useradd --system --user-group %s) and start again",
				name, aerr, out, name)
		}
		log.Info("created the system user database servers run as", "user", name, "uid", u.Uid)
	}
	if err != nil {
		return nil, "", testdbd.Errorf(testdbd.EInvalid, "server user %s: %v", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, "", testdbd.Errorf(testdbd.EInvalid, "server user %s: uid %q, gid %q", name, u.Uid, u.Gid)
	}
	if uid == 0 {
		return nil, "", testdbd.Errorf(testdbd.EInvalid, "server user %s is root: servers must run as an unprivileged user", name)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, name, nil
}

// searchable reports, by the permission bits of path and each directory
// above it, whether a process with uid and gid (and no other groups) may
// reach the entries of path.
func searchable(path string, uid, gid uint32) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	for dir := abs; ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		perm := fi.Mode().Perm()
		var can bool
		switch {
		case st.Uid == uid:
			can = perm&0o100 != 0
		case st.Gid == gid:
			can = perm&0o010 != 0
		default:
			can = perm&0o001 != 0
		}
		if !can {
			return fmt.Errorf("%s is mode %04o, owner %d:%d", dir, perm, st.Uid, st.Gid)
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

// ServerUser returns the operating-system user the servers run as.
func (p *Provider) ServerUser() string { return p.userName }

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
	if p.runBase != "" {
		_ = os.Remove(p.runBase) // only when empty: another provider may still use it
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
