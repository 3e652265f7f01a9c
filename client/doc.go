// Package client is the Go SDK of testdbd: a typed client of the daemon's
// API and test helpers that give each test its own real MySQL or MariaDB
// database.
//
// # In a test
//
// One call returns a *sql.DB for the test's own database, leased for the
// test and given back through t.Cleanup; the daemon then resets it to the
// template by the strategy you chose, off the test's path. Main, called
// from TestMain, finds a daemon for the package's tests, or starts one:
//
//	func TestMain(m *testing.M) { client.Main(m, client.MainOptions{}) }
//
//	var opts = client.TestOptions{Template: "app", MigrationsDir: "../migrations"}
//
//	func TestSignup(t *testing.T) {
//		t.Parallel()
//		db := client.TestDB(t, opts)
//		// use db; nothing another test does can be seen here
//	}
//
// Reset(t, db) brings a TestDB database back to the template between
// subtests. TestTx instead hands the test a transaction that is rolled
// back at the end, followed by a reset with StrategyRollback, which rewinds
// the AUTO_INCREMENT counters the rolled-back inserts moved and restores
// any table that was committed to anyway. TestTxDSN does the same for code
// that opens its own pool: sql.Open("testdbd", dsn) connections run inside
// the test's transaction. TestLease gives the lease itself, for code that
// wants a DSN. Every error fails the test with the daemon's message, which
// says what to do; the helpers never exit the process. When a test fails,
// its database is kept, unreset, until the lease expires, and the test log
// says how to connect to it.
//
// The daemon is, in order: TestOptions.Addr (or Client); the one Main
// found or started; TESTDBD_ADDR; DefaultAddr. The token and the TLS CA
// come from TestOptions or TESTDBD_TOKEN and TESTDBD_TLS_CA.
//
// # The client
//
// New returns a Client with one method per API call (EnsureTemplate,
// AcquireLease, ResetLease, ReleaseLease, GetStats, ...). Errors the daemon
// answers are *Error, with the gRPC code (ErrorCode) and the daemon's
// message; a daemon that cannot be reached is an *UnreachableError.
// WithCAFile or WithTLSConfig talk to a daemon serving TLS.
//
// # Why REST, and a module of its own
//
// The client speaks the daemon's REST API (JSON through grpc-gateway), not
// gRPC (for gRPC, package github.com/testdbd/testdbd/grpcclient dials the
// generated typed client with the daemon's token). The REST API is the
// same service, served in-process by the same handlers, and the daemon's
// latency bars are measured through it; a gRPC client would make every
// user's test binary compile and link grpc, protobuf, genproto and the
// grpc-gateway runtime for a handful of calls. With REST the package
// imports the standard library and github.com/go-sql-driver/mysql, nothing
// else (a test checks this), and the same address, http://host:8080,
// serves the CLI, this package, curl and the PHP and Python recipes. The
// types are written by hand; a test compares each of them, field by field
// and type by type, with the daemon's OpenAPI document
// (api/openapi/testdb.swagger.json in the repository), so they cannot
// drift from the API unnoticed.
//
// It is a module of its own, github.com/testdbd/testdbd/client, with a low
// go line (see go.mod), so that a project that imports it lists only it,
// the MySQL driver and the driver's one dependency in its go.mod and
// go.sum, and can be on an older Go than the daemon. The daemon's module
// uses it through a replace directive (the CLI is built on it).
package client
