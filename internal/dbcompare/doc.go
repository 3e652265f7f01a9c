// Package dbcompare compares whole databases: every schema object's
// definition (definers compared one-to-one), every table's rows (CHECKSUM
// TABLE and row counts), every AUTO_INCREMENT counter, the tables'
// persistent optimizer statistics and what FULLTEXT searches of them
// return. Tests use it to prove that clones and resets equal their
// template.
//
// It imports schema (to list objects).
package dbcompare
