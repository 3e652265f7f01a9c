//go:build !linux

package instance

// ContainerDatadir reports nothing: only on Linux, sharing the server's
// host, can the daemon look into a container's mount namespace.
func ContainerDatadir(int, string) (used int64, onTmpfs, ok bool) { return 0, false, false }
