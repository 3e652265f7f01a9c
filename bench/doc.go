// Command bench is testdbd's benchmark, a module of its own beside the
// product. It starts `testdbd serve` as a separate process and talks to it
// through the Go SDK over loopback, as a test suite would; its baselines
// use database/sql against servers it starts through the native provider.
//
// A run is a list of phases (phase.go), each in a file of its own
// (phase_*.go) with its plan, its results as the JSON keeps them, its run
// function and its part of the report:
//
//   - reset: the strategies' resets after the standard test (internal/workload:
//     100 tables, 5 written), beside Laravel-style truncation and migrate from
//     scratch on a disk-backed default-config server and on tmpfs;
//   - engines: the same on every engine the project runs in Docker, beside
//     Laravel-style truncation on the same server (skipping engines whose
//     image is missing);
//   - acquire: a lease from a ready pool, 1 and 32 clients at once, beside
//     GET /healthz from as many;
//   - concurrent: one lease at a time against 12 resetting at once;
//   - suite: a synthetic suite, serial and on parallel workers;
//   - big-tables: a reset after a small change to big tables against the
//     same change to small ones;
//   - cold-start: daemon start → template → worker databases ready, from the
//     migrations and from the template cache, and the idle server's memory.
//
// It writes the raw samples to benchmarks.json and the report computed from
// them alone to benchmarks.md:
//
//	go run . [--quick] [--out DIR] [--phases LIST] [--engines LIST]
//	go run . report [-w] FILE.json
//	go run . workload [-tables N] DIR
package main
