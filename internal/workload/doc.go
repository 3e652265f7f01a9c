// Package workload generates the standard schema of the product's bars: N
// InnoDB tables with auto-increment keys, a third of them with foreign keys
// (some ON DELETE CASCADE), 10 tables seeded with 100 rows, 2 views, 2
// triggers and 1 stored procedure; and the standard "test" that inserts into
// 5 tables and updates seeded rows.
//
// It imports migrations (the Source it returns).
package workload
