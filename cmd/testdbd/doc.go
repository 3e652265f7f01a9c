// Command testdbd is the test-database daemon and its command-line client.
//
//	testdbd serve [flags]      run the daemon
//	testdbd template ...       client commands: they talk to a daemon's
//	testdbd lease ...          REST API at --addr (see cli.go)
//	testdbd reset|renew|release LEASE_ID
//	testdbd status
//	testdbd version            print the version
//
// Every flag can also be set as TESTDBD_<NAME> (e.g. TESTDBD_HTTP_ADDR).
//
// It wires the daemon (providers, fleet, lease manager, API server) and is
// the only place that reads the environment and exits the process. The
// client commands use package client, like any other program would. It is
// two programs in one binary (serve.go and flags.go for the daemon, cli.go
// for the client commands), which is why it is larger than a package of
// one concern.
package main
