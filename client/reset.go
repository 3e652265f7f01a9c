package client

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"
)

// leases maps each *sql.DB TestDB returned to its lease, for Reset.
var leases sync.Map // *sql.DB → leaseRef

type leaseRef struct {
	c  *Client
	id string
}

// Reset brings the database behind db, which TestDB returned, back to its
// template now, by the lease's strategy, so that a subtest starts from the
// template although its parent test's earlier subtests wrote:
//
//	db := client.TestDB(t, opts)
//	for _, tc := range cases {
//		t.Run(tc.name, func(t *testing.T) {
//			client.Reset(t, db)
//			// ...
//		})
//	}
//
// The reset ends the database's open connections; db opens new ones as
// needed (a *sql.Tx or *sql.Conn held across the call is broken). Subtests
// that share db must not run in parallel with each other. Any error fails
// the test.
func Reset(tb testing.TB, db *sql.DB) *ResetReport {
	tb.Helper()
	v, ok := leases.Load(db)
	if !ok {
		tb.Fatal("testdbd: Reset needs a *sql.DB that TestDB returned, whose test has not ended")
	}
	ref := v.(leaseRef)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := ref.c.ResetLease(ctx, ref.id, StrategyUnspecified)
	if err != nil {
		tb.Fatalf("testdbd: reset lease %s: %v", ref.id, err)
	}
	if rep.FallbackReason != "" {
		tb.Logf("testdbd: the reset did more than its strategy: %s (tables %s)", rep.FallbackReason, strings.Join(rep.TablesReset, ", "))
	}
	return rep
}
