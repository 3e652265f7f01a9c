// Package migrations reads, validates and hashes the files a template is
// built from, and runs them: goose SQL migrations (from a directory on the
// daemon's host or uploaded), then the seed SQL. The hash covers everything
// that shapes a template (file names and contents, the seed, the engine and
// its version, testdbd's version), so equal hashes mean equal templates.
//
// It imports the root package, goose and the MySQL driver.
package migrations
