// Package docker starts MySQL and MariaDB servers as Docker containers,
// through testcontainers-go, with their datadir on a tmpfs mount.
//
// testdbd does not rely on the official images' entrypoint: every container
// runs testdbd's own start script with /bin/sh, which initializes the tmpfs
// datadir (copying the image's pristine datadir when it carries one at
// /testdbd/seed, else with mariadb-install-db or mysqld
// --initialize-insecure), creates testdbd's admin account with --init-file
// and execs the server with the disposable-data settings. The same code
// serves the official mysql:8.x/9.x and mariadb:10.11/11.x images and the
// image `make image` builds from the host's Debian packages. Only the latter
// is tested here (no registry is reachable); the official-image path is
// written for them but untested.
//
// Containers use the host's network and listen on 127.0.0.1 on a free port.
// They carry the labels io.testdbd.owner (a hash of the host name and the
// state directory), io.testdbd.instance and io.testdbd.state-dir. Ryuk, the
// testcontainers reaper, cannot be pulled without a registry and must be
// disabled (TESTCONTAINERS_RYUK_DISABLED=true): the provider removes its
// own containers on Close, and at start removes the ones a daemon of the
// same state directory killed with -9 left behind.
//
// It imports instance, the root package and testcontainers-go with the
// moby client.
package docker
