// Package templates says what a template is and builds one: it validates a
// request (name, migrations, seed), computes the content hash that
// identifies the template, and builds the template database on a server
// instance (create it, run the migrations and the seed, capture its
// definition for cloning).
//
// It is larger than most packages: besides builds from migrations and
// external builds (build.go) it holds the template cache (cache.go) and
// the portable images it stores (image.go), which are another way of
// building the same template and share its capture.
//
// Where templates are built and how their worker databases are pooled is
// the lease package's business; this package does the work on one
// instance. It imports migrations (running them), schema (capturing the
// result), accounts (the build's account), binlog (the XA transactions a
// build prepared), strategies (the instance's DDL accounting) and
// instance.
package templates
