module github.com/testdbd/testdbd/client

// The oldest Go this package compiles with: it uses range over integers
// and cmp.Or (Go 1.22). The driver version below asks for less (Go 1.18).
go 1.22

require github.com/go-sql-driver/mysql v1.8.1

require filippo.io/edwards25519 v1.1.1 // indirect
