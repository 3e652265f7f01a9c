// Package lease hands out worker databases. It keeps, per template, the
// template database on each server instance that serves it and a pool of
// ready worker databases; it leases them with their own MySQL account and a
// TTL, makes callers wait in FIFO order when capacity is exhausted, and
// resets databases (timing every reset) when leases are reset, released or
// expire. It starts instances through an instance.Fleet within the
// capacity limits and replaces instances that die.
//
// Files by concern: manager.go (the Manager, its life and background
// work), template.go (templates' states, ensures, which build a name
// resolves to, and retirement), build.go (building template databases:
// the first build, the cache, replicas on other servers, what a failed
// build leaves), pool.go (worker databases and the filler that keeps
// pools full), lease.go (acquire, renew, reset, release, expiry),
// hosts.go (instances as the manager sees them), capacity.go (the memory
// budget), space.go (the per-lease and per-server space limits),
// health.go (templates whose databases cannot be made, and their
// backoff), xa.go (the XA transactions a test's ended sessions left
// prepared), engines.go (several engines per daemon), external.go
// (templates built by a migrator of the caller's), record.go (the ids of
// the live leases, kept in the state directory so that a restarted daemon
// can say what became of them), types.go (the requests and descriptions
// the API exchanges).
//
// It is larger than the other packages on purpose: pools, leases and
// capacity share one lock (Manager.mu), so that "no database is held by
// two leases" and "the limits hold" are invariants of one critical section
// instead of a protocol between packages.
//
// Errors about capacity name the daemon's flags (--max-databases and the
// like): the operator's fix is a flag, and that is the deliberate choice of
// this package; errors about the caller's own requests name no API path,
// so that the SDK, the CLI and REST callers can add their own way to fix
// them.
//
// It imports templates, strategies, accounts, schema, migrations, stats,
// instance and the root package; never the generated API types.
package lease
