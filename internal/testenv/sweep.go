package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/instance/native"
)

// The temporary directories of a test process are named
// tdb<pid>.<kind><random> in the system's temporary directory, so that
// what a test process that died left can be told from a live one's. A
// test's cleanup never runs when its process is killed or ended by go
// test's -timeout; SweepDead, run once by every test process before it
// makes its first directory, removes what such processes left: native
// servers' mounts and datadirs, Docker containers, the directories.
const (
	kindState    = "s" // StateDir: native, Kubernetes and daemon tests
	kindDocker   = "d" // a Docker provider's state directory
	kindPristine = "p" // PristineDir
)

// tempDir makes a temporary directory of this test process.
func tempDir(kind string) (string, error) {
	sweepOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		swept, err := SweepDead(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: removing what dead test processes left: %v\n", err)
		}
		if len(swept) > 0 {
			fmt.Fprintf(os.Stderr, "testenv: removed what %d directories of dead test processes held: %s\n",
				len(swept), strings.Join(swept, " "))
		}
	})
	return os.MkdirTemp("", fmt.Sprintf("tdb%d.%s", os.Getpid(), kind))
}

var sweepOnce sync.Once

// SweepDead removes the temporary directories of test processes that are
// no longer running, and what the providers of their state directories
// left: native servers, mounts and datadirs, and Docker containers. It returns the directories it removed. A directory whose provider
// is still held by a live process (a daemon outliving its test, say) is
// left alone.
func SweepDead(ctx context.Context, log *slog.Logger) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "tdb*.*"))
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	for _, dir := range dirs {
		kind, ok := deadKind(filepath.Base(dir))
		if !ok || !ours(dir) {
			continue
		}
		// A state directory of any kind may have been a native or a Docker
		// provider's (a daemon's started by a test names its own provider).
		var err error
		if kind != kindPristine {
			err = native.SweepStateDir(ctx, dir, log)
			if ok, _ := DockerAvailable(); err == nil && ok {
				err = docker.SweepStateDir(ctx, dir, log)
			} else if err == nil && kind == kindDocker && containersMayRemain(dir) {
				continue // kept until its containers can be removed
			}
		}
		if errors.Is(err, os.ErrNotExist) || testdbd.ErrorCode(err) == testdbd.EConflict {
			continue // another test process swept it first, or a live process holds it
		}
		if err == nil {
			err = os.RemoveAll(dir)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
			continue
		}
		swept = append(swept, dir)
	}
	return swept, errors.Join(errs...)
}

// tempName is the name os.MkdirTemp gives a test process's directory:
// tdb<pid>.<kind><random digits>.
var tempName = regexp.MustCompile(`^tdb([1-9][0-9]*)\.([sdp])[0-9]+$`)

// deadKind returns the kind of a temporary directory of a test process
// that is no longer running, named as tempDir names them.
func deadKind(name string) (string, bool) {
	m := tempName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid == os.Getpid() {
		return "", false
	}
	// A live pid, even another program's that took a dead test's number,
	// keeps the directory: leaving one for later is harmless, removing a
	// live test's is not.
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return "", false
	}
	return m[2], true
}

// ours reports whether path is a directory as tempDir makes them: a real
// directory (not a link), of this user, private (0700). The system's
// temporary directory is everyone's: whatever else matches the name is
// left alone, and nothing in a directory another user could have made is
// believed (its records name processes to kill and paths to remove).
func ours(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// containersMayRemain reports whether a Docker state directory's provider
// may have started containers: it took the directory's lock.
func containersMayRemain(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "lock"))
	return err == nil
}
