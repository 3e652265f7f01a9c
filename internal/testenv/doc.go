// Package testenv starts real servers for tests: native MariaDB/MySQL
// processes on tmpfs, through the project's own provider. Every helper
// registers cleanup, so servers, datadirs and mounts are removed even when a
// test fails.
//
// Test helpers only: it imports the providers (instance/native,
// instance/docker) and instance. Packages under internal/ are the
// module's own; nothing outside it can import them.
package testenv
