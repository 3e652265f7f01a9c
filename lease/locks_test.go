package lease_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
)

// TestNamedLocksDieWithTheLease: GET_LOCK names are one namespace per
// server, and no privilege governs them, so a lease can take a name
// another lease's tests use. What it can do to the other is bounded: it
// cannot release or steal the other's lock, nor kill the session holding
// it (it can learn that session's id, IS_USED_LOCK); the other's wait is
// bounded by the timeout the other passed to GET_LOCK; and a lease's named
// locks go with its sessions, which testdbd ends at every reset, at
// release and at expiry.
func TestNamedLocksDieWithTheLease(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 3})
			e.ensure(t, "app", 3)
			a := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			b := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			if a.InstanceID != b.InstanceID {
				t.Skip("the leases are on different servers")
			}
			ctx := context.Background()
			conn := func(l lease.LeaseInfo) *sql.Conn {
				t.Helper()
				c, err := open(t, l).Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			getLock := func(c *sql.Conn, name string, timeout int) (got sql.NullInt64, took time.Duration) {
				t.Helper()
				start := time.Now()
				if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, timeout).Scan(&got); err != nil {
					t.Fatalf("GET_LOCK(%s, %d): %v", name, timeout, err)
				}
				return got, time.Since(start)
			}

			ac, bc := conn(a), conn(b)
			if got, _ := getLock(ac, "shared", 0); got.Int64 != 1 {
				t.Fatalf("lease A: GET_LOCK = %v", got)
			}
			var aID int64
			ac.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&aID)
			// What lease B can do about it.
			if got, _ := getLock(bc, "shared", 0); got.Int64 != 0 {
				t.Errorf("lease B took lease A's named lock: GET_LOCK = %v", got)
			}
			got, took := getLock(bc, "shared", 1)
			t.Logf("lease B's GET_LOCK('shared', 1) on lease A's lock: %v after %v", got, took.Round(time.Millisecond))
			if got.Int64 != 0 {
				t.Errorf("lease B's GET_LOCK with a timeout of 1 s: %v, want 0 (timed out)", got)
			}
			var holder sql.NullInt64
			bc.QueryRowContext(ctx, "SELECT IS_USED_LOCK('shared')").Scan(&holder)
			t.Logf("lease B sees IS_USED_LOCK('shared') = %v (lease A's session is %d)", holder, aID)
			var released sql.NullInt64
			if err := bc.QueryRowContext(ctx, "SELECT RELEASE_LOCK('shared')").Scan(&released); err != nil || released.Int64 != 0 {
				t.Errorf("lease B's RELEASE_LOCK of lease A's lock: %v, %v; want 0 (not its own)", released, err)
			}
			if _, err := bc.ExecContext(ctx, fmt.Sprintf("KILL %d", aID)); err == nil {
				t.Error("lease B killed lease A's session")
			} else {
				t.Logf("lease B's KILL of lease A's session: %v", err)
			}

			// Nor can it list the names in use (MySQL's performance_schema
			// shows them to those with SELECT on it; a lease has none).
			var names []string
			if rows, err := bc.QueryContext(ctx, "SELECT OBJECT_NAME FROM performance_schema.metadata_locks WHERE OBJECT_TYPE = 'USER LEVEL LOCK'"); err == nil {
				for rows.Next() {
					var n string
					rows.Scan(&n)
					names = append(names, n)
				}
				rows.Close()
				if len(names) > 0 {
					t.Errorf("lease B lists the named locks in use: %v", names)
				}
			} else {
				t.Logf("lease B's look at performance_schema.metadata_locks: %v", err)
			}

			// A reset of lease A ends its sessions, and its locks with them.
			if _, err := e.m.Reset(ctx, a.ID, 0); err != nil {
				t.Fatal(err)
			}
			if got, _ := getLock(bc, "shared", 0); got.Int64 != 1 {
				t.Errorf("lease B's GET_LOCK after lease A's reset: %v, want 1", got)
			}
			// A release of lease B, in the background, ends its sessions.
			if _, err := e.m.Release(b.ID); err != nil {
				t.Fatal(err)
			}
			if got, took := getLock(conn(a), "shared", 30); got.Int64 != 1 {
				t.Errorf("lease A's GET_LOCK after lease B's release: %v after %v, want 1", got, took)
			}
			// So does the expiry of a lease that holds one: a wait for it
			// ends with the holder's TTL.
			c := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", TTL: time.Second})
			if got, _ := getLock(conn(c), "expiring", 0); got.Int64 != 1 {
				t.Fatalf("lease C: GET_LOCK = %v", got)
			}
			got, took = getLock(conn(a), "expiring", 60)
			t.Logf("lease A's GET_LOCK('expiring', 60) on the lock of lease C (TTL 1 s): %v after %v", got, took.Round(time.Millisecond))
			if got.Int64 != 1 {
				t.Errorf("lease A's GET_LOCK after lease C expired: %v, want 1", got)
			}
		})
	}
}
