package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/testdbd/testdbd"
)

// LockStateDir takes an exclusive flock on dir/lock, so that one daemon at a
// time uses a state directory; the kernel releases it when the process
// dies, however it dies. It fails with EConflict naming the holder's pid.
func LockStateDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open state directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(f.Name())
		f.Close()
		return nil, testdbd.Errorf(testdbd.EConflict,
			"state directory %s is in use by another testdbd (pid %s): stop it or choose another --state-dir",
			dir, strings.TrimSpace(string(owner)))
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}

// WithStateDirLock runs fn with stateDir's absolute path while holding
// its lock: for work on what a provider that ended without closing left.
// A state directory a live provider holds is refused (testdbd.EConflict)
// and fn does not run.
func WithStateDirLock(stateDir string, fn func(abs string) error) error {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	lock, err := LockStateDir(abs)
	if err != nil {
		return err
	}
	defer lock.Close()
	return fn(abs)
}
