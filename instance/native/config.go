package native

import (
	"log/slog"

	"github.com/testdbd/testdbd/instance/tlsca"
)

// DefaultTmpfsBytes is the size of each instance's tmpfs mount.
const DefaultTmpfsBytes = 2 << 30

// Config configures a Provider.
type Config struct {
	// StateDir holds the pristine datadir, instance records and (as root)
	// the tmpfs mount points. Required.
	StateDir string
	// Binary is the server binary (mariadbd or mysqld). Empty means search
	// PATH, /usr/sbin and /usr/local/mysql/bin.
	Binary string
	// DatadirRoot is where datadirs are created when not mounting tmpfs.
	// Empty means a tmpfs mount per instance as root, /dev/shm otherwise.
	DatadirRoot string
	// AllowDisk lets datadirs live on a filesystem that is not tmpfs
	// (benchmark baselines). Without it such a datadir is refused.
	AllowDisk bool
	// TmpfsBytes is the size of each instance's tmpfs mount.
	TmpfsBytes int64
	// PristineDir caches initialized datadirs; empty means StateDir/pristine.
	// Several providers may share one.
	PristineDir string
	// ServerUser is the operating-system user the servers run as when the
	// daemon runs as root (servers never run as root). Empty means
	// DefaultServerUser, created as a system user if it does not exist.
	// When the daemon is not root, servers run as the daemon's user and
	// ServerUser is ignored.
	ServerUser string
	// CA signs each server's TLS certificate; nil means the authority kept
	// in StateDir/tls (created when missing).
	CA *tlsca.Authority
	// Logger receives progress; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultServerUser is the system user servers run as under a root daemon.
const DefaultServerUser = "testdbd"
