// Package client is the Go SDK of testdbd: a typed client of the daemon's
// API and test helpers that give each test its own real MySQL or MariaDB
// database.
//
// # In a test
//
// One call returns a *sql.DB for the test's own database, leased for the
// test and given back through t.Cleanup; the daemon then resets it to the
// template by the strategy you chose, off the test's path:
//
//	func TestSignup(t *testing.T) {
//		t.Parallel()
//		db := client.TestDB(t, client.TestOptions{
//			Addr:          os.Getenv("TESTDBD_ADDR"), // "" means 127.0.0.1:8080
//			Template:      "app",
//			MigrationsDir: "../migrations", // uploaded once per test binary
//			Strategy:      client.StrategySnapshot,
//		})
//		// use db; nothing another test does can be seen here
//	}
//
// TestTx instead hands the test a transaction that is rolled back at the
// end, followed by a reset with StrategyRollback, which rewinds the
// AUTO_INCREMENT counters the rolled-back inserts moved and restores any
// table that was committed to anyway. TestLease gives the lease itself, for
// code that wants a DSN. The helpers read no environment variables and
// never exit the process; every error fails the test with the daemon's
// message. When a test fails, its database is kept, unreset, until the
// lease expires, and the test log says how to connect to it.
//
// # The client
//
// New returns a Client with one method per API call (EnsureTemplate,
// AcquireLease, ResetLease, ReleaseLease, GetStats, ...). Errors the daemon
// answers are *Error, with the gRPC code (ErrorCode) and the daemon's
// message, which says what to do; a daemon that cannot be reached is an
// *UnreachableError.
//
// # Why REST, and why not a module of its own
//
// The client speaks the daemon's REST API (JSON through grpc-gateway), not
// gRPC (for gRPC, package client/grpcclient dials the generated typed
// client with the daemon's token). The REST API is the same service, served in-process by the same
// handlers, and the daemon's latency bars are measured through it; a gRPC
// client would make every user's test binary compile and link grpc,
// protobuf, genproto and the grpc-gateway runtime (which the generated
// package imports) for a handful of calls. With REST the package imports
// the standard library and github.com/go-sql-driver/mysql, nothing else (a
// test checks this), and the same address, http://host:8080, serves the
// CLI, this package, curl and the PHP and Python recipes. The types are
// written by hand; a test compares each of them, field by field and type by
// type, with the daemon's OpenAPI document, so they cannot drift from the
// API unnoticed.
//
// The package lives in the daemon's module rather than a module of its
// own. Go builds only the packages a program imports, and module graph
// pruning keeps the daemon's other requirements out of its users' go.mod
// and go.sum: a module that imports this package and runs go mod tidy
// lists github.com/testdbd/testdbd, go-sql-driver/mysql and
// filippo.io/edwards25519 (the driver's one dependency), nothing of grpc,
// Docker or Prometheus. A separate module would have needed a replace
// directive in the daemon's go.mod (the CLI uses this package), which
// breaks `go install github.com/testdbd/testdbd/cmd/testdbd@latest`, and
// would version the client apart from the API it speaks. Since the package
// imports nothing of the daemon, moving it to a module of its own later
// takes a go.mod file and no code change.
package client
