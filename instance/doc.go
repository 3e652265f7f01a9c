// Package instance holds what every provider shares: the disposable-data
// server settings and reading them back from a running server, the
// administrative connection pools, the Lifecycle of a provider's server
// (its exit bookkeeping), the state-directory lock, and the Fleet that
// starts instances within a limit, watches them and reports their deaths.
//
// A provider (instance/native, instance/docker, instance/kubernetes)
// starts testdbd.Instance values; the Fleet wraps each in a Member with its
// admin pools.
//
// It imports the root package, the MySQL driver and golang.org/x/sys.
package instance
