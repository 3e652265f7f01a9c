// Command bench is testdbd's benchmark. In one invocation it builds the
// standard workload (internal/workload: 100 InnoDB tables, a third with
// foreign keys, 10 seeded, views, triggers, a procedure; a "test" that
// writes 5 tables) and measures, with variants interleaved in batches after
// a warm-up:
//
//   - reset latency of Laravel-style truncation on a disk-backed server with
//     default durability and on a tmpfs server, of migrate-from-scratch on
//     both, and of testdbd's truncate, snapshot and rollback strategies
//     through the REST API of a daemon running as a separate process;
//   - acquire latency from a ready pool with 1, 8 and 32 concurrent clients,
//     beside GET /healthz from as many clients (the REST floor);
//   - clean databases handed out per second by 8 looping workers, beside
//     each strategy's least loop (loop.go: the same workers running the
//     SQL a hand-out needs and two REST round trips, no daemon work), so
//     that a rate above what the cores allow at the least's CPU time per
//     clean database is reported as not reachable here;
//   - daemon start → template built → worker databases ready, and the idle
//     server's memory;
//   - reset cost at 100 versus 1,000 tables with the same test;
//   - a synthetic suite, serial and parallel, per variant;
//   - the CPU time the server, the daemon and the clients spend per reset,
//     per clean database and per concurrent round (cpu.go), beside the
//     floor's, with the rate the machine's cores allow at each cost, and
//     how many cores a reset keeps busy alone, which bounds how little it
//     can slow down when the concurrent phase's leases share the cores
//     (concurrent.go);
//   - beside the resets, at 100 and at 1,000 tables, each strategy's raw
//     floor (floor.go: the server's own restore of the dirtied tables, one
//     round trip) and the least any exact reset through REST does (the
//     floor after a REST round trip and one read of the table state), so
//     that a bar below that least is reported as not reachable here;
//   - the same resets, floors and least beside each other on every engine
//     the project runs in Docker containers (engines.go: MariaDB 10.11 and
//     11.8, MySQL 9.7, from the images `make images` builds; --engines
//     picks some), each on a daemon of its own.
//
// It writes the raw samples to benchmarks.json and the report computed from
// them to benchmarks.md with a chart, benchmarks-reset.svg.
//
//	go run ./cmd/bench [--quick] [--out DIR] [--engines LIST]   run, write DIR/benchmarks.{json,md} and the chart
//	go run ./cmd/bench report [-w] FILE.json     recompute the report from the raw samples
//
// It is a client of the daemon like any test suite: it starts `testdbd
// serve` as a separate process and talks to it through the Go SDK
// (package client) over loopback; its baselines use database/sql directly.
// It is the largest package because it is a whole program (phases,
// results, report, chart), not because one concern grew.
package main
