// Package native starts MySQL and MariaDB servers as child processes with
// their datadir on tmpfs.
//
// Layout under the state directory:
//
//	lock                      held (flock) while a daemon uses the directory
//	pristine/<key>/           an initialized datadir, copied for every server
//	instances/<id>/record.json what to clean up if the daemon dies (pid, mount)
//	instances/<id>/tmpfs/     the instance's tmpfs mount when running as root
//	instances/<id>/mysqld.sock, error.log
//
// When not running as root, datadirs live under /dev/shm instead of a mount
// of their own. At start the provider removes whatever a previous daemon
// killed with -9 left behind under the same state directory.
//
// It imports instance and the root package, and golang.org/x/sys/unix for
// mounts. Its servers run on Linux only: elsewhere (provider_other.go) New
// and FindBinary fail, saying to use --provider docker.
package native
