package instance

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// ContainerDatadir reads the filesystem holding path inside the mount
// namespace of process pid (a containerized server), through
// /proc/<pid>/root: the bytes used on it and whether it is a tmpfs. ok is
// false when the daemon cannot look there (another host, no root).
func ContainerDatadir(pid int, path string) (used int64, onTmpfs, ok bool) {
	if pid <= 0 {
		return 0, false, false
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/proc/"+strconv.Itoa(pid)+"/root"+path, &st); err != nil {
		return 0, false, false
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, st.Type == unix.TMPFS_MAGIC, true
}
