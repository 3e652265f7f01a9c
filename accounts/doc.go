// Package accounts manages the MySQL accounts testdbd hands out: one per
// lease (and, for builds, one per template), with every privilege on one
// database and nothing else, a random name and password. It also ends an
// account's sessions, which resets and expiries rely on.
//
// It imports the root package and the standard library (and the MySQL
// driver, to log in once with new credentials).
package accounts
