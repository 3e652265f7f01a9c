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
	Root    string `json:"root"`    // the instance's tmpfs area: datadir and tmpdir live here
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
	return nil
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
	errs = append(errs, os.RemoveAll(idir))
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

// makeRoot creates the instance's tmpfs area: a tmpfs mount of its own when
// running as root, else a directory under DatadirRoot or /dev/shm. It refuses
// a directory that is not on tmpfs unless AllowDisk is set.
func (p *Provider) makeRoot(idir, id string) (record, error) {
	r := record{ID: id}
	switch {
	case p.cfg.DatadirRoot != "":
		r.Root, r.Outside = filepath.Join(p.cfg.DatadirRoot, id), true
	case isRoot():
		r.Root, r.Mounted = filepath.Join(idir, "tmpfs"), true
	default:
		sum := sha256.Sum256([]byte(p.cfg.StateDir))
		r.Root, r.Outside = filepath.Join("/dev/shm", "testdbd-"+hex.EncodeToString(sum[:4]), id), true
	}
	if err := writeRecord(idir, r); err != nil {
		return r, fmt.Errorf("write instance record: %w", err)
	}
	if err := os.MkdirAll(r.Root, 0o700); err != nil {
		return r, fmt.Errorf("create datadir area: %w", err)
	}
	if r.Mounted {
		opts := fmt.Sprintf("size=%d,mode=0700", p.cfg.TmpfsBytes)
		if err := unix.Mount("tmpfs", r.Root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return r, fmt.Errorf("mount tmpfs at %s: %w (run as root, or set --datadir-root to a tmpfs directory such as /dev/shm)", r.Root, err)
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
	for _, sub := range []string{"data", "tmp"} {
		if err := os.MkdirAll(filepath.Join(r.Root, sub), 0o700); err != nil {
			return r, err
		}
	}
	return r, nil
}

// initPristine returns an initialized datadir for this binary, creating it
// once per state directory: mariadb-install-db for MariaDB, mysqld
// --initialize-insecure for MySQL. Every server starts from a copy.
func (p *Provider) initPristine(ctx context.Context) (string, error) {
	opts := []string{p.binary, p.engine.String(), strconv.Itoa(instance.InnoDBLogFileBytes), currentUser(), "v1"}
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
	tmp, err := os.MkdirTemp(cache, ".init-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data")
	// The bootstrap server's temporary tables go to a directory of its own:
	// several initializations may run at once.
	tmpdir := filepath.Join(tmp, "tmp")
	if err := os.MkdirAll(tmpdir, 0o700); err != nil {
		return "", err
	}
	var cmd *exec.Cmd
	switch p.engine.Flavor {
	case testdbd.MariaDB:
		installDB, err := findInstallDB(p.binary)
		if err != nil {
			return "", err
		}
		args := []string{"--no-defaults", "--datadir=" + data, "--skip-test-db",
			"--auth-root-authentication-method=socket", "--auth-root-socket-user=" + currentUser(),
			"--innodb-log-file-size=" + strconv.Itoa(instance.InnoDBLogFileBytes), "--tmpdir=" + tmpdir}
		if isRoot() {
			args = append(args, "--user=root")
		}
		if base := baseDir(p.binary); base != "" {
			args = append(args, "--basedir="+base)
		}
		cmd = exec.CommandContext(ctx, installDB, args...)
	default:
		args := []string{"--no-defaults", "--initialize-insecure", "--datadir=" + data,
			"--innodb-redo-log-capacity=" + strconv.Itoa(8<<20), "--tmpdir=" + tmpdir}
		if isRoot() {
			args = append(args, "--user=root")
		}
		cmd = exec.CommandContext(ctx, p.binary, args...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("initialize datadir with %s: %w\n%s", cmd.Path, err, tail(out, 2000))
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

// copyTree copies the pristine datadir into dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
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
		return out.Close()
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
