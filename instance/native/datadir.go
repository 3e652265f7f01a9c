//go:build linux

package native

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
)

// record is written to instances/<id>/record.json before anything is created
// for an instance, so that a daemon killed at any point can be cleaned up by
// the next one.
type record struct {
	ID      string `json:"id"`
	PID     int    `json:"pid,omitempty"`
	Root    string `json:"root"`    // the instance's tmpfs area: datadir, tmpdir, socket, error log
	Mounted bool   `json:"mounted"` // Root is a tmpfs mount of its own
	Outside bool   `json:"outside"` // Root is outside the instance directory (e.g. /dev/shm)
	Started string `json:"started,omitempty"`
}

func writeRecord(dir string, r record) error {
	b, _ := json.Marshal(r)
	tmp := filepath.Join(dir, "record.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "record.json"))
}

// sweep removes what a daemon killed with -9 left behind under this state
// directory: server processes, tmpfs mounts, datadirs. It only reads records
// of this state directory, so daemons with other state directories are never
// touched.
func (p *Provider) sweep(ctx context.Context) error {
	dir := filepath.Join(p.cfg.StateDir, "instances")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read instance records: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		idir := filepath.Join(dir, e.Name())
		var r record
		if b, err := os.ReadFile(filepath.Join(idir, "record.json")); err == nil {
			_ = json.Unmarshal(b, &r)
		}
		if r.PID > 0 && processRuns(r.PID, r.Root) {
			p.log.Info("stopping a server left by a previous daemon", "instance", e.Name(), "pid", r.PID)
			killAndWait(ctx, r.PID)
		}
		if err := removeInstanceFiles(idir, r); err != nil {
			return fmt.Errorf("remove leftovers of instance %s: %w", e.Name(), err)
		}
		p.log.Info("removed leftovers of a previous daemon", "instance", e.Name())
	}
	// Initializations a killed daemon did not finish.
	inits, _ := filepath.Glob(filepath.Join(p.runBase, "init-*"))
	for _, dir := range inits {
		if err := removeScratch(dir); err != nil {
			return fmt.Errorf("remove leftovers of an initialization: %w", err)
		}
	}
	return nil
}

// SweepStateDir removes what a native provider that ended without closing
// (its process killed, or ended by a test's timeout, which runs no
// cleanup) left of the state directory stateDir: server processes, tmpfs
// mounts, datadirs and unfinished initializations, and its empty run base.
// A provider starting on stateDir does the same; this is for a state
// directory nobody will start on again. It takes the state directory's
// lock first, so a live provider's directory is refused (testdbd.EConflict)
// and left alone. A directory that was never a native provider's (no
// instance records) is left as it is.
func SweepStateDir(ctx context.Context, stateDir string, log *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(stateDir, "instances")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	return instance.WithStateDirLock(stateDir, func(abs string) error {
		p := &Provider{cfg: Config{StateDir: abs}, log: log, runBase: runBaseOf(abs)}
		if err := p.sweep(ctx); err != nil {
			return err
		}
		_ = os.Remove(p.runBase) // only when empty
		return nil
	})
}

// processRuns reports whether pid is alive and is a server whose command line
// names root (so a reused pid is never killed).
func processRuns(pid int, root string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || root == "" {
		return false
	}
	return strings.Contains(string(cmdline), root)
}

func killAndWait(ctx context.Context, pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && isZombie(b) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isZombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// removeInstanceFiles unmounts and removes an instance's files.
func removeInstanceFiles(idir string, r record) error {
	return errors.Join(removeInstanceData(r), os.RemoveAll(idir))
}

// removeInstanceData detaches an instance's mount and removes its datadir
// area, but not its record.
func removeInstanceData(r record) error {
	var errs []error
	if r.Root != "" {
		if r.Mounted || isMountPoint(r.Root) {
			if err := unix.Unmount(r.Root, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", r.Root, err))
			}
		}
		if r.Outside {
			errs = append(errs, os.RemoveAll(r.Root))
		}
	}
	return errors.Join(errs...)
}

// isMountPoint reports whether path is listed in /proc/self/mountinfo.
func isMountPoint(path string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == path {
			return true
		}
	}
	return false
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// IsTmpfs reports whether path is on a tmpfs filesystem.
func IsTmpfs(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false, err
	}
	return st.Type == unix.TMPFS_MAGIC, nil
}

// usedBytes returns the bytes used on the filesystem holding path when it is
// a mount of its own, else the size of the files under path.
func usedBytes(path string, ownMount bool) int64 {
	if ownMount {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err == nil {
			return int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// rootOf returns where an instance's tmpfs area goes and whether it is a
// tmpfs mount of its own: under DatadirRoot when set, else under the run
// base (a mount per instance as root, a directory in /dev/shm otherwise).
func (p *Provider) rootOf(id string) (root string, mounted bool) {
	if p.cfg.DatadirRoot != "" {
		return filepath.Join(p.cfg.DatadirRoot, id), false
	}
	return filepath.Join(p.runBase, id), isRoot()
}

// makeRoot creates the instance's tmpfs area, owned by the server user: a
// tmpfs mount of its own when running as root, else a directory under
// DatadirRoot or /dev/shm. It refuses a directory that is not on tmpfs
// unless AllowDisk is set. The record is written first, so that a daemon
// killed at any point leaves nothing the next one cannot find.
func (p *Provider) makeRoot(idir, id string) (record, error) {
	r := record{ID: id, Outside: true}
	r.Root, r.Mounted = p.rootOf(id)
	if err := writeRecord(idir, r); err != nil {
		return r, fmt.Errorf("write instance record: %w", err)
	}
	if err := os.MkdirAll(r.Root, 0o700); err != nil {
		return r, fmt.Errorf("create datadir area: %w", err)
	}
	if r.Mounted {
		if err := p.mountTmpfs(r.Root, p.cfg.TmpfsBytes); err != nil {
			return r, err
		}
	}
	onTmpfs, err := IsTmpfs(r.Root)
	if err != nil {
		return r, fmt.Errorf("statfs %s: %w", r.Root, err)
	}
	if !onTmpfs && !p.cfg.AllowDisk {
		return r, testdbd.Errorf(testdbd.EInvalid,
			"datadir %s is not on tmpfs: every write would wait for the disk; use a tmpfs directory, or pass --allow-disk to accept it", r.Root)
	}
	if err := p.own(r.Root); err != nil {
		return r, err
	}
	for _, sub := range []string{"data", "tmp"} {
		if err := os.Mkdir(filepath.Join(r.Root, sub), 0o700); err != nil {
			return r, err
		}
		if err := p.own(filepath.Join(r.Root, sub)); err != nil {
			return r, err
		}
	}
	// secure_file_priv of MariaDB (see instance.Hardening): empty, and
	// not writable by the server.
	if err := os.Mkdir(filepath.Join(r.Root, "files"), 0o555); err != nil {
		return r, err
	}
	return r, os.Chmod(filepath.Join(r.Root, "files"), 0o555)
}

// mountTmpfs mounts a tmpfs of size bytes at dir, owned by the server user
// with mode 0700.
func (p *Provider) mountTmpfs(dir string, size int64) error {
	opts := fmt.Sprintf("size=%d,mode=0700", size)
	if p.cred != nil {
		opts += fmt.Sprintf(",uid=%d,gid=%d", p.cred.Uid, p.cred.Gid)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w (run as root, or set --datadir-root to a tmpfs directory such as /dev/shm)", dir, err)
	}
	return nil
}

// own gives path to the server user (nothing to do when servers run as the
// daemon's user).
func (p *Provider) own(path string) error {
	if p.cred == nil {
		return nil
	}
	if err := os.Lchown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
		return fmt.Errorf("give %s to the server user %s: %w", path, p.userName, err)
	}
	return nil
}

// removeScratch unmounts (if mounted) and removes a scratch directory.
func removeScratch(dir string) error {
	if isMountPoint(dir) {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return os.RemoveAll(dir)
}

// initPristine returns an initialized datadir for this binary, creating it
// once per state directory: mariadb-install-db for MariaDB, mysqld
// --initialize-insecure for MySQL, run as the server user in a scratch area
// of the run base (a tmpfs mount as root) and then copied into the cache.
// Every server starts from a copy.
func (p *Provider) initPristine(ctx context.Context) (string, error) {
	initArgs := instance.InitArgs(p.engine)
	opts := append([]string{p.binary, p.engine.String(), strconv.Itoa(instance.InnoDBLogFileBytes), currentUser(), p.userName, "v2"}, initArgs...)
	sum := sha256.Sum256([]byte(strings.Join(opts, "\x00")))
	cache := p.cfg.PristineDir
	if cache == "" {
		cache = filepath.Join(p.cfg.StateDir, "pristine")
	}
	dir := filepath.Join(cache, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return filepath.Join(dir, "data"), nil
	}
	p.log.Info("initializing a pristine datadir (once per state directory)", "engine", p.engine.String(), "dir", dir)
	start := time.Now()
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", err
	}
	// The initialization runs where servers run: under DatadirRoot when
	// set (a container without the right to mount gives one), else on a
	// tmpfs mount of its own as root.
	base, mount := p.runBase, isRoot()
	if p.cfg.DatadirRoot != "" {
		base, mount = p.cfg.DatadirRoot, false
	}
	work, err := os.MkdirTemp(base, "init-")
	if err != nil {
		return "", err
	}
	defer func() { _ = removeScratch(work) }()
	if mount {
		if err := p.mountTmpfs(work, p.cfg.TmpfsBytes); err != nil {
			return "", err
		}
	}
	if err := p.own(work); err != nil {
		return "", err
	}
	data := filepath.Join(work, "data")
	// The bootstrap server's temporary tables go to a directory of its own.
	tmpdir := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmpdir, 0o700); err != nil {
		return "", err
	}
	if err := p.own(tmpdir); err != nil {
		return "", err
	}
	var cmd *exec.Cmd
	switch p.engine.Flavor {
	case testdbd.MariaDB:
		installDB, err := findInstallDB(p.binary)
		if err != nil {
			return "", err
		}
		// root (the daemon's user) logs in by Unix socket, without a password.
		args := []string{"--no-defaults", "--datadir=" + data, "--skip-test-db",
			"--auth-root-authentication-method=socket", "--auth-root-socket-user=" + currentUser(),
			"--innodb-log-file-size=" + strconv.Itoa(instance.InnoDBLogFileBytes), "--tmpdir=" + tmpdir}
		if base := baseDir(p.binary); base != "" {
			args = append(args, "--basedir="+base)
		}
		args = append(args, initArgs...)
		cmd = exec.CommandContext(ctx, installDB, args...)
	default:
		cmd = exec.CommandContext(ctx, p.binary, "--no-defaults", "--initialize-insecure", "--datadir="+data,
			"--innodb-redo-log-capacity="+strconv.Itoa(instance.InnoDBLogFileBytes), "--innodb-doublewrite=OFF",
			"--tmpdir="+tmpdir)
	}
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("initialize datadir with %s as user %s: %w\n%s", cmd.Path, p.userName, err, tail(out, 2000))
	}
	tmp, err := os.MkdirTemp(cache, ".init-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(data, filepath.Join(tmp, "data"), nil); err != nil {
		return "", fmt.Errorf("copy the initialized datadir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "ready"), nil, 0o600); err != nil {
		return "", err
	}
	// Another provider sharing the cache may have finished first; keep its copy.
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		_ = os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			return "", err
		}
	}
	p.log.Info("pristine datadir ready", "took", time.Since(start).Round(time.Millisecond))
	return filepath.Join(dir, "data"), nil
}

// findInstallDB finds mariadb-install-db (or mysql_install_db) next to the
// server binary or in PATH.
func findInstallDB(binary string) (string, error) {
	base := baseDir(binary)
	for _, name := range []string{"mariadb-install-db", "mysql_install_db"} {
		for _, dir := range []string{filepath.Join(base, "bin"), filepath.Join(base, "scripts"), "/usr/bin"} {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", testdbd.Errorf(testdbd.EUnavailable,
		"mariadb-install-db not found: install it (apt-get install mariadb-server-core) or put it in PATH")
}

// baseDir is the installation prefix of a binary in <prefix>/sbin or <prefix>/bin.
func baseDir(binary string) string {
	return filepath.Dir(filepath.Dir(binary))
}

// copyTree copies the directory src into dst, giving every copy to cred's
// user when cred is set.
func copyTree(src, dst string, cred *syscall.Credential) error {
	chown := func(path string) error {
		if cred == nil {
			return nil
		}
		return os.Lchown(path, int(cred.Uid), int(cred.Gid))
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			return chown(target)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		return chown(target)
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
