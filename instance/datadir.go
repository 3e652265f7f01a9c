package instance

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/random"
)

// watchable reports whether the database directories of a server of
// engine, whose datadir the daemon sees at dir (""), can be watched for
// schema changes, or says why not: the server must be MariaDB (whose
// tables, views and triggers are files in the database's directory: every
// DDL statement on them creates, renames or removes one), and the
// filesystem must give every change of a directory a modification time
// that differs from the last one read, even within one clock tick (Linux's
// fine-grained timestamps, tmpfs since 6.13).
func watchable(engine testdbd.Engine, dir string) (bool, string) {
	switch {
	case engine.Flavor != testdbd.MariaDB:
		return false, "MySQL keeps table definitions in its data dictionary, not in each database's directory"
	case dir == "":
		return false, "the datadir is not visible to the daemon"
	}
	if err := fineTimestamps(dir); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// Usage is what a datadir's filesystem holds.
type Usage struct {
	Size, Free int64 // bytes: the filesystem's size, and what is free
}

// DatadirUsage returns the size and free space of the filesystem holding
// the server's datadir; ok is false when the daemon cannot see it.
func (s *Member) DatadirUsage() (u Usage, ok bool) {
	if s.Datadir == "" {
		return u, false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.Datadir, &st); err != nil {
		return u, false
	}
	bsize := int64(st.Bsize) //nolint:unconvert // int64 on Linux, uint32 on macOS
	return Usage{Size: int64(st.Blocks) * bsize, Free: int64(st.Bavail) * bsize}, true
}

// DatabaseBytes returns the bytes the data files of database db take on
// the filesystem (allocated blocks, not apparent sizes); ok is false when
// the daemon cannot see the datadir. Definition files (.frm, .TRG, .TRN,
// .par, db.opt) are left out: they take a few kilobytes each and never grow
// with rows. This runs after every recycle of a released database and, for
// each leased one, at every space check: measuring a database again costs
// a system call per file written since it was last measured, where the
// kernel tells of writes (see sizes), else one per file.
func (s *Member) DatabaseBytes(db string) (n int64, ok bool) {
	if s.Datadir == "" || s.sizes == nil {
		return 0, false
	}
	return s.sizes.bytes(s.Datadir, db)
}

// dirBytes returns the bytes the data files of directory dir take and how
// many it measured, recording each in files and those with holes (fewer
// bytes allocated than their size) in holes, unless they are nil.
func dirBytes(dir string, files map[string]int64, holes map[string]bool) (n int64, measured int, ok bool) {
	// Each file is looked up relative to the open directory: a whole path
	// walked for each of a few hundred files cost half as much again.
	f, err := os.Open(dir)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, 0, false
	}
	fd := int(f.Fd())
	for _, name := range names {
		if definitionFile(name) {
			continue
		}
		var st unix.Stat_t
		measured++
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			n += st.Blocks * 512
			if files != nil {
				files[name] = st.Blocks * 512
			}
			if holes != nil && st.Blocks*512 < st.Size {
				holes[name] = true
			}
		}
	}
	return n, measured, true
}

// definitionFile reports whether name, a file of a database directory,
// holds definitions only (see DatabaseBytes).
func definitionFile(name string) bool {
	switch filepath.Ext(name) {
	case ".frm", ".TRG", ".TRN", ".par":
		return true
	}
	return name == "db.opt"
}

// fineTimestamps checks that changes to a directory of dir's filesystem,
// made right after its modification time was read, always give it a new
// modification time: files are created in a scratch directory under dir
// and its time read in between, a few hundred times.
func fineTimestamps(dir string) error {
	probe := filepath.Join(dir, ".testdbd-mtime-"+random.Hex(4))
	if err := os.Mkdir(probe, 0o700); err != nil {
		return fmt.Errorf("probe the datadir's timestamps: %w", err)
	}
	defer os.RemoveAll(probe)
	var last unix.Timespec
	for i := 0; i < 300; i++ {
		f, err := os.Create(filepath.Join(probe, fmt.Sprint(i)))
		if err != nil {
			return fmt.Errorf("probe the datadir's timestamps: %w", err)
		}
		f.Close()
		var st unix.Stat_t
		if err := unix.Stat(probe, &st); err != nil {
			return fmt.Errorf("probe the datadir's timestamps: %w", err)
		}
		if i > 0 && st.Mtim == last {
			return fmt.Errorf("the datadir's filesystem gives two changes of a directory the same modification time (coarse timestamps)")
		}
		last = st.Mtim
	}
	return nil
}
