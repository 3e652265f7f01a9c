// Package stats records what the daemon's resets and acquires cost: latency
// percentiles over a window of recent samples for GetStats, and the
// Prometheus collectors behind /metrics. It knows nothing of leases or
// templates beyond their names. Safe for concurrent use.
package stats
