// Package random makes the identifiers and secrets testdbd hands out:
// instance and lease ids, MySQL user names and passwords. Everything comes
// from crypto/rand. It imports only the standard library.
package random
