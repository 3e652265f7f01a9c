// Package native starts MySQL and MariaDB servers as child processes with
// their datadir on tmpfs.
//
// Layout under the state directory (private to the daemon's user):
//
//	lock                       held (flock) while a daemon uses the directory
//	pristine/<key>/            an initialized datadir, copied for every server
//	instances/<id>/record.json what to clean up if the daemon dies (pid, area)
//	crashes/<id>-<time>.log    the error logs of servers that died (the last 20)
//	tls/ca.pem                 the authority that signs the servers' TLS certificates (instance/tlsca)
//
// Each server's area holds its datadir (data/), tmpdir (tmp/), Unix socket,
// pid file, error log, an empty directory (files/) for MariaDB's
// secure_file_priv, and its TLS certificate and key (tls/, the server
// user's alone). As root it is a tmpfs mount of its own at
// /run/testdbd/<hash of the state directory>/<id>, and the server runs as
// an unprivileged user (Config.ServerUser, by default the system user
// testdbd, created if missing) that owns the area and reaches nothing else
// of the daemon's; otherwise the area is a directory under /dev/shm (or
// Config.DatadirRoot) and the server runs as the daemon's user. At start
// the provider removes whatever a previous daemon killed with -9 left
// behind under the same state directory.
//
// Finding and checking the server binary, initializing and copying
// datadirs on tmpfs mounts, starting and supervising the process, and
// sweeping a killed daemon's leftovers are one provider's lifecycle on the
// host, so they share one package.
//
// It imports instance and the root package, and golang.org/x/sys/unix for
// mounts. Its servers run on Linux only: elsewhere (provider_other.go) New
// and FindBinary fail, saying to use --provider docker.
package native
