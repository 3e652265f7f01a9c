// Package testdbd is the vocabulary of the testdbd daemon: server
// instances and the providers that start them, engines, reset strategies
// and their reports, and the error type whose codes the API maps to gRPC
// and HTTP statuses.
//
// It imports only the standard library; every other package of the module
// may import it. The implementations live in subpackages:
//
//	instance, instance/native, instance/docker   running servers (providers, fleet, settings)
//	schema                                      capturing a database's definition, cloning it
//	migrations                                  reading, hashing and running migration files
//	accounts                                    per-lease and per-build MySQL accounts
//	strategies                                  dirty-table detection and the three resets
//	binlog                                      what the binary log says tests did (prepared XA, schema changes)
//	templates                                   what a template is and how one is built
//	stats                                       latency percentiles and Prometheus metrics
//	lease                                       pools, leases, capacity, background work
//	server                                      the v1 API over gRPC and REST
//	client (a module of its own), grpcclient    the Go SDK over REST; the typed gRPC client
//	cmd/testdbd                                 the daemon and CLI
//	bench (a module of its own)                 the benchmark
//
// The import graph reads top-down: cmd → server → (lease, templates) →
// (strategies, accounts, schema, migrations, stats) → (instance, binlog) → this
// package. Only server, cmd and grpcclient import the generated API types.
package testdbd
