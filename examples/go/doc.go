// Package store is a small data layer over the example schema
// (examples/migrations: users, posts, comments, an audit trigger, a view and
// a stored function). Its tests show the testdbd Go SDK: every test runs in
// parallel on its own real MariaDB database, leased from a daemon and reset
// after the test.
//
//	TESTDBD_ADDR=127.0.0.1:8080 go test ./examples/go/   # with `make run` in another terminal
//
// Without TESTDBD_ADDR the tests are skipped; `make test` runs them against
// a daemon it starts (cmd/testdbd's TestExamples).
package store
