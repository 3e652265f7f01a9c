// Package docker starts MySQL and MariaDB servers as Docker containers,
// through testcontainers-go, with their datadir on a tmpfs mount.
//
// testdbd does not rely on the official images' entrypoint: every container
// runs testdbd's own start script (instance/serverimage, shared with
// instance/kubernetes) with /bin/sh, as root, which initializes
// the tmpfs datadir (copying the image's pristine datadir when it carries
// one at /testdbd/seed, else with mariadb-install-db or mysqld
// --initialize-insecure), gives it to the image's mysql user, passes the
// TLS certificate and key the provider issued (instance/tlsca; the
// image's at /testdbd/tls when none is given), creates
// testdbd's admin account with --init-file and execs the server with the
// disposable-data settings and the hardening (instance.Hardening); the
// server drops to the mysql user (--user). The same code serves the
// official mysql:8.x/9.x and mariadb:10.11/11.x images and the images
// `make images` builds from Debian packages (MariaDB 10.11, MariaDB 11.8,
// MySQL 9.7), which are what the tests run (no registry is reachable here);
// the official images themselves are untested. When a server dies, its
// log is kept under <state-dir>/crashes/ before the container is removed.
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
