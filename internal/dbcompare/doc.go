// Package dbcompare compares whole databases: every schema object's
// definition, every table's rows (CHECKSUM TABLE) and every AUTO_INCREMENT
// counter. Tests use it to prove that clones and resets equal their template.
//
// It imports schema (to list objects) and the root package.
package dbcompare
