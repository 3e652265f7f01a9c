package lease_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
)

// saysWhy checks that every way of asking about the ended lease id says
// why it ended (each of want) and what to do: Get (its state and ended
// reason), and the errors of Renew and Reset; Release returns its final
// state with the reason.
func saysWhy(t *testing.T, m *lease.Manager, id, state string, want ...string) {
	t.Helper()
	has := func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return strings.Contains(s, "acquire a new")
	}
	got, err := m.Get(id)
	if err != nil || got.State != state || !has(got.EndedReason) {
		t.Errorf("Get(%s) = state %q, ended_reason %q, %v; want %s, saying %q and what to do", id, got.State, got.EndedReason, err, state, want)
	}
	if _, err := m.Renew(id, 0); err == nil || !has(err.Error()) {
		t.Errorf("Renew(%s): %v; want an error saying %q and what to do", id, err, want)
	}
	if _, err := m.Reset(context.Background(), id, 0); err == nil || !has(err.Error()) {
		t.Errorf("Reset(%s): %v; want an error saying %q and what to do", id, err, want)
	}
	if got, err := m.Release(id); err != nil || got.State != state || !has(got.EndedReason) {
		t.Errorf("Release(%s) = state %q, ended_reason %q, %v", id, got.State, got.EndedReason, err)
	}
}

// TestLeasesLostInRestart: a daemon started again on the same lease record
// (the state directory's) says of each lease the previous one held that it
// ended in the restart, whether the previous daemon was killed (its record
// as it was at that moment) or shut down, instead of "no lease".
func TestLeasesLostInRestart(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "leases")
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2, LeaseRecord: record})
			e.ensure(t, "app", 2)
			held := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			gone := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			if _, err := e.m.Release(gone.ID); err != nil {
				t.Fatal(err)
			}

			// Killed: the next daemon reads the record as the killed one
			// left it.
			b, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			killed := filepath.Join(t.TempDir(), "leases")
			if err := os.WriteFile(killed, b, 0o600); err != nil {
				t.Fatal(err)
			}
			after := newEnv(t, p, 1, lease.Config{LeaseRecord: killed})
			saysWhy(t, after.m, held.ID, lease.LeaseFailed, "ended when the daemon restarted at", "killed")
			if _, err := after.m.Get(gone.ID); testdbd.ErrorCode(err) != testdbd.ENotFound {
				t.Errorf("a lease released before the kill: %v, want not found", err)
			}

			// Shut down: the next daemon says when.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := e.m.Close(ctx); err != nil {
				t.Fatal(err)
			}
			again := newEnv(t, p, 1, lease.Config{LeaseRecord: record})
			saysWhy(t, again.m, held.ID, lease.LeaseFailed, "ended when the daemon restarted at", "it had shut down at")
			// The record starts afresh: a second restart does not claim
			// the leases of the first.
			if b, _ := os.ReadFile(record); strings.Contains(string(b), held.ID) {
				t.Errorf("the restarted daemon's record still names %s: %q", held.ID, b)
			}
		})
	}
}

// TestEndedLeasesSayWhy: a lease that expired, or whose server was killed,
// says why and what to do through Get, Renew, Reset and Release. (Space:
// TestSpace.)
func TestEndedLeasesSayWhy(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			e := newEnv(t, p, 1, lease.Config{PoolSize: 2})
			e.ensure(t, "app", 2)
			expiring := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app", TTL: time.Second})
			held := e.acquire(t, lease.AcquireRequest{Strategy: testdbd.StrategySnapshot, Template: "app"})
			deadline := time.Now().Add(30 * time.Second)
			for {
				if got, _ := e.m.Get(expiring.ID); got.State == lease.LeaseExpired {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("a lease of 1 s did not expire within 30 s")
				}
				time.Sleep(20 * time.Millisecond)
			}
			saysWhy(t, e.m, expiring.ID, lease.LeaseExpired, "expired at", "TTL of 1s", "renew before the TTL runs out")
			victim := e.fleet.Members()[0]
			p.Kill(t, victim)
			deadline = time.Now().Add(30 * time.Second)
			for {
				if got, _ := e.m.Get(held.ID); got.State == lease.LeaseFailed {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the lease did not fail within 30 s of its server's death")
				}
				time.Sleep(20 * time.Millisecond)
			}
			how := "killed by signal 9" // p.Kill: kill -9 of a process or a container
			if p.Kind == "kubernetes" {
				how = "is being deleted, not by testdbd" // p.Kill deletes the pod
			}
			saysWhy(t, e.m, held.ID, lease.LeaseFailed, "server instance "+victim.ID()+" died", how)
		})
	}
}
