// Package serverimage is the contract between testdbd and a server image,
// shared by the providers that run servers in containers (instance/docker
// and instance/kubernetes): where the datadir and the temporary files go,
// the user the server runs as, the start script that initializes a
// memory-backed datadir and execs the server, the init SQL that creates
// testdbd's admin account, and the script that prints the server's version.
//
// An image qualifies when it has /bin/sh, mariadbd or mysqld in its PATH,
// mariadb-install-db (MariaDB) or mysqld --initialize-insecure (MySQL), and
// the user ServerUser. It may carry a pristine datadir at /testdbd/seed (a
// start then copies it instead of initializing) and a TLS certificate at
// /testdbd/tls/server-{cert,key}.pem.
package serverimage
