// Package strategies brings a worker database back to its template: it
// ends the lease's sessions, finds the tables a test changed from a
// baseline taken after the previous reset (one query for the whole
// database), and restores them by the truncate, snapshot or rollback
// strategy. Every reset is timed by phase and ends with a new baseline.
//
// Detection reads InnoDB's per-table MODIFIED_COUNTER, AUTOINC and TABLE_ID
// (information_schema.INNODB_SYS_TABLESTATS on MariaDB, INNODB_TABLESTATS on
// MySQL): the counter moves for every row written, rolled back or cascaded.
// Schema changes are caught per database, by watching its directory
// (Target.Dir) or from the statements the binary log holds in it (package
// binlog), or else by the server's statement counters (see DDLCounter);
// and by tables appearing, vanishing or being rebuilt. Any of them, a
// missing baseline, or detector preconditions that do not hold make the
// reset check every object and every table against the template. Before
// anything else, the XA transactions a test left prepared in the database
// are rolled back (from the binary log too).
//
// A reset is one algorithm whose steps share what detection read, so it
// is one package, in files by phase: reset.go (Target, Baseline, Reset
// and the run of one reset), sessions.go (ending the lease's sessions,
// and the XA transactions a test leaves prepared), detect.go (the
// observation and what it says changed), verify.go (what the checksums
// say, and the rollback strategy's check), plan.go (what a restore does
// to each table and the SQL it sends, decided from plain data),
// restore.go (running the restore, the full check and the re-creation of
// tables or of the database), stats.go (optimizer statistics after a
// restore), scan.go (the detection query the resets on a server share)
// and ddl.go (the server's DDL accounting).
//
// It imports accounts (ending a lease's sessions), binlog (the server's
// binary log), schema (the template's captured definition), instance-free
// SQL over database/sql, and the root package.
package strategies
