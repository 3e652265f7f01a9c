// Package schema captures a database's definition once (tables with their
// foreign keys and AUTO_INCREMENT counters, views in dependency order,
// triggers, routines and events, each with the sql_mode it was created
// with; row counts and checksums) and turns it into SQL: one batch that
// clones a worker database, the statement that copies one table's rows
// back, and the session settings both use. Diff compares two captures.
//
// It imports the root package and the standard library.
package schema
