package instance

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/random"
)

// watchableDatadir returns inst's datadir as the daemon sees it when its
// directories can be watched for schema changes: the server is MariaDB
// (whose tables, views and triggers are files in the database's
// directory: every DDL statement on them creates, renames or removes
// one), the instance exposes the datadir
// (testdbd.LocalDatadir) and the filesystem gives every change of a
// directory a modification time that differs from the last one read, even
// within one clock tick (Linux's fine-grained timestamps, tmpfs since
// 6.13). It returns "" otherwise, and why.
func watchableDatadir(inst testdbd.Instance) (string, string) {
	if inst.Engine().Flavor != testdbd.MariaDB {
		return "", "MySQL keeps table definitions in its data dictionary, not in each database's directory"
	}
	ld, ok := inst.(testdbd.LocalDatadir)
	if !ok {
		return "", "the provider does not expose the datadir"
	}
	dir := ld.LocalDatadir()
	if dir == "" {
		return "", "the datadir is not visible to the daemon"
	}
	if err := fineTimestamps(dir); err != nil {
		return "", err.Error()
	}
	return dir, ""
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
