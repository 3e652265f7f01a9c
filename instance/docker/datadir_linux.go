package docker

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// datadirBytes returns the bytes used on the container's tmpfs datadir, seen
// through /proc/<pid>/root when the daemon shares the engine's host and may
// look there (as root); 0 otherwise.
func datadirBytes(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	var st unix.Statfs_t
	if err := unix.Statfs(fmt.Sprintf("/proc/%d/root%s", pid, Datadir), &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return 0
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}
